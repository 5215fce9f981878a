module github.com/seamdata/seam/services/gate

go 1.26.8
