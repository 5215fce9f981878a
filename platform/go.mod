module github.com/seamdata/seam/platform

go 1.26.8
