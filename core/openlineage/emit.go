package openlineage

import (
	"cmp"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/core/lexical"
)

// Jobs and datasets of the events the gate emits (docs/openlineage.md):
//
//   - job namespace: EmitterConfig.Namespace ("seam" by default); job name
//     "<subject>.ingest" (one run per batch), "<subject>.seal" (one run per
//     sealed partition) or "<subject>.replay" (one run per replay);
//   - input dataset: the subject, in namespace "seam" under its own name,
//     or the dataset its contract's labels openlineage.namespace and
//     openlineage.name bind it to (the same binding RecordLineage reads);
//   - output dataset: the canonical model, in namespace "seam".
//
// Every run is a START event and a COMPLETE (or FAIL) event, as the spec
// asks. Run ids are derived from what identifies the run (subject,
// partition and batch id; the seal's generation; the replay id), so a
// retried batch reports the same run.
const (
	JobIngest = "ingest"
	JobSeal   = "seal"
	JobReplay = "replay"
)

// Facet schema URLs, the versions in the spec corpus Seam is tested against.
const (
	facetBase          = "https://openlineage.io/spec/facets/"
	assertionsURL      = facetBase + "1-1-0/DataQualityAssertionsDatasetFacet.json#/$defs/DataQualityAssertionsDatasetFacet"
	metricsURL         = facetBase + "1-0-3/DataQualityMetricsInputDatasetFacet.json#/$defs/DataQualityMetricsInputDatasetFacet"
	outputStatsURL     = facetBase + "1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"
	datasetVersionURL  = facetBase + "1-0-1/DatasetVersionDatasetFacet.json#/$defs/DatasetVersionDatasetFacet"
	schemaFacetURL     = facetBase + "1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
	nominalTimeURL     = facetBase + "1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet"
	processingURL      = facetBase + "1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet"
	jobTypeURL         = facetBase + "2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet"
	errorMessageURL    = facetBase + "1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
	seamRunFacetURL    = "https://github.com/seamdata/seam/blob/main/docs/openlineage.md#the-seam-run-facet"
	defaultProducer    = "https://github.com/seamdata/seam"
	defaultJobNamspace = "seam"
)

// Labels of a contract that bind its subject to an OpenLineage dataset.
const (
	LabelNamespace = "openlineage.namespace"
	LabelName      = "openlineage.name"
)

// CheckResult is one check's outcome over a batch, a partition or a
// replay, as the gate judged it.
type CheckResult struct {
	// Name is the check's name ("customer_id.type", "aov_drift").
	Name string
	// Rule is its rule ("type(customer_id, INT64)").
	Rule string
	// Kind is the rule's kind: required, not_null, type, pattern, enum,
	// range, length, unique, cel, additional_fields, row_count, null_rate,
	// mean_drift, match_rate… It becomes the assertion's classification.
	Kind string
	// Field is the checked field's path; empty for a check of the whole
	// record or dataset.
	Field string
	// Policy is BLOCK, QUARANTINE or ALERT; it decides the severity.
	Policy string
	// Passed is false when the check found issues.
	Passed bool
	// Failures counts the records that failed a record-level check.
	Failures int64
	// Expected and Actual are a statistical check's bound and what it
	// observed, as text ("min 0.9", "0.02"); empty when not given.
	Expected, Actual string
}

// ColumnMetrics are one field's metrics; nil pointers are left out.
type ColumnMetrics struct {
	// NullCount counts absent or null values.
	NullCount int64
	// Count counts the values present.
	Count         *int64
	DistinctCount *int64
	Sum, Min, Max *float64
}

// Metrics describe the records a run read.
type Metrics struct {
	RowCount int64
	// Bytes is their size; 0 leaves it out.
	Bytes int64
	// Columns are keyed by field path.
	Columns map[string]ColumnMetrics
}

// SchemaField is one field of a contract or canonical model, for the
// dataset's schema facet.
type SchemaField struct {
	Name, Type, Description string
	Fields                  []SchemaField
}

