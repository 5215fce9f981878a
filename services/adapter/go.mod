module github.com/seamdata/seam/services/adapter

go 1.26.8
