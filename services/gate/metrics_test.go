package gate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/clocktest"
	"github.com/seamdata/seam/platform/storage/storagetest"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
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

// The contract age measures the registry, not the traffic: an idle
// subject's age stays low while the registry answers, even an hour
// after its last batch, and grows once the registry is stopped.
func TestContractAgeWithoutTraffic(t *testing.T) {
	t.Parallel()
	p := knownPeers(t)
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
	clocktest.Eventually(t, "the idle subject's contract to be confirmed", func() bool {
		age, ok := point(t, reader, "seam.gate.contract.age", map[string]string{"subject": "shop.orders"})
		return ok && age < 1
	})

	reg.down.Store(true)
	p.clock.Add(10 * time.Minute)
	time.Sleep(100 * time.Millisecond) // ten rounds of confirmation, all failing
	if age, ok := point(t, reader, "seam.gate.contract.age", map[string]string{"subject": "shop.orders"}); !ok || age < 600 {
		t.Errorf("contract age 10 minutes after the registry stopped = %v s (reported %t), want at least 600", age, ok)
	}
	reg.down.Store(false)
	clocktest.Eventually(t, "the age to drop once the registry is back", func() bool {
		age, ok := point(t, reader, "seam.gate.contract.age", map[string]string{"subject": "shop.orders"})
		return ok && age < 1
	})
}

// point is the value of a metric's data point whose attributes include
// want, and whether there is one.
func point(t *testing.T, reader *sdkmetric.ManualReader, name string, want map[string]string) (float64, bool) {
	t.Helper()
	match := func(set attribute.Set) bool {
		for k, v := range want {
			if got, ok := set.Value(attribute.Key(k)); !ok || got.String() != v {
				return false
			}
		}
		return true
	}
	switch d := telemetrytest.Metric(t, reader, name).(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			if match(dp.Attributes) {
				return float64(dp.Value), true
			}
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			if match(dp.Attributes) {
				return float64(dp.Value), true
			}
		}
	case metricdata.Gauge[float64]:
		for _, dp := range d.DataPoints {
			if match(dp.Attributes) {
				return dp.Value, true
			}
		}
	}
	return 0, false
}

// What an operator alerts on is a metric: a blocked partition's verdict,
// its match rate, the record it holds, the containment of its source and
// the events waiting for the registry.
func TestOperatorGauges(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), func(c *Config) {
		c.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	})
	req := payIngest(payDay(3), "b-1", paymentsDay{day: 3, n: 100, missing: 1}.lines())
	req.Seal = true
	resp := mustIngest(t, e, req)
	subj := map[string]string{"subject": "bank.payments"}

	if v, ok := point(t, reader, "seam.gate.partitions", map[string]string{"subject": "bank.payments", "verdict": "BLOCKED"}); !ok || v != 1 {
		t.Errorf("seam.gate.partitions{verdict=BLOCKED} = %v (reported %t), want 1", v, ok)
	}
	want := resp.GetPartition().GetMatchRate()
	if v, ok := point(t, reader, "seam.gate.match.rate", map[string]string{"subject": "bank.payments", "field": "account_ref"}); !ok || v != want || v <= 0 || v >= 1 {
		t.Errorf("seam.gate.match.rate{field=account_ref} = %v (reported %t), want the partition's %v", v, ok, want)
	}
	if v, ok := point(t, reader, "seam.gate.quarantine.held", map[string]string{"subject": "bank.payments", "reason": "MISSING_REQUIRED"}); !ok || v != 1 {
		v2, _ := point(t, reader, "seam.gate.quarantine.held", subj)
		t.Errorf("seam.gate.quarantine.held{reason=MISSING_REQUIRED} = %v (reported %t; any reason: %v), want 1", v, ok, v2)
	}
	if _, ok := point(t, reader, "seam.gate.events.pending", nil); !ok {
		t.Error("seam.gate.events.pending not reported")
	}
	clocktest.Eventually(t, "the blocked alert's event to be delivered", func() bool {
		v, ok := point(t, reader, "seam.gate.events.pending", nil)
		age, _ := point(t, reader, "seam.gate.events.pending.age", nil)
		return ok && v == 0 && age == 0
	})

	if _, err := e.as("operator").Contain(context.Background(), &gatev1.ContainRequest{Subject: "bank.payments", Reason: "INC-7"}); err != nil {
		t.Fatalf("Contain: %v", err)
	}
	if v, ok := point(t, reader, "seam.gate.contained", subj); !ok || v != 1 {
		t.Errorf("seam.gate.contained = %v (reported %t) after Contain, want 1", v, ok)
	}
}