// Source names the subject a run reads and the canonical model it writes.
type Source struct {
	Subject         string
	ContractVersion int64
	// Labels are the contract's labels; openlineage.namespace and
	// openlineage.name, when both set, name the input dataset.
	Labels map[string]string
	// Fields describe the subject's records; empty leaves the schema
	// facet out.
	Fields []SchemaField
	// Canonical is the canonical model the subject maps into; empty
	// when the contract has no mapping (no output dataset).
	Canonical        string
	CanonicalVersion int64
}

// Judged is what the run of an ingest and the run of a seal both report:
// the records of one partition of a source, and how the gate judged them.
type Judged struct {
	Source
	Partition string
	// Blocked makes the run FAIL; Reason says why.
	Blocked                         bool
	Reason                          string
	Received, Accepted, Quarantined int64
	Checks                          []CheckResult
	Metrics                         Metrics
	Started, Finished               time.Time
}

// Batch is one batch the gate ingested.
type Batch struct {
	Judged
	BatchID string
	// Status is the batch's verdict: ACCEPTED, PARTIAL, QUARANTINED or
	// BLOCKED.
	Status string
}

// Seal is a partition the gate sealed and judged.
type Seal struct {
	Judged
	// Generation counts the sealings of the partition from 1; a partition
	// sealed again (after a replacement) is a new run.
	Generation int64
	// Verdict is the partition's verdict, as the gate names it.
	Verdict string
}

// Replay is a replay of quarantined records.
type Replay struct {
	Source
	// ReplayID identifies the replay; a UUID is used as the run id as it
	// is.
	ReplayID                   string
	PartitionFrom, PartitionTo string
	Held, Released, Remaining  int64
	// Rerun names the downstream consumers to rerun, in order.
	Rerun  []string
	Checks []CheckResult
	// Err, when set, makes the run FAIL with this message.
	Err               string
	Started, Finished time.Time
}

// Sink takes encoded events. Enqueue must not block; it reports whether
// the event was accepted (a full queue drops it).
type Sink interface {
	Enqueue(event []byte) bool
}

// EmitterConfig configures an Emitter.
type EmitterConfig struct {
	// Namespace is the jobs' namespace; "seam" when empty.
	Namespace string
	// Producer is the URI written as every event's producer; Seam's
	// repository when empty.
	Producer string
	// Version is Seam's version, for the processing_engine facet.
	Version string
	// PartitionsOnly leaves out the per-batch ingest runs: the seal run of
	// each partition then carries its totals alone (for pipelines whose
	// batches are too many to be runs).
	PartitionsOnly bool
	// Now is the clock for runs whose times are not given; time.Now when
	// nil.
	Now func() time.Time
}

// Emitter builds the OpenLineage events of the gate's runs and hands them
// to a sink. A nil *Emitter emits nothing, so the gate can hold one
// whether or not an endpoint is configured. It is safe for concurrent use.
type Emitter struct {
	cfg  EmitterConfig
	sink Sink
}

// NewEmitter returns an emitter that hands events to sink.
func NewEmitter(cfg EmitterConfig, sink Sink) *Emitter {
	if cfg.Namespace == "" {
		cfg.Namespace = defaultJobNamspace
	}
	if cfg.Producer == "" {
		cfg.Producer = defaultProducer
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Emitter{cfg: cfg, sink: sink}
}

// BatchIngested emits the ingest run of one batch (nothing when the
// emitter is nil or PartitionsOnly). An error means the run's description
// is unusable (no subject); a full queue is not an error, the sink counts
// it.
func (e *Emitter) BatchIngested(b Batch) error {
	if e == nil || e.cfg.PartitionsOnly {
		return nil
	}
	return e.send(e.BatchEvents(b))
}

// PartitionSealed emits the seal run of a partition.
func (e *Emitter) PartitionSealed(s Seal) error {
	if e == nil {
		return nil
	}
	return e.send(e.SealEvents(s))
}

// Replayed emits the run of a replay.
func (e *Emitter) Replayed(r Replay) error {
	if e == nil {
		return nil
	}
	return e.send(e.ReplayEvents(r))
}

// send queues the events built for one run; err is the builder's, so each
// emitting method is one line.
func (e *Emitter) send(evs []Event, err error) error {
	if err != nil {
		return err
	}
	for _, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("openlineage: encode the %s event of job %s: %w", ev.EventType, ev.Job.Name, err)
		}
		e.sink.Enqueue(data)
	}
	return nil
}

