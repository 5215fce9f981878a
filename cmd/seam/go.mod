module github.com/seamdata/seam/cmd/seam

go 1.26.8
