package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/command/bench"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam bench runs every benchmark against its own instance and reports a
// positive rate for each; tiny settings keep it fast.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := seamtest.RunTo(context.Background(), []string{"bench", "--duration", "100ms", "--table-size", "5000", "--batch", "200", "-o", "json"}, &out, &errOut)
	if code != exit.OK {
		t.Fatalf("seam bench: exit %d\n%s", code, errOut.String())
	}
	var rows []bench.Result
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("seam bench -o json: %v\n%s", err, out.String())
	}
	want := []string{"validate (in-process, 1 core)", "adapt (in-process, 1 core)", "translate (gRPC, 2k-id batches)", "adapt (gRPC)", "ingest (gRPC, gate+adapter+idmap)"}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, r := range rows {
		if r.Name != want[i] || r.RecordsPerSec <= 0 || r.Records <= 0 {
			t.Errorf("row %d = %+v, want %q with a positive rate", i, r, want[i])
		}
	}

	for _, args := range [][]string{{"bench", "--duration", "0s"}, {"bench", "--batch", "0"}, {"bench", "-o", "yaml"}} {
		if code := seamtest.RunTo(context.Background(), args, &out, &errOut); code != exit.Usage {
			t.Errorf("seam %v: exit %d, want 2", args, code)
		}
	}
}
