// Package validate holds `seam validate`: data files checked against a
// contract offline, with the checks the gate runs.
package validate

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/admission"
	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Report is the outcome of `seam validate`, also its JSON form.
type Report struct {
	Contract    string   `json:"contract"`
	Files       []string `json:"files"`
	Records     int64    `json:"records"`
	Passed      int64    `json:"passed"`
	Quarantined int64    `json:"quarantined"`
	Alerted     int64    `json:"alerted"`
	Batches     int64    `json:"batches"`
	// Verdict is the gate's verdict on the files as one partition, sealed
	// whole: PASSED, PASSED_WITH_ALERTS or BLOCKED, from the checks that
	// need no history (drift and match rate are judged at the gate only).
	Verdict string `json:"verdict"`
	// Decided are the checks that decided the verdict, with the
	// partition's figures.
	Decided   []Decision       `json:"decided,omitempty"`
	Blocked   bool             `json:"blocked"`
	Checks    []CheckTotal     `json:"checks"`
	Failures  []FailureExample `json:"first_failures"`
	Seconds   float64          `json:"seconds"`
	PerSecond float64          `json:"records_per_second"`
}

// CheckTotal is one check's failures over every file.
type CheckTotal struct {
	Name           string `json:"name"`
	Rule           string `json:"rule"`
	Policy         string `json:"policy"`
	Failures       int64  `json:"failures"`
	BlockedBatches int64  `json:"blocked_batches"`
}

// Decision is one check that decided the partition's verdict.
type Decision struct {
	Check    string `json:"check"`
	Policy   string `json:"policy"`
	Failures int64  `json:"failures"`
	Rows     int64  `json:"rows"`
	Exceeded bool   `json:"exceeded"`
	Message  string `json:"message"`
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
	var contractFile, canonicalFile, format string
	var batchSize, firstN, workers int
	return g.Local("validate --contract FILE DATA...", cobra.MinimumNArgs(1), client.Help{
		Short: "Validate NDJSON, CSV or JSON files against a contract, offline",
		Long: `Validate data files against a contract with the same compiled checks the
gate runs, without a server: what a source team runs in its own CI next to
'seam contract check'. Files are read streaming, in batches of --batch-size
records cut as 'seam gate ingest' cuts them, on every core; the batch size
changes no verdict (key uniqueness is checked within a batch here, across
the whole partition at the gate).

The contract itself is checked as the registry checks it before it may be
registered: valid fields, checks that compile, and, given the canonical
model with --canonical, a mapping the adapter can run.

The files are judged as one partition, as the gate judges a partition
when it is sealed however it was chunked: the verdict PASSED,
PASSED_WITH_ALERTS or BLOCKED, from BLOCK thresholds over all the
records, ALERT checks and row-count bounds.

Prints failures per check and the first failing records with their line
numbers. Exits 1 when the partition would be BLOCKED,
2 when a file cannot be read, 3 when the contract is invalid or a file is
not valid input (empty, no CSV header). Drift and match rate need the
trailing partitions and identifier tables, and are judged only at the
gate.`,
		Example: `  seam validate --contract shop_orders_v1.yaml orders-2026-11-29.ndjson
  seam validate --contract shop_orders_v2.yaml --canonical commerce_order.yaml day.ndjson
  seam validate --contract shop_orders_v1.yaml export.csv -o json`,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&contractFile, "contract", "", "contract YAML to validate against")
			fs.StringVar(&canonicalFile, "canonical", "", "canonical model YAML the contract's mapping fills, to check the mapping as the registry does")
			fs.StringVar(&format, "format", "", "ndjson, csv or json (default: from each file's extension)")
			fs.IntVar(&batchSize, "batch-size", 1000, "records per batch, as the gate receives them")
			fs.IntVar(&firstN, "first", 10, "how many failing records to show")
			fs.IntVar(&workers, "workers", 0, "parallel validators (default: one per core)")
			g.AddOutputFlag(fs)
		},
	}, func(cmd *cobra.Command, args []string) error {
		if contractFile == "" {
			return exit.Usagef("give the contract with --contract FILE")
		}
		if batchSize < 1 || firstN < 0 {
			return exit.Usagef("--batch-size must be at least 1 and --first not negative")
		}
		c, err := contract.LoadFile(contractFile)
		if err != nil {
			return exit.Invalidf("%w", err)
		}
		models, err := canonicalModels(canonicalFile)
		if err != nil {
			return err
		}
		if probs := admission.Check(c, models); len(probs) > 0 {
			return exit.Invalidf("contract %s is invalid: %w", contractFile, probs)
		}
		if models == nil && c.GetMapping().GetCanonical() != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: the mapping to %s was not checked; give its canonical model with --canonical FILE\n", c.GetMapping().GetCanonical())
		}
		plan, err := check.Compile(c)
		if err != nil {
			return exit.Invalidf("contract %s: %w", contractFile, err)
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
			return exit.Failf("the partition would be BLOCKED: %s", blockedText(v.report.Decided))
		}
		return nil
	})
}