// BatchEvents builds the START and COMPLETE (FAIL when blocked) events of
// a batch's ingest run.
func (e *Emitter) BatchEvents(b Batch) ([]Event, error) {
	if err := b.Source.check(); err != nil {
		return nil, err
	}
	if b.Partition == "" || b.BatchID == "" {
		return nil, fmt.Errorf("openlineage: batch of %s: partition and batch id are required; they identify the run", b.Subject)
	}
	r := e.newRun(JobIngest, b.Source, b.Started, b.Finished, "ingest", b.Subject, b.Partition, b.BatchID)
	r.seam = map[string]any{"kind": JobIngest, "subject": b.Subject, "contractVersion": b.ContractVersion, "partition": b.Partition,
		"batchId": b.BatchID, "status": b.Status, "received": b.Received, "accepted": b.Accepted, "quarantined": b.Quarantined}
	r.judged(b.Judged, "the batch was blocked")
	return r.events()
}

// SealEvents builds the events of a partition's seal run.
func (e *Emitter) SealEvents(s Seal) ([]Event, error) {
	if err := s.Source.check(); err != nil {
		return nil, err
	}
	if s.Partition == "" {
		return nil, fmt.Errorf("openlineage: seal of %s: the partition is required; it identifies the run", s.Subject)
	}
	gen := max(s.Generation, 1)
	r := e.newRun(JobSeal, s.Source, s.Started, s.Finished, "seal", s.Subject, s.Partition, strconv.FormatInt(gen, 10))
	r.seam = map[string]any{"kind": JobSeal, "subject": s.Subject, "contractVersion": s.ContractVersion, "partition": s.Partition,
		"generation": gen, "verdict": s.Verdict, "received": s.Received, "accepted": s.Accepted, "quarantined": s.Quarantined}
	r.judged(s.Judged, "the partition was blocked")
	return r.events()
}

// judged fills in a run that judged the records of a partition (an ingest
// or a seal): its checks, its metrics (the row count is what it received
// unless they say otherwise) and what it wrote. Nothing of a blocked run
// is published, whatever it accepted: it fails with its Reason (or with
// unexplained when it gives none) and the output has no rows.
func (r *run) judged(j Judged, unexplained string) {
	r.partition = j.Partition
	r.checks, r.metrics, r.written = j.Checks, j.Metrics, j.Accepted
	if r.metrics.RowCount == 0 {
		r.metrics.RowCount = j.Received
	}
	if j.Blocked {
		r.fail = cmp.Or(j.Reason, unexplained)
		r.written = 0
	}
}

// ReplayEvents builds the events of a replay's run.
func (e *Emitter) ReplayEvents(rp Replay) ([]Event, error) {
	if err := rp.Source.check(); err != nil {
		return nil, err
	}
	if rp.ReplayID == "" {
		return nil, fmt.Errorf("openlineage: replay of %s: the replay id is required; it identifies the run", rp.Subject)
	}
	r := e.newRun(JobReplay, rp.Source, rp.Started, rp.Finished, "replay", rp.Subject, rp.ReplayID)
	if lexical.IsUUID([]byte(rp.ReplayID)) {
		r.runID = strings.ToLower(rp.ReplayID)
	}
	if rp.PartitionFrom == rp.PartitionTo {
		r.partition = rp.PartitionFrom
	}
	rerun := rp.Rerun
	if rerun == nil {
		rerun = []string{}
	}
	r.seam = map[string]any{"kind": JobReplay, "subject": rp.Subject, "contractVersion": rp.ContractVersion, "replayId": rp.ReplayID,
		"partitionFrom": rp.PartitionFrom, "partitionTo": rp.PartitionTo, "held": rp.Held, "released": rp.Released,
		"remaining": rp.Remaining, "rerun": rerun}
	r.checks, r.written = rp.Checks, rp.Released
	r.metrics = Metrics{RowCount: rp.Held}
	r.fail = rp.Err
	return r.events()
}

