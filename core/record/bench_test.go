package record_test

import (
	"testing"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// benchDecode decodes batches of 1,000 orders and reports per-record cost;
// allocs/record counts the batch's slabs spread over its records.
func benchDecode(b *testing.B, format recordv1.Format, data []byte) {
	s := recordtest.OrderSchema()
	d := record.NewDecoder(s, record.Options{})
	const n = 1000
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		batch, err := d.Decode(format, data, 0)
		if err != nil || len(batch.Records) != n {
			b.Fatalf("Decode: %d records, %v", len(batch.Records), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkDecodeNDJSON(b *testing.B) {
	benchDecode(b, recordv1.Format_FORMAT_NDJSON, recordtest.OrdersNDJSON(1000))
}
func BenchmarkDecodeJSON(b *testing.B) {
	benchDecode(b, recordv1.Format_FORMAT_JSON, recordtest.OrdersJSON(1000))
}

func BenchmarkDecodeCSV(b *testing.B) {
	s := recordtest.OrderSchema()
	src := decode(b, s, recordv1.Format_FORMAT_NDJSON, recordtest.OrdersNDJSON(1000), 0)
	benchDecode(b, recordv1.Format_FORMAT_CSV, recordtest.CSV(s, src))
}

func BenchmarkAppendJSON(b *testing.B) {
	s := recordtest.OrderSchema()
	batch := decode(b, s, recordv1.Format_FORMAT_NDJSON, recordtest.OrdersNDJSON(1000), 0)
	b.ReportAllocs()
	buf := make([]byte, 0, 512<<10)
	for b.Loop() {
		buf = buf[:0]
		for _, r := range batch.Records {
			buf = record.AppendJSON(buf, s, r.Values)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch.Records)), "ns/record")
}