// canonicalModels returns the models --canonical names (nil without it).
func canonicalModels(path string) (admission.Models, error) {
	if path == "" {
		return nil, nil
	}
	m, err := contract.LoadCanonicalModelFile(path)
	if err != nil {
		return nil, exit.Invalidf("%w", err)
	}
	return func(name string, version int32) (*contractv1.CanonicalModel, int32, bool) {
		if name != m.GetName() {
			return nil, 0, false
		}
		// The file is the version the mapping pins, or the latest.
		return m, max(version, 1), true
	}, nil
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
	figures check.Figures
}

// chunkResult is what validating one chunk contributes to the report.
type chunkResult struct {
	records, passed, quarantined, alerted int64
	failures                              []int64 // per check
	blocked                               []bool  // per check
	examples                              []FailureExample
	figures                               check.Figures
}

func (v *validator) file(cmd *cobra.Command, path string, format recordv1.Format) error {
	f, info, err := client.OpenFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	v.report.Files = append(v.report.Files, path)
	bar := output.Progress(cmd.ErrOrStderr(), info.Size(), "validating "+filepath.Base(path))
	defer bar.Finish()

	// The same splitter as seam gate ingest: the same batches.
	sp := record.NewSplitter(f, format, v.batch)
	// next is the file's next chunk, or false at its end or at an error
	// (kept in splitErr).
	var splitErr error
	next := func(first bool) (record.Chunk, bool) {
		c, err := sp.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				splitErr = err
			}
			return c, false
		}
		if first && format == recordv1.Format_FORMAT_CSV {
			if splitErr = v.checkHeader(sp.Header()); splitErr != nil {
				return c, false
			}
		}
		_ = bar.Add64(c.Bytes)
		return c, true
	}
	before := v.report.Records
	if v.workers == 1 {
		// One worker splits and validates on this goroutine: handing each
		// chunk to another goroutine and its result back woke a sleeping
		// thread twice a chunk, which cost more than the splitting it
		// overlapped.
		dec := record.NewDecoder(v.plan.Schema(), record.Options{})
		for first := true; ; first = false {
			c, ok := next(first)
			if !ok {
				break
			}
			v.merge(v.take(dec, sp, format, c, path))
		}
	} else {
		v.pipeline(sp, format, path, next)
	}
	if splitErr != nil {
		return exit.Invalidf("%s: %w", path, splitErr)
	}
	if v.report.Records == before {
		return exit.Invalidf("%s holds no records", path)
	}
	return nil
}

// pipeline validates the chunks next gives on v.workers goroutines while
// the next ones are split, and merges their results here.
func (v *validator) pipeline(sp *record.Splitter, format recordv1.Format, path string, next func(first bool) (record.Chunk, bool)) {
	chunks := make(chan record.Chunk, v.workers*2)
	results := make(chan chunkResult, v.workers*2)
	var wg sync.WaitGroup
	for range v.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := record.NewDecoder(v.plan.Schema(), record.Options{})
			for c := range chunks {
				results <- v.take(dec, sp, format, c, path)
			}
		}()
	}
	go func() {
		for first := true; ; first = false {
			c, ok := next(first)
			if !ok {
				break
			}
			chunks <- c
		}
		close(chunks)
		wg.Wait()
		close(results)
	}()
	for r := range results {
		v.merge(r)
	}
}

