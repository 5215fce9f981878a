// Package dryrun runs a proposed contract version's migration on a sample
// of the subject's quarantined records and says how many would pass,
// without changing anything: the gate gives the sample (ListQuarantine),
// the adapter judges it (Preview with the proposed contract, its checks,
// mapping and identifier translations through idmap). It is what
// `seam contract check` reports beside the registry's verdict.
package dryrun

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/record"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Sample sizes.
const (
	// DefaultSample is how many held records a dry run tries by default.
	DefaultSample = 200
	// MaxSample is the most one dry run tries: one adapter Preview's limit.
	MaxSample = 1000
	// maxExamples bounds the records a Result shows as examples.
	maxExamples = 5
)

// Options choose the sample.
type Options struct {
	// Sample is how many held records to try (0: DefaultSample; at most
	// MaxSample).
	Sample int
	// PartitionFrom and PartitionTo bound the partitions sampled. Left
	// empty, the sample is the newest partitions holding Sample records:
	// where an incident's records are.
	PartitionFrom, PartitionTo string
}

// Example is one sampled record that would stay held, with why.
type Example struct {
	ID        string `json:"id"`
	Partition string `json:"partition"`
	Position  int64  `json:"position"`
	Code      string `json:"code"`
	Field     string `json:"field,omitempty"`
	Check     string `json:"check,omitempty"`
	Message   string `json:"message"`
}

// Result is what the dry run found.
type Result struct {
	Subject string `json:"subject"`
	// PartitionFrom and PartitionTo are the window sampled.
	PartitionFrom string `json:"partition_from,omitempty"`
	PartitionTo   string `json:"partition_to,omitempty"`
	// Held is how many records the window holds; Sampled how many were
	// tried and Passed how many of those the proposed version would pass.
	Held    int64 `json:"held"`
	Sampled int   `json:"sampled"`
	Passed  int   `json:"passed"`
	// Remain counts the sampled records that would stay held, by the code
	// of their first error (ID_UNMAPPED, PATTERN_MISMATCH…), or
	// MIGRATION_NOT_READY when idmap cannot run the translation at all.
	Remain map[string]int `json:"remain,omitempty"`
	// Problems are compile problems of the proposed mapping; the records
	// then ran through the fields that compiled.
	Problems []string  `json:"problems,omitempty"`
	Examples []Example `json:"examples,omitempty"`
}

// PassRate is Passed / Sampled (0 for an empty sample).
func (r *Result) PassRate() float64 {
	if r.Sampled == 0 {
		return 0
	}
	return float64(r.Passed) / float64(r.Sampled)
}

