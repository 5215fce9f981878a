module github.com/seamdata/seam/services/idmap

go 1.26.8