func (s Source) check() error {
	if strings.TrimSpace(s.Subject) == "" {
		return errors.New("openlineage: the subject is required; it names the run's job and input dataset")
	}
	return nil
}

// run is what every kind of run shares while its events are built.
type run struct {
	e                 *Emitter
	job               string
	src               Source
	runID             string
	started, finished time.Time
	partition         string
	seam              map[string]any
	checks            []CheckResult
	metrics           Metrics
	written           int64
	fail              string
	err               error
}

func (e *Emitter) newRun(job string, src Source, started, finished time.Time, key ...string) *run {
	now := e.cfg.Now()
	if finished.IsZero() {
		finished = now
	}
	if started.IsZero() || started.After(finished) {
		started = finished
	}
	return &run{e: e, job: job, src: src, runID: nameUUID(append([]string{e.cfg.Namespace}, key...)...), started: started, finished: finished}
}

func (r *run) events() ([]Event, error) {
	job := &Job{Namespace: r.e.cfg.Namespace, Name: r.src.Subject + "." + r.job, Facets: map[string]any{
		"jobType": facet(jobTypeURL, r.e.cfg.Producer, map[string]any{"processingType": "BATCH", "integration": "SEAM", "jobType": strings.ToUpper(r.job)}),
	}}
	runFacets := func(terminal bool) map[string]any {
		f := map[string]any{
			"processing_engine": facet(processingURL, r.e.cfg.Producer, map[string]any{"name": "seam", "version": r.e.cfg.Version, "openlineageAdapterVersion": r.e.cfg.Version}),
		}
		if r.partition != "" {
			if start, end, err := check.PartitionWindow(r.partition, time.UTC); err == nil {
				f["nominalTime"] = facet(nominalTimeURL, r.e.cfg.Producer, map[string]any{"nominalStartTime": stamp(start), "nominalEndTime": stamp(end)})
			}
		}
		if terminal {
			f["seam"] = facet(seamRunFacetURL, r.e.cfg.Producer, r.seam)
			if r.fail != "" {
				f["errorMessage"] = facet(errorMessageURL, r.e.cfg.Producer, map[string]any{"message": r.fail, "programmingLanguage": "Go"})
			}
		}
		return f
	}
	input := func(terminal bool) InputDataset {
		in := InputDataset{Dataset: r.dataset(r.src.inputName())}
		in.Facets = map[string]json.RawMessage{
			"version": r.raw(facet(datasetVersionURL, r.e.cfg.Producer, map[string]any{"datasetVersion": strconv.FormatInt(r.src.ContractVersion, 10)})),
		}
		if len(r.src.Fields) > 0 {
			in.Facets["schema"] = r.raw(facet(schemaFacetURL, r.e.cfg.Producer, map[string]any{"fields": schemaFields(r.src.Fields)}))
		}
		if terminal {
			in.InputFacets = map[string]any{
				"dataQualityAssertions": facet(assertionsURL, r.e.cfg.Producer, map[string]any{"assertions": assertions(r.checks)}),
				"dataQualityMetrics":    facet(metricsURL, r.e.cfg.Producer, metrics(r.metrics)),
			}
		}
		return in
	}
	output := func(terminal bool) []OutputDataset {
		if r.src.Canonical == "" {
			return nil
		}
		out := OutputDataset{Dataset: r.dataset(SeamNamespace, r.src.Canonical)}
		if r.src.CanonicalVersion > 0 {
			out.Facets = map[string]json.RawMessage{
				"version": r.raw(facet(datasetVersionURL, r.e.cfg.Producer, map[string]any{"datasetVersion": strconv.FormatInt(r.src.CanonicalVersion, 10)})),
			}
		}
		if terminal {
			out.OutputFacets = map[string]any{"outputStatistics": facet(outputStatsURL, r.e.cfg.Producer, map[string]any{"rowCount": r.written})}
		}
		return []OutputDataset{out}
	}
	end := "COMPLETE"
	if r.fail != "" {
		end = "FAIL"
	}
	evs := []Event{
		{EventType: "START", EventTime: stamp(r.started), Run: &Run{RunID: r.runID, Facets: runFacets(false)}, Job: job,
			Inputs: []InputDataset{input(false)}, Outputs: output(false), Producer: r.e.cfg.Producer, SchemaURL: SchemaURL},
		{EventType: end, EventTime: stamp(r.finished), Run: &Run{RunID: r.runID, Facets: runFacets(true)}, Job: job,
			Inputs: []InputDataset{input(true)}, Outputs: output(true), Producer: r.e.cfg.Producer, SchemaURL: SchemaURL},
	}
	if r.err != nil {
		return nil, r.err
	}
	return evs, nil
}

