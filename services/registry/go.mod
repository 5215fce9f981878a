module github.com/seamdata/seam/services/registry

go 1.26.8
