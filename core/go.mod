module github.com/seamdata/seam/core

go 1.26.8

replace github.com/seamdata/seam/proto => ../proto

require (
	cel.dev/cel-go v0.33.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/seamdata/seam/proto v0.0.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
