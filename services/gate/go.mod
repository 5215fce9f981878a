module github.com/seamdata/seam/services/gate

go 1.26.8

replace (
	github.com/seamdata/seam/core => ../../core
	github.com/seamdata/seam/platform => ../../platform
	github.com/seamdata/seam/proto => ../../proto
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/seamdata/seam/platform v0.0.0 // indirect
	github.com/seamdata/seam/proto v0.0.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
