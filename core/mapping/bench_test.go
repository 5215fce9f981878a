package mapping_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

const benchBatch = 1000

// cpuTime is the process's user and system CPU time. Benchmarks report it
// per record beside ns/op because wall time on a shared machine counts the
// time other processes hold the core.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// measure reports CPU time and allocations per record (allocs/op rounds
// to whole numbers, and a batch's few allocations are a fraction of one
// per record).
func measure(b *testing.B) func() {
	start, allocs := cpuTime(b), mallocs()
	return func() {
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/record")
		b.ReportMetric(float64(mallocs()-allocs)/float64(b.N), "allocs/record")
	}
}

// mapJSON maps recs with p and appends each canonical record's JSON to
// out, as the adapter does with a batch, then hands the batch's buffers
// back.
func mapJSON(b *testing.B, p *mapping.Plan, recs []record.Record, out []byte) []byte {
	mapped := p.Map(recs)
	defer mapped.Release()
	res, err := mapped.Results()
	if err != nil {
		b.Fatal(err)
	}
	for j := range res {
		out = p.AppendJSON(out, res[j].Values)
	}
	return out
}

// BenchmarkMapOrders applies the shop.orders v1 plan to 1,000 decoded
// 12-field orders and encodes each canonical record as JSON: the adapter's
// work per batch after decoding. ns/op and allocs/op are per record.
func BenchmarkMapOrders(b *testing.B) {
	p := compileOrders(b, examples.ShopOrdersV1(), nil)
	batch, err := record.NewDecoder(p.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_JSON, recordtest.OrdersJSON(benchBatch), 0)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, 0, 300*benchBatch)
	b.ReportAllocs()
	b.ResetTimer()
	defer measure(b)()
	for i := 0; i < b.N; i += benchBatch {
		out = mapJSON(b, p, batch.Records, out[:0])
	}
}

// BenchmarkAdaptOrdersJSON is the whole in-process path for a JSON batch of
// 1,000 orders: decode, map, derive record ids, encode. ns/op and
// allocs/op are per record.
func BenchmarkAdaptOrdersJSON(b *testing.B) {
	p := compileOrders(b, examples.ShopOrdersV1(), nil)
	data := recordtest.OrdersJSON(benchBatch)
	out := make([]byte, 0, 300*benchBatch)
	b.SetBytes(int64(len(data) / benchBatch))
	b.ReportAllocs()
	b.ResetTimer()
	defer measure(b)()
	// One decoder serves batch after batch, as the adapter service pools
	// them, and every mapped batch hands its buffers back.
	dec := record.NewDecoder(p.Schema(), record.Options{})
	for i := 0; i < b.N; i += benchBatch {
		batch, err := dec.Decode(recordv1.Format_FORMAT_JSON, data, 0)
		if err != nil {
			b.Fatal(err)
		}
		out = mapJSON(b, p, batch.Records, out[:0])
		dec.Recycle()
	}
}