// take validates chunk c with dec and gives the chunk's memory back: the
// result holds copies, and the chunk and its records are done with.
func (v *validator) take(dec *record.Decoder, sp *record.Splitter, format recordv1.Format, c record.Chunk, path string) chunkResult {
	r := v.validate(dec, format, c, path)
	dec.Recycle()
	sp.Recycle(c.Data)
	return r
}

// checkHeader refuses a CSV whose first row names no field of the
// contract: a file without a header row, whose first record would
// otherwise be taken for one and every other record fail.
func (v *validator) checkHeader(header []byte) error {
	cells, err := csv.NewReader(bytes.NewReader(header)).Read()
	if err != nil {
		return fmt.Errorf("CSV header: %w", err)
	}
	for _, c := range cells {
		if _, ok := v.plan.Schema().Lookup(strings.TrimSpace(c)); ok {
			return nil
		}
	}
	return fmt.Errorf("line 1 (%s) names no field of the contract; a CSV file needs a header row naming its columns", strings.TrimSpace(string(header)))
}

// validate decodes and checks one chunk.
func (v *validator) validate(dec *record.Decoder, format recordv1.Format, c record.Chunk, path string) chunkResult {
	checks := v.plan.Checks()
	r := chunkResult{failures: make([]int64, len(checks)), blocked: make([]bool, len(checks))}
	batch, err := dec.Decode(format, c.Data, c.FirstOffset)
	if err != nil {
		// The records of a JSON document could not be told apart past a
		// point: report it as one failure where it happened.
		r.examples = append(r.examples, FailureExample{File: path, Line: c.FirstOffset, Check: "record.decode", Code: "MALFORMED", Message: err.Error()})
		r.quarantined++
		r.records++
		if batch == nil {
			return r
		}
	}
	res := v.plan.Validate(batch.Records)
	// r keeps copies of what it needs: the result's memory serves the
	// next chunk.
	defer v.plan.Recycle(res)
	r.figures.AddBatch(v.plan, res)
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
	v.figures.Stats.Merge(r.figures.Stats)
	for name, f := range r.figures.Failures {
		v.figures.AddFailures(name, f.Count, f.Samples)
	}
	v.report.Records += r.records
	v.report.Passed += r.passed
	v.report.Quarantined += r.quarantined
	v.report.Alerted += r.alerted
	for i := range r.failures {
		v.totals[i].Failures += r.failures[i]
		if r.blocked[i] {
			v.totals[i].BlockedBatches++
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
	// No baseline: a file has no trailing partitions. The match rate
	// needs idmap's tables, so it is the gate's to judge.
	j := v.plan.Judge(v.figures, nil, check.JudgeOptions{})
	verdict := check.Passed
	for _, o := range j.Outcomes {
		if !o.Exceeded || o.Kind == "match_rate" {
			continue
		}
		switch o.Policy {
		case contractv1.Policy_POLICY_BLOCK:
			verdict = max(verdict, check.Blocked)
		case contractv1.Policy_POLICY_ALERT:
			verdict = max(verdict, check.PassedWithAlerts)
		}
		v.report.Decided = append(v.report.Decided, Decision{Check: o.Name, Policy: strings.TrimPrefix(o.Policy.String(), "POLICY_"),
			Failures: o.Failures, Rows: o.Rows, Exceeded: o.Exceeded, Message: o.Message})
	}
	v.report.Verdict = map[check.Verdict]string{check.Passed: "PASSED", check.PassedWithAlerts: "PASSED_WITH_ALERTS", check.Blocked: "BLOCKED"}[verdict]
	v.report.Blocked = verdict == check.Blocked
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
		t := output.NewTable(w, "CHECK", "RULE", "POLICY", "FAILURES")
		for _, c := range r.Checks {
			t.Row(c.Name, c.Rule, c.Policy, fmt.Sprint(c.Failures))
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
	fmt.Fprintf(w, "\npartition verdict: %s (%.0f records/s)\n", r.Verdict, r.PerSecond)
	for _, d := range r.Decided {
		fmt.Fprintf(w, "  %s\n", d.Message)
	}
	return nil
}

// blockedText names the BLOCK checks over their thresholds.
func blockedText(ds []Decision) string {
	var s []string
	for _, d := range ds {
		if d.Policy == "BLOCK" {
			s = append(s, d.Message)
		}
	}
	return strings.Join(s, "; ")
}
