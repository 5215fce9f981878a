module github.com/seamdata/seam/services/idmap

go 1.26.8

replace (
	github.com/seamdata/seam/core => ../../core
	github.com/seamdata/seam/platform => ../../platform
	github.com/seamdata/seam/proto => ../../proto
)

require (
	github.com/seamdata/seam/core v0.0.0 // indirect
	github.com/seamdata/seam/platform v0.0.0 // indirect
	github.com/seamdata/seam/proto v0.0.0 // indirect
)
