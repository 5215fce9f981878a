package validate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/record/recordtest"
)

// BenchmarkValidateFile is `seam validate --workers 1` of a 100,000-record
// NDJSON file of orders, the path seam bench's validate-cli row holds to
// json.Valid; with -memprofile and -cpuprofile it shows where a record's
// time and memory go.
func BenchmarkValidateFile(b *testing.B) {
	const n = 100_000
	var data []byte
	for i := range n {
		data = recordtest.OrderJSON(data, i)
		data = append(data, '\n')
	}
	file := filepath.Join(b.TempDir(), "orders.ndjson")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	contract := seamtest.ExampleFile(b, "shop_orders_v1.yaml")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var out, errOut bytes.Buffer
		if code := seamtest.RunTo(context.Background(), []string{"validate", "--workers", "1", "--contract", contract, "-o", "json", file}, &out, &errOut); code != exit.OK {
			b.Fatalf("seam validate exited %d: %s", code, errOut.String())
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
