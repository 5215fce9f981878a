// Package openlineage reads and writes OpenLineage events (spec 2-0-2): it
// turns run events into Seam consumers — input datasets into consumer
// inputs, output datasets into produced datasets, the column-lineage facet
// into field-level usage — and builds the events the gate emits for its
// runs, with the data-quality assertion and metrics facets. Pure Go, no I/O.
//
// Dataset identity: an OpenLineage dataset is a namespace and a name. A
// Resolver decides which are Seam subjects (or canonical models, read as
// the subjects mapped into them); every other dataset is named
// "<namespace>/<name>" in Seam's lineage.
package openlineage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SchemaURL is the spec version Seam writes.
const SchemaURL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"

// SeamNamespace is the dataset namespace of Seam's own datasets: subjects
// and canonical models, by name.
const SeamNamespace = "seam"

// Event is one OpenLineage event: a RunEvent, or a JobEvent (no run) or a
// DatasetEvent (only a dataset), which the spec also allows.
type Event struct {
	EventType string          `json:"eventType,omitempty"`
	EventTime string          `json:"eventTime"`
	Run       *Run            `json:"run,omitempty"`
	Job       *Job            `json:"job,omitempty"`
	Dataset   *Dataset        `json:"dataset,omitempty"`
	Inputs    []InputDataset  `json:"inputs,omitempty"`
	Outputs   []OutputDataset `json:"outputs,omitempty"`
	Producer  string          `json:"producer"`
	SchemaURL string          `json:"schemaURL"`
}

// Run is the run of an event.
type Run struct {
	RunID  string         `json:"runId"`
	Facets map[string]any `json:"facets,omitempty"`
}

// Job is the job of an event.
type Job struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Facets    map[string]any `json:"facets,omitempty"`
}

// Dataset names a dataset and carries its facets.
type Dataset struct {
	Namespace string                     `json:"namespace"`
	Name      string                     `json:"name"`
	Facets    map[string]json.RawMessage `json:"facets,omitempty"`
}

// InputDataset is a dataset a run read.
type InputDataset struct {
	Dataset
	InputFacets map[string]any `json:"inputFacets,omitempty"`
}

// OutputDataset is a dataset a run wrote.
type OutputDataset struct {
	Dataset
	OutputFacets map[string]any `json:"outputFacets,omitempty"`
}

// ID is the name Seam's lineage gives a dataset that is not a subject.
func ID(namespace, name string) string { return namespace + "/" + name }

// Time parses the event time: RFC 3339, or without a zone (taken as UTC),
// as some emitters write it.
func (e *Event) Time() (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, e.EventTime); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("eventTime %q is not an RFC 3339 time", e.EventTime)
}

// maxEvents bounds one batch.
const maxEvents = 10000

// Parse reads one event (a JSON object) or a list of them, and checks what
// Seam relies on: an event time, and for run and job events a job namespace
// and name (and a run id for run events). Errors name the event's index.
func Parse(data []byte) ([]Event, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("no event: send one OpenLineage event (a JSON object) or a list of them")
	}
	var raw []json.RawMessage
	if data[0] == '[' {
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
	} else {
		raw = []json.RawMessage{data}
	}
	if len(raw) > maxEvents {
		return nil, fmt.Errorf("%d events in one request; send at most %d", len(raw), maxEvents)
	}
	out := make([]Event, 0, len(raw))
	for i, r := range raw {
		var e Event
		if err := json.Unmarshal(r, &e); err != nil {
			return nil, fmt.Errorf("event %d: not an OpenLineage event: %w", i, err)
		}
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (e *Event) validate() error {
	if _, err := e.Time(); err != nil {
		return err
	}
	switch {
	case e.Run == nil && e.Job == nil && e.Dataset == nil:
		return errors.New("neither run, job nor dataset: not an OpenLineage event")
	case e.Job != nil && (strings.TrimSpace(e.Job.Namespace) == "" || strings.TrimSpace(e.Job.Name) == ""):
		return errors.New("job.namespace and job.name are required")
	case e.Run != nil && e.Job == nil:
		return errors.New("a run event needs a job")
	case e.Run != nil && strings.TrimSpace(e.Run.RunID) == "":
		return errors.New("run.runId is required")
	}
	for i, d := range e.Inputs {
		if d.Namespace == "" || d.Name == "" {
			return fmt.Errorf("inputs[%d]: namespace and name are required", i)
		}
	}
	for i, d := range e.Outputs {
		if d.Namespace == "" || d.Name == "" {
			return fmt.Errorf("outputs[%d]: namespace and name are required", i)
		}
	}
	return nil
}
