package gate

import (
	"context"
	"fmt"
	"math"
	runtimemetrics "runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

const benchBatch = 1000

func recordsPerSecond(b *testing.B, n int) float64 {
	rps := float64(b.N) * float64(n) / b.Elapsed().Seconds()
	if start, ok := cpuAtStart[b.Name()]; ok {
		// The whole process's CPU: the gate, its peers and the callers all
		// run in it. Steadier than wall time on a busy machine.
		b.ReportMetric(float64((processCPU()-start).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/record")
		// What a batch costs the scheduler: the goroutines it starts, and
		// how long a goroutine made runnable waits for a core, on average.
		// A hand-off to an idle core waits for the core to wake, which on
		// some virtual machines is a large part of a batch's wall time;
		// these count the hand-offs rather than guess at them.
		now := schedSample()
		was := schedAtStart[b.Name()]
		b.ReportMetric(float64(now.created-was.created)/float64(b.N), "goroutines/batch")
		if n := now.waits - was.waits; n > 0 {
			b.ReportMetric((now.waited-was.waited)*1e6/n, "runnable-µs/wait")
		}
	}
	b.ReportMetric(rps, "records/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
	return rps
}

// cpuAtStart is the process's CPU time when a benchmark began timing, by
// its name (startCPU).
var cpuAtStart = map[string]time.Duration{}

// startCPU notes the process's CPU time at the start of b's timing, for
// recordsPerSecond.
func startCPU(b *testing.B) {
	cpuAtStart[b.Name()] = processCPU()
	schedAtStart[b.Name()] = schedSample()
}

// schedAtStart is the scheduler's counters when a benchmark began timing.
var schedAtStart = map[string]schedCounters{}

type schedCounters struct {
	created float64 // goroutines started
	waits   float64 // runnable spells the runtime sampled
	waited  float64 // their seconds, estimated
}

// schedSample reads the runtime's count of goroutines started and its
// histogram of the time goroutines wait runnable (which samples some of
// the waits), summed at each bucket's middle (its lower bound for the
// last, unbounded one).
func schedSample() schedCounters {
	s := []runtimemetrics.Sample{{Name: "/sched/goroutines-created:goroutines"}, {Name: "/sched/latencies:seconds"}}
	runtimemetrics.Read(s)
	var c schedCounters
	if s[0].Value.Kind() == runtimemetrics.KindUint64 {
		c.created = float64(s[0].Value.Uint64())
	}
	if s[1].Value.Kind() == runtimemetrics.KindFloat64Histogram {
		h := s[1].Value.Float64Histogram()
		for i, n := range h.Counts {
			lo, hi := h.Buckets[i], h.Buckets[i+1]
			switch {
			case math.IsInf(lo, -1):
				lo = 0
			case math.IsInf(hi, 1):
				hi = lo
			}
			c.waits += float64(n)
			c.waited += float64(n) * (lo + hi) / 2
		}
	}
	return c
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkValidateOrders is the gate's in-process structural validation
// of the 12-field shop.orders record: decode a 1,000-record NDJSON batch
// and run every compiled check on it.
func BenchmarkValidateOrders(b *testing.B) {
	ct := examples.ShopOrdersV1()
	plan, err := check.Compile(ct)
	if err != nil {
		b.Fatal(err)
	}
	data := orders{first: 1, n: benchBatch, amount: 85, unknown: 50}.ndjson()
	b.Run("decode+validate", func(b *testing.B) {
		dec := record.NewDecoder(plan.Schema(), record.Options{})
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			batch, err := dec.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
			if err != nil {
				b.Fatal(err)
			}
			if res := plan.Validate(batch.Records); res.Blocked {
				b.Fatal("blocked")
			}
		}
		recordsPerSecond(b, benchBatch)
	})
	// decoded is the batch the checks below run on, decoded afresh for each.
	decoded := func(b *testing.B) *record.Batch {
		batch, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
		if err != nil {
			b.Fatal(err)
		}
		return batch
	}
	b.Run("validate", func(b *testing.B) {
		batch := decoded(b)
		b.ReportAllocs()
		for b.Loop() {
			plan.Validate(batch.Records)
		}
		recordsPerSecond(b, benchBatch)
	})
	// profile is the value-shape count the gate adds to each batch for
	// unannounced-change detection (shape.go).
	b.Run("profile", func(b *testing.B) {
		batch := decoded(b)
		b.ReportAllocs()
		for b.Loop() {
			profile(plan, batch, func(int) bool { return true })
		}
		recordsPerSecond(b, benchBatch)
	})
}

// noop is a gate that answers every batch without looking at it: the
// floor of what a gRPC hop costs for the same messages.
type noopGate struct {
	gatev1.UnimplementedGateServiceServer
}

func (noopGate) Ingest(_ context.Context, req *gatev1.IngestRequest) (*gatev1.IngestResponse, error) {
	return &gatev1.IngestResponse{Summary: &gatev1.BatchSummary{Received: int64(len(req.GetBatch().GetRaw().GetData())), Status: gatev1.BatchStatus_BATCH_STATUS_ACCEPTED}}, nil
}

// BenchmarkIngestGRPC sends 1,000-record batches over loopback gRPC to
// the gate (which calls the adapter and idmap over loopback gRPC and
// commits each batch to its SQLite store) — once with the gatetest
// stand-ins, once with the real adapter and idmap services — and in the
// same run the same batches to a no-op gRPC service. Responses are
// summary-only, as a pipeline that only needs counts would ask, except in
// gate-real-peers-records, which asks for the canonical records too.
func BenchmarkIngestGRPC(b *testing.B) {
	e := startGate(b, knownPeers(b), storagetest.SQLiteURL(b), func(c *Config) { c.ContractRefresh = DefaultContractRefresh })
	data := orders{first: 1, n: benchBatch, amount: 85, unknown: 50}.ndjson()
	batch := &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: data}}}
	noopAddr := serve(b, nil, func(s *grpc.Server) { gatev1.RegisterGateServiceServer(s, noopGate{}) })
	// The same gate path through the real adapter and idmap services.
	rp := newPeers(b)
	importPairs(b, useRealPeers(b, rp))
	real := startGate(b, rp, storagetest.SQLiteURL(b), func(c *Config) { c.ContractRefresh = DefaultContractRefresh })
	clients := map[string]gatev1.GateServiceClient{"gate": e.as("pipeline"), "gate-real-peers": real.as("pipeline"),
		"noop": gatev1.NewGateServiceClient(dial(b, noopAddr, ""))}
	rates := map[string]float64{}
	run := 0
	// gate-real-peers-records asks for the canonical records back, packed,
	// as seam gate ingest --records does.
	clients["gate-real-peers-records"] = clients["gate-real-peers"]
	for _, name := range []string{"noop", "gate", "gate-real-peers", "gate-real-peers-records"} {
		b.Run(name, func(b *testing.B) {
			run++
			c := clients[name]
			records := name == "gate-real-peers-records"
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			i := 0
			startCPU(b)
			for b.Loop() {
				i++
				// One partition per batch: the same records twice in one
				// partition would be duplicates.
				req := &gatev1.IngestRequest{Subject: "shop.orders", Partition: fmt.Sprintf("bench-%d-%d", run, i), SummaryOnly: !records, Answer: gatev1.IngestAnswer_INGEST_ANSWER_PACKED,
					Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprintf("bench-%d-%d", run, i)}, Batch: batch}
				resp, err := c.Ingest(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if name != "noop" && resp.GetSummary().GetAccepted() != benchBatch {
					b.Fatalf("summary = %v", resp.GetSummary())
				}
				if records && len(resp.GetPacked().GetJsonEnds()) != benchBatch {
					b.Fatalf("%d canonical records for %d accepted", len(resp.GetPacked().GetJsonEnds()), benchBatch)
				}
			}
			rates[name] = recordsPerSecond(b, benchBatch)
		})
	}
	// Two callers at once through the real peers, each on its own
	// partitions: what a second pipeline adds on two cores.
	b.Run("gate-real-peers-2-callers", func(b *testing.B) {
		run++
		c := clients["gate-real-peers"]
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		b.SetParallelism(1) // GOMAXPROCS callers: two on two cores
		var next atomic.Int64
		startCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				req := &gatev1.IngestRequest{Subject: "shop.orders", Partition: fmt.Sprintf("bench-%d-%d", run, i), SummaryOnly: true, Answer: gatev1.IngestAnswer_INGEST_ANSWER_PACKED,
					Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprintf("bench-%d-%d", run, i)}, Batch: batch}
				resp, err := c.Ingest(context.Background(), req)
				if err != nil {
					b.Error(err)
					return
				}
				if resp.GetSummary().GetAccepted() != benchBatch {
					b.Errorf("summary = %v", resp.GetSummary())
					return
				}
			}
		})
		rates["gate-real-peers-2-callers"] = recordsPerSecond(b, benchBatch)
	})
	if rates["gate-real-peers"] > 0 && rates["gate-real-peers-2-callers"] > 0 {
		b.Logf("two callers against one through the real peers: %.2fx", rates["gate-real-peers-2-callers"]/rates["gate-real-peers"])
	}
	if rates["noop"] > 0 {
		b.Logf("throughput relative to the no-op service: gate %.3f, gate with the real adapter and idmap %.3f", rates["gate"]/rates["noop"], rates["gate-real-peers"]/rates["noop"])
	}
}
