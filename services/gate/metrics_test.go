package gate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/storage/storagetest"
)

// stoppable is a connection to a peer that can be stopped: while down,
// every call fails with Unavailable, as calls to a stopped process do.
type stoppable struct {
	grpc.ClientConnInterface
	down atomic.Bool
}

func (c *stoppable) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.down.Load() {
		return status.Error(codes.Unavailable, "connection refused")
	}
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func (c *stoppable) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if c.down.Load() {
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return c.ClientConnInterface.NewStream(ctx, desc, method, opts...)
}

// gaugeValue is the value of a float gauge for one subject, and whether
// it was reported.
func gaugeValue(t *testing.T, reader *sdkmetric.ManualReader, name, subject string) (float64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			g, ok := m.Data.(metricdata.Gauge[float64])
			if !ok || m.Name != name {
				continue
			}
			for _, dp := range g.DataPoints {
				if v, ok := dp.Attributes.Value("subject"); ok && v.AsString() == subject {
					return dp.Value, true
				}
			}
		}
	}
	return 0, false
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The contract age measures the registry, not the traffic: an idle
// subject's age stays low while the registry answers, even an hour
// after its last batch, and grows once the registry is stopped.
func TestContractAgeWithoutTraffic(t *testing.T) {
	t.Parallel()
	p := newPeers(t)
	p.knowCustomers()
	reader := sdkmetric.NewManualReader()
	reg := &stoppable{ClientConnInterface: dial(t, p.regAddr, p.tokens["seam-services"])}
	e := startGate(t, p, storagetest.SQLiteURL(t), func(c *Config) {
		c.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
		c.Registry = reg
		c.ContractCheck = 10 * time.Millisecond
	})
	if _, err := e.as("pipeline").Ingest(context.Background(), ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 10, amount: 85})); err != nil {
		t.Fatalf("Ingest: %v", err)
	}

	p.clock.Add(time.Hour) // an hour without a batch
	eventually(t, "the idle subject's contract to be confirmed", func() bool {
		age, ok := gaugeValue(t, reader, "seam.gate.contract.age", "shop.orders")
		return ok && age < 1
	})

	reg.down.Store(true)
	p.clock.Add(10 * time.Minute)
	time.Sleep(100 * time.Millisecond) // ten rounds of confirmation, all failing
	if age, ok := gaugeValue(t, reader, "seam.gate.contract.age", "shop.orders"); !ok || age < 600 {
		t.Errorf("contract age 10 minutes after the registry stopped = %v s (reported %t), want at least 600", age, ok)
	}
	reg.down.Store(false)
	eventually(t, "the age to drop once the registry is back", func() bool {
		age, ok := gaugeValue(t, reader, "seam.gate.contract.age", "shop.orders")
		return ok && age < 1
	})
}