func (r *run) dataset(ns, name string) Dataset { return Dataset{Namespace: ns, Name: name} }

// inputName is the dataset the subject is: the one its labels bind it to,
// or its own name in namespace "seam".
func (s Source) inputName() (string, string) {
	if ns, name := s.Labels[LabelNamespace], s.Labels[LabelName]; ns != "" && name != "" {
		return ns, name
	}
	return SeamNamespace, s.Subject
}

// facet adds the base facet fields to a facet's own.
func facet(schemaURL, producer string, fields map[string]any) map[string]any {
	fields["_producer"] = producer
	fields["_schemaURL"] = schemaURL
	return fields
}

// raw encodes a facet for Dataset.Facets; the first failure is kept in
// r.err.
func (r *run) raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("openlineage: encode a dataset facet of job %s: %w", r.job, err)
	}
	return b
}

// severity maps a policy to the assertion severity: a BLOCK or QUARANTINE
// check stops records, an ALERT check warns.
func severity(policy string) string {
	if strings.EqualFold(strings.TrimPrefix(strings.ToUpper(policy), "POLICY_"), "ALERT") {
		return "warn"
	}
	return "error"
}

func assertions(checks []CheckResult) []any {
	out := make([]any, 0, len(checks))
	for _, c := range checks {
		a := map[string]any{
			"assertion":   cmp.Or(c.Kind, "check"),
			"success":     c.Passed,
			"name":        c.Name,
			"severity":    severity(c.Policy),
			"content":     c.Rule,
			"contentType": "seam-rule",
		}
		if c.Field != "" {
			a["column"] = c.Field
		}
		if c.Expected != "" {
			a["expected"] = c.Expected
		}
		switch {
		case c.Actual != "":
			a["actual"] = c.Actual
		case c.Failures > 0 || !c.Passed:
			a["actual"] = fmt.Sprintf("%d failing records", c.Failures)
		}
		if c.Failures > 0 {
			a["params"] = map[string]any{"failures": c.Failures, "policy": c.Policy}
		}
		out = append(out, a)
	}
	return out
}

func metrics(m Metrics) map[string]any {
	cols := map[string]any{}
	for name, c := range m.Columns {
		col := map[string]any{"nullCount": c.NullCount}
		if c.Count != nil {
			col["count"] = *c.Count
		}
		if c.DistinctCount != nil {
			col["distinctCount"] = *c.DistinctCount
		}
		for key, v := range map[string]*float64{"sum": c.Sum, "min": c.Min, "max": c.Max} {
			if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
				col[key] = *v
			}
		}
		cols[name] = col
	}
	out := map[string]any{"rowCount": m.RowCount, "columnMetrics": cols}
	if m.Bytes > 0 {
		out["bytes"] = m.Bytes
	}
	return out
}

func schemaFields(fs []SchemaField) []any {
	out := make([]any, 0, len(fs))
	for i, f := range fs {
		m := map[string]any{"name": f.Name, "ordinal_position": i + 1}
		if f.Type != "" {
			m["type"] = f.Type
		}
		if f.Description != "" {
			m["description"] = f.Description
		}
		if len(f.Fields) > 0 {
			m["fields"] = schemaFields(f.Fields)
		}
		out = append(out, m)
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// nameUUID derives a version 5 style UUID (SHA-1, RFC 9562 section 5.5)
// from the parts that identify a run, so the same run always has the same
// id.
func nameUUID(parts ...string) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	b := [16]byte(h.Sum(nil)[:16])
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return idrule.FormatUUID(b)
}
