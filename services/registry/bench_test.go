package registry

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/examples"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// benchModel fills a read model with subjects subjects of three versions
// each (the third active), the shape of a busy registry.
func benchModel(b *testing.B, subjects int) (m *readModel, middle string) {
	b.Helper()
	m, err := newReadModel(nil)
	if err != nil {
		b.Fatalf("newReadModel: %v", err)
	}
	c := examples.ShopOrdersV1()
	l := newLoad()
	for i := range subjects {
		name := fmt.Sprintf("source%04d.orders", i)
		l.subjectState[name] = &registryv1.Subject{Name: name, LatestVersion: 3, ActiveVersion: 3}
		for v := int32(1); v <= 3; v++ {
			l.versionState[name] = append(l.versionState[name], &registryv1.ContractVersion{
				Subject: name, Version: v, Contract: c, Status: registryv1.VersionStatus_VERSION_STATUS_ACTIVE, EffectiveTime: timestamppb.Now()})
		}
	}
	if err := m.apply(l, 1); err != nil {
		b.Fatalf("apply: %v", err)
	}
	return m, fmt.Sprintf("source%04d.orders", subjects/2)
}

// BenchmarkActiveVersion reads the active version of one subject among
// 1,000 from the read model, as the gate does per batch. Target: < 20 µs.
func BenchmarkActiveVersion(b *testing.B) {
	m, name := benchModel(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		v, err := activeVersionOf(m.snapshot(), nil, name)
		if err != nil || v.GetVersion() != 3 {
			b.Fatalf("activeVersionOf = v%d, %v; want v3", v.GetVersion(), err)
		}
	}
}

// BenchmarkGetContractHandler is the same read through the gRPC handler
// (without the transport): lookup, NotFound checks and response.
func BenchmarkGetContractHandler(b *testing.B) {
	m, name := benchModel(b, 1000)
	s := &Server{model: m}
	req := &registryv1.GetContractRequest{Subject: name}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.GetContract(ctx, req)
		if err != nil || resp.GetVersion().GetVersion() != 3 {
			b.Fatalf("GetContract = %v, %v; want v3", resp, err)
		}
	}
}