// Run samples the held records of proposed's subject and runs them through
// the proposed version. A subject with nothing held gives an empty Result.
func Run(ctx context.Context, gate gatev1.GateServiceClient, adapter adapterv1.AdapterServiceClient, proposed *contractv1.Contract, o Options) (*Result, error) {
	subject := proposed.GetSubject()
	if subject == "" {
		return nil, fmt.Errorf("dry run: the proposed contract names no subject")
	}
	n := cmp.Or(o.Sample, DefaultSample)
	if n < 0 || n > MaxSample {
		return nil, fmt.Errorf("dry run: sample of %d records; give 1 to %d", n, MaxSample)
	}
	res := &Result{Subject: subject, PartitionFrom: o.PartitionFrom, PartitionTo: o.PartitionTo, Remain: map[string]int{}}
	filter := &gatev1.QuarantineFilter{Subject: subject, PartitionFrom: o.PartitionFrom, PartitionTo: o.PartitionTo,
		State: gatev1.QuarantineState_QUARANTINE_STATE_HELD}
	stats, err := gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("dry run: count the held records of %s: %w", subject, err)
	}
	res.Held = stats.GetTotal()
	if res.Held == 0 {
		return res, nil
	}
	if o.PartitionFrom == "" {
		filter.PartitionFrom = newestWindow(stats.GetByPartition(), n)
		res.PartitionFrom = filter.PartitionFrom
	}
	list, err := gate.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: filter, PageSize: int32(n)})
	if err != nil {
		return nil, fmt.Errorf("dry run: sample the held records of %s: %w", subject, err)
	}
	sample := list.GetRecords()
	if res.PartitionTo == "" && len(sample) > 0 {
		res.PartitionTo = sample[len(sample)-1].GetPartition()
	}
	for _, g := range group(sample, res) {
		resp, err := adapter.Preview(ctx, &adapterv1.PreviewRequest{Proposed: proposed, Validate: true,
			Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: g.Format, Data: g.Data}}}})
		if status.Code(err) == codes.FailedPrecondition {
			// The migration cannot run at all (idmap has no route): every
			// record of the batch would stay, for that reason.
			for _, row := range g.Rows {
				res.Sampled++
				res.stay(sample[row], &recordv1.RecordError{Message: status.Convert(err).Message()}, "MIGRATION_NOT_READY")
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("dry run: run %d held records of %s through the proposed version: %w", len(g.Rows), subject, err)
		}
		for _, p := range resp.GetProblems() {
			if !slices.Contains(res.Problems, p) {
				res.Problems = append(res.Problems, p)
			}
		}
		if len(resp.GetRecords()) != len(g.Rows) {
			return nil, fmt.Errorf("dry run: the adapter answered %d records for %d sent", len(resp.GetRecords()), len(g.Rows))
		}
		for i, pr := range resp.GetRecords() {
			q := sample[g.Rows[i]]
			res.Sampled++
			if pr.GetPassed() {
				res.Passed++
				continue
			}
			e := firstError(pr)
			res.stay(q, e, codeName(e.GetCode()))
		}
	}
	return res, nil
}

// newestWindow returns the first partition of the newest partitions that
// together hold at least n records.
func newestWindow(byPartition []*gatev1.QuarantineCount, n int) string {
	parts := slices.Clone(byPartition)
	slices.SortFunc(parts, func(a, b *gatev1.QuarantineCount) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	var sum int64
	for i := len(parts) - 1; i >= 0; i-- {
		sum += parts[i].GetCount()
		if sum >= int64(n) {
			return parts[i].GetKey()
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return parts[0].GetKey()
}

// firstError is why a previewed record fails: a record error, else the
// first failing field.
func firstError(pr *adapterv1.PreviewRecord) *recordv1.RecordError {
	if len(pr.GetErrors()) > 0 {
		return pr.GetErrors()[0]
	}
	for _, f := range pr.GetFields() {
		if f.GetError() != nil {
			return f.GetError()
		}
	}
	return &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_CHECK_FAILED, Message: "the adapter produced no canonical record and gave no reason"}
}

func codeName(c recordv1.ErrorCode) string { return strings.TrimPrefix(c.String(), "ERROR_CODE_") }

// stay counts a sampled record that would stay held, under code.
func (r *Result) stay(q *gatev1.QuarantinedRecord, e *recordv1.RecordError, code string) {
	r.Remain[code]++
	if len(r.Examples) < maxExamples {
		r.Examples = append(r.Examples, Example{ID: q.GetId(), Partition: q.GetPartition(), Position: q.GetPosition(),
			Code: code, Field: e.GetField(), Check: e.GetCheck(), Message: e.GetMessage()})
	}
}

// group puts the sample into batches as the gate's replay does (by format,
// and CSV header). A record whose held bytes are not what its format says
// stays, as MALFORMED.
func group(sample []*gatev1.QuarantinedRecord, res *Result) []*record.HeldBatch {
	var g record.HeldBatches
	for i, q := range sample {
		if err := g.Add(i, record.Held{ID: q.GetId(), Position: q.GetPosition(), Format: q.GetFormat(), Raw: q.GetRaw()}); err != nil {
			res.Sampled++
			res.stay(q, &recordv1.RecordError{Message: err.Error()}, codeName(recordv1.ErrorCode_ERROR_CODE_MALFORMED))
		}
	}
	return g.Batches
}
