package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// seam bench runs every benchmark against its own instance and reports a
// positive rate for each; tiny settings keep it fast.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bench", "--duration", "100ms", "--table-size", "5000", "--batch", "200", "-o", "json"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("seam bench: exit %d\n%s", code, errOut.String())
	}
	var rows []benchResult
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
		if code := run(context.Background(), args, &out, &errOut); code != exitUsage {
			t.Errorf("seam %v: exit %d, want 2", args, code)
		}
	}
}
