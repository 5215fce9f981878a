package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/command/bench"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// seam bench runs every benchmark against its own instance, reports a
// positive rate for each, and relates the rows as the ingest issue states
// its targets; tiny settings keep it fast.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	var out, errOut bytes.Buffer
	code := seamtest.RunTo(context.Background(), []string{"bench", "--duration", "100ms", "--table-size", "5000", "--batch", "200",
		"--file-records", "3000", "--concurrency", "2", "--cpuprofile", prof, "-o", "json"}, &out, &errOut)
	if code != exit.OK {
		t.Fatalf("seam bench: exit %d\n%s", code, errOut.String())
	}
	var rows []bench.Result
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("seam bench -o json: %v\n%s", err, out.String())
	}
	type want struct {
		name, ratioOf string
		target        float64
	}
	wants := []want{
		{bench.RowValidate, "", 0},
		{bench.RowAdapt, "", 0},
		{bench.RowChain, "", 0},
		{bench.RowValidateCLI, bench.RowJSONValid, 1.4},
		{bench.RowJSONValid, "", 0},
		{"idmap index of 5000 pairs (in-process)", "", 0},
		{"translate (gRPC, 2k-id batches)", "", 0},
		{"idmap import of 1 pair into 5000 (gRPC)", "", 0},
		{"idmap import of 1,000 pairs into 5000 (gRPC)", "", 0},
		{bench.RowAdaptGRPC, "", 0},
		{bench.RowNoop, "", 0},
		{bench.RowIngestSummary, bench.RowChain, 0.5},
		{bench.RowIngestRecords, bench.RowChain, 0.35},
		{"ingest summary-only (gRPC, 2 callers)", bench.RowIngestSummary, 1.6},
		{bench.RowIngestStream, "", 0},
		{"seam gate ingest (3000-record file)", bench.RowChain, 0.65},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, r := range rows {
		w := wants[i]
		if r.Name != w.name || r.RecordsPerSec <= 0 || r.Records <= 0 || r.RatioOf != w.ratioOf || r.Target != w.target {
			t.Errorf("row %d = %+v, want %q with a positive rate, ratio of %q, target %v", i, r, w.name, w.ratioOf, w.target)
		}
		if w.ratioOf != "" && (r.Ratio <= 0 || !strings.Contains(r.Note, "target")) {
			t.Errorf("row %q: ratio %v, note %q; want a positive ratio and its target", r.Name, r.Ratio, r.Note)
		}
		// The compared rows and what they are compared with report the
		// median of --rounds rounds (3 by default); the file ingest runs once.
		if compared := w.ratioOf != "" || w.name == bench.RowChain || w.name == bench.RowJSONValid || w.name == bench.RowNoop || w.name == bench.RowIngestStream; compared != (r.Rounds == 3) && !strings.HasPrefix(w.name, "seam gate ingest") {
			t.Errorf("row %q ran %d rounds; want 3 for a row measured against others, none reported otherwise", r.Name, r.Rounds)
		}
	}
	byName := map[string]int{}
	for i, r := range rows {
		byName[r.Name] = i
	}
	if noop := rows[byName[bench.RowNoop]]; !strings.Contains(noop.Note, "gRPC alone; "+bench.RowIngestSummary+" runs at ") {
		t.Errorf("no-op row note %q, want the share of it ingest runs at", noop.Note)
	}
	if stream := rows[byName[bench.RowIngestStream]]; !strings.HasSuffix(stream.Note, "% of "+bench.RowChain) {
		t.Errorf("stream row note %q, want its share of the chain", stream.Note)
	}
	if cli := rows[len(rows)-1]; !strings.HasSuffix(cli.Note, "% of "+bench.RowIngestSummary) {
		t.Errorf("seam gate ingest row note %q, want its share of the unary call's row after its target", cli.Note)
	}
	if rows[3].CPUSeconds <= 0 || rows[4].CPUSeconds <= 0 {
		t.Errorf("validate rows report CPU %v and %v seconds, want both positive", rows[3].CPUSeconds, rows[4].CPUSeconds)
	}
	if info, err := os.Stat(prof); err != nil || info.Size() == 0 {
		t.Errorf("--cpuprofile wrote nothing: %v", err)
	}

	for _, args := range [][]string{{"bench", "--duration", "0s"}, {"bench", "--batch", "0"}, {"bench", "--file-records", "0"}, {"bench", "--rounds", "0"}, {"bench", "-o", "yaml"}} {
		if code := seamtest.RunTo(context.Background(), args, &out, &errOut); code != exit.Usage {
			t.Errorf("seam %v: exit %d, want 2", args, code)
		}
	}
}

// JSONValidLines counts the lines that are JSON, skipping empty ones.
func TestJSONValidLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lines.ndjson")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n\n{\"a\":\n[1,2]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := bench.JSONValidLines(path)
	if err != nil || got != 2 {
		t.Fatalf("JSONValidLines = %d, %v; want 2", got, err)
	}
}

// --store runs the instance on PostgreSQL (skipped without
// SEAM_TEST_POSTGRES_URL): the ingest rows then measure its commits.
func TestBenchOnPostgres(t *testing.T) {
	t.Parallel()
	url := storagetest.PostgresURL(t)
	var out, errOut bytes.Buffer
	code := seamtest.RunTo(context.Background(), []string{"bench", "--only", "chain,ingest", "--duration", "100ms", "--batch", "100", "--table-size", "100",
		"--store", url, "-o", "json"}, &out, &errOut)
	if code != exit.OK {
		t.Fatalf("seam bench --store postgres: exit %d\n%s", code, errOut.String())
	}
	var rows []bench.Result
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("seam bench -o json: %v\n%s", err, out.String())
	}
	if len(rows) != 6 || rows[1].Name != bench.RowNoop || rows[2].Name != bench.RowIngestSummary || rows[2].RecordsPerSec <= 0 || rows[2].RatioOf != bench.RowChain {
		t.Fatalf("rows = %+v, want the chain, the no-op service and four ingest rows measured on PostgreSQL", rows)
	}
}
