// Package validate holds `seam validate`: data files checked against a
// contract offline, with the checks the gate runs.
package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Report is the outcome of `seam validate`, also its JSON form.
type Report struct {
	Contract    string           `json:"contract"`
	Files       []string         `json:"files"`
	Records     int64            `json:"records"`
	Passed      int64            `json:"passed"`
	Quarantined int64            `json:"quarantined"`
	Alerted     int64            `json:"alerted"`
	Batches     int64            `json:"batches"`
	Blocked     bool             `json:"blocked"`
	Checks      []CheckTotal     `json:"checks"`
	Failures    []FailureExample `json:"first_failures"`
	Seconds     float64          `json:"seconds"`
	PerSecond   float64          `json:"records_per_second"`
}

// CheckTotal is one check's failures over every file.
type CheckTotal struct {
	Name           string `json:"name"`
	Rule           string `json:"rule"`
	Policy         string `json:"policy"`
	Failures       int64  `json:"failures"`
	BlockedBatches int64  `json:"blocked_batches"`
}

// FailureExample is one failing record, named by file and line.
type FailureExample struct {
	File    string `json:"file"`
	Line    int64  `json:"line"`
	Check   string `json:"check"`
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// New returns `seam validate`.
func New(g *client.Globals) *cobra.Command {
	var contractFile, format string
	var batchSize, firstN, workers int
	cmd := &cobra.Command{
		Use:   "validate --contract FILE DATA...",
		Short: "Validate NDJSON, CSV or JSON files against a contract, offline",
		Long: `Validate data files against a contract with the same compiled checks the
gate runs, without a server: what a source team runs in its own CI next to
'seam contract check'. Files are read streaming, in batches of --batch-size
records (the batches 'seam gate ingest' sends, so per-batch thresholds and
key uniqueness mean the same as at the gate), on every core.

Prints failures per check and the first failing records with their line
numbers. Exits 1 when a BLOCK check fails (the gate would refuse a batch),
2 when a file cannot be read. Statistical checks (drift, match rate) need a
partition baseline and run only at the gate.`,
		Example: `  seam validate --contract shop_orders_v1.yaml orders-2026-11-29.ndjson
  seam validate --contract shop_orders_v1.yaml export.csv -o json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.ValidateOutput(); err != nil {
				return err
			}
			if contractFile == "" {
				return exit.Usagef("give the contract with --contract FILE")
			}
			if batchSize < 1 || firstN < 0 {
				return exit.Usagef("--batch-size must be at least 1 and --first not negative")
			}
			c, err := contract.LoadFile(contractFile)
			if err != nil {
				return exit.Failf("%w", err)
			}
			if probs := contract.Validate(c); len(probs) > 0 {
				return exit.Failf("contract %s is invalid: %w", contractFile, probs)
			}
			plan, err := check.Compile(c)
			if err != nil {
				return exit.Failf("contract %s: %w", contractFile, err)
			}
			if workers <= 0 {
				workers = runtime.GOMAXPROCS(0)
			}
			v := &validator{plan: plan, batch: batchSize, first: firstN, workers: workers, report: Report{Contract: contractFile}}
			start := time.Now()
			for _, path := range args {
				f, err := client.FileFormat(path, format)
				if err != nil {
					return err
				}
				if err := v.file(cmd, path, f); err != nil {
					return err
				}
			}
			v.finish(time.Since(start))
			if g.JSON() {
				if err := output.Value(cmd.OutOrStdout(), v.report); err != nil {
					return err
				}
			} else if err := printValidate(cmd.OutOrStdout(), &v.report); err != nil {
				return err
			}
			if v.report.Blocked {
				return exit.Failf("a BLOCK check failed: the gate would refuse the batches counted above")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&contractFile, "contract", "", "contract YAML to validate against")
	cmd.Flags().StringVar(&format, "format", "", "ndjson, csv or json (default: from each file's extension)")
	cmd.Flags().IntVar(&batchSize, "batch-size", 1000, "records per batch, as the gate receives them")
	cmd.Flags().IntVar(&firstN, "first", 10, "how many failing records to show")
	cmd.Flags().IntVar(&workers, "workers", 0, "parallel validators (default: one per core)")
	return cmd
}

// validator validates files batch by batch on several goroutines, keeping
// only counts and the first failures: memory does not grow with the file.
type validator struct {
	plan    *check.Plan
	batch   int
	first   int
	workers int
	report  Report
	totals  []CheckTotal
}

// chunk is one batch of raw records and where its first one starts.
type chunk struct {
	data        []byte
	firstOffset int64
}

// chunkResult is what validating one chunk contributes to the report.
type chunkResult struct {
	records, passed, quarantined, alerted int64
	failures                              []int64 // per check
	blocked                               []bool  // per check
	examples                              []FailureExample
}

func (v *validator) file(cmd *cobra.Command, path string, format recordv1.Format) error {
	f, err := os.Open(path)
	if err != nil {
		return exit.Usagef("%w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return exit.Usagef("%w", err)
	}
	v.report.Files = append(v.report.Files, path)
	bar := output.Progress(cmd.ErrOrStderr(), info.Size(), "validating "+filepath.Base(path))
	defer bar.Finish()
	in := io.TeeReader(f, bar)

	chunks := make(chan chunk, v.workers*2)
	results := make(chan chunkResult, v.workers*2)
	var wg sync.WaitGroup
	for range v.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := record.NewDecoder(v.plan.Schema(), record.Options{})
			for c := range chunks {
				results <- v.validate(dec, format, c, path)
				// The result holds copies; the chunk's records are done with.
				dec.Recycle()
			}
		}()
	}
	var splitErr error
	go func() {
		splitErr = split(in, format, v.batch, chunks)
		close(chunks)
		wg.Wait()
		close(results)
	}()
	for r := range results {
		v.merge(r)
	}
	if splitErr != nil {
		return exit.Usagef("%s: %w", path, splitErr)
	}
	return nil
}

// validate decodes and checks one chunk.
func (v *validator) validate(dec *record.Decoder, format recordv1.Format, c chunk, path string) chunkResult {
	checks := v.plan.Checks()
	r := chunkResult{failures: make([]int64, len(checks)), blocked: make([]bool, len(checks))}
	batch, err := dec.Decode(format, c.data, c.firstOffset)
	if err != nil {
		// The records of a JSON document could not be told apart past a
		// point: report it as one failure where it happened.
		r.examples = append(r.examples, FailureExample{File: path, Line: c.firstOffset, Check: "record.decode", Code: "MALFORMED", Message: err.Error()})
		r.quarantined++
		r.records++
		if batch == nil {
			return r
		}
	}
	res := v.plan.Validate(batch.Records)
	for i, cr := range res.Checks {
		r.failures[i] = cr.Failures
		r.blocked[i] = cr.Blocked
	}
	for i, rr := range res.Records {
		r.records++
		switch {
		case rr.Quarantined:
			r.quarantined++
		case rr.Alerted:
			r.alerted++
			r.passed++
		default:
			r.passed++
		}
		if len(rr.Failures) > 0 && len(r.examples) < v.first {
			f := rr.Failures[0]
			name := "record.decode"
			if f.Check >= 0 && f.Check < len(checks) {
				name = checks[f.Check].Name
			}
			r.examples = append(r.examples, FailureExample{
				File: path, Line: batch.Records[i].Position, Check: name,
				Code: strings.TrimPrefix(f.Code.String(), "ERROR_CODE_"), Field: f.Field, Message: f.Message,
			})
		}
	}
	return r
}

func (v *validator) merge(r chunkResult) {
	checks := v.plan.Checks()
	if v.totals == nil {
		v.totals = make([]CheckTotal, len(checks))
		for i, c := range checks {
			v.totals[i] = CheckTotal{Name: c.Name, Rule: c.Rule, Policy: strings.TrimPrefix(c.Policy.String(), "POLICY_")}
		}
	}
	v.report.Batches++
	v.report.Records += r.records
	v.report.Passed += r.passed
	v.report.Quarantined += r.quarantined
	v.report.Alerted += r.alerted
	for i := range r.failures {
		v.totals[i].Failures += r.failures[i]
		if r.blocked[i] {
			v.totals[i].BlockedBatches++
			v.report.Blocked = true
		}
	}
	// Keep the earliest failures whatever order chunks finish in.
	v.report.Failures = append(v.report.Failures, r.examples...)
	sort.SliceStable(v.report.Failures, func(i, j int) bool {
		a, b := v.report.Failures[i], v.report.Failures[j]
		if a.File != b.File {
			return fileIndex(v.report.Files, a.File) < fileIndex(v.report.Files, b.File)
		}
		return a.Line < b.Line
	})
	if len(v.report.Failures) > v.first {
		v.report.Failures = v.report.Failures[:v.first]
	}
}

func fileIndex(files []string, f string) int {
	for i, x := range files {
		if x == f {
			return i
		}
	}
	return len(files)
}

func (v *validator) finish(d time.Duration) {
	for _, t := range v.totals {
		if t.Failures > 0 || t.BlockedBatches > 0 {
			v.report.Checks = append(v.report.Checks, t)
		}
	}
	v.report.Seconds = d.Seconds()
	if d > 0 {
		v.report.PerSecond = float64(v.report.Records) / d.Seconds()
	}
}

func printValidate(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "%d records in %d batches: %d passed (%d with alerts), %d would be quarantined\n",
		r.Records, r.Batches, r.Passed, r.Alerted, r.Quarantined)
	if len(r.Checks) > 0 {
		fmt.Fprintln(w)
		t := output.NewTable(w, "CHECK", "RULE", "POLICY", "FAILURES", "BLOCKED BATCHES")
		for _, c := range r.Checks {
			t.Row(c.Name, c.Rule, c.Policy, fmt.Sprint(c.Failures), fmt.Sprint(c.BlockedBatches))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(r.Failures) > 0 {
		fmt.Fprintln(w, "\nfirst failures:")
		t := output.NewTable(w, "FILE:LINE", "CHECK", "FIELD", "MESSAGE")
		for _, f := range r.Failures {
			t.Row(fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line), f.Check, output.OrDash(f.Field), f.Message)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	verdict := "no BLOCK check failed"
	if r.Blocked {
		verdict = "BLOCKED: a BLOCK check failed"
	}
	fmt.Fprintf(w, "\n%s (%.0f records/s)\n", verdict, r.PerSecond)
	return nil
}

// split cuts r into chunks of n records. NDJSON splits at line ends; CSV
// at record ends outside quotes, with the header row repeated at the head
// of every chunk; JSON is one document and one chunk.
func split(r io.Reader, format recordv1.Format, n int, out chan<- chunk) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if format == recordv1.Format_FORMAT_JSON {
		data, err := io.ReadAll(br)
		if err != nil {
			return err
		}
		out <- chunk{data: data}
		return nil
	}
	csv := format == recordv1.Format_FORMAT_CSV
	var header []byte
	line := int64(0) // lines read so far
	if csv {
		h, lines, err := readRecord(br, true)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(h) == 0 {
			return nil
		}
		header = h
		line += lines
	}
	for {
		var buf bytes.Buffer
		buf.Write(header)
		start := line + 1 // line of the chunk's first record
		count := 0
		var err error
		for count < n {
			var rec []byte
			var lines int64
			rec, lines, err = readRecord(br, csv)
			if len(rec) > 0 {
				buf.Write(rec)
				line += lines
				count++
			}
			if err != nil {
				break
			}
		}
		if count > 0 {
			// Positions count from the chunk's own first line: the header
			// (CSV) is one extra line in front.
			first := start - 1
			if csv {
				first = start - 2
			}
			out <- chunk{data: buf.Bytes(), firstOffset: first}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readRecord reads one record with its line break: one line, or for CSV
// as many lines as a quoted field spans. It returns how many lines it read.
func readRecord(br *bufio.Reader, csv bool) ([]byte, int64, error) {
	var rec []byte
	var lines int64
	inQuote := false
	for {
		part, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			rec = append(rec, part...)
			if csv {
				inQuote = quoteState(part, inQuote)
			}
			continue
		}
		rec = append(rec, part...)
		if len(part) > 0 {
			lines++
		}
		if csv {
			inQuote = quoteState(part, inQuote)
		}
		if err != nil {
			return rec, lines, err
		}
		if !inQuote {
			return rec, lines, nil
		}
	}
}

// quoteState flips the quoted state at each double quote; an escaped quote
// ("") flips it twice.
func quoteState(b []byte, in bool) bool {
	for _, c := range b {
		if c == '"' {
			in = !in
		}
	}
	return in
}
