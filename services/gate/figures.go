package gate

import (
	"sort"

	"github.com/seamdata/seam/core/check"
)

// unitFigures are what a partition (or an amendment) accumulates over its
// batches, stored with it as JSON: the check figures (statistics and
// record-check failures) and the shapes of values that failed a type or
// identifier-format check, from which the seal tells an unannounced change
// of the source.
type unitFigures struct {
	check.Figures
	Shapes map[string]shapeFigure `json:"shapes,omitempty"`
}

// shapeFigure counts the failing values of one field that had one shape.
type shapeFigure struct {
	Field    string `json:"field"`
	Shape    string `json:"shape"`
	Declared string `json:"declared"`
	Sample   string `json:"sample"`
	Count    int64  `json:"count"`
}

// add merges another batch's figures.
func (f *unitFigures) add(o unitFigures) {
	f.Stats.Merge(o.Stats)
	for _, name := range sortedKeys(o.Failures) {
		c := o.Failures[name]
		f.AddFailures(name, c.Count, c.Samples)
	}
	for k, s := range o.Shapes {
		if f.Shapes == nil {
			f.Shapes = map[string]shapeFigure{}
		}
		cur, ok := f.Shapes[k]
		if !ok {
			cur = s
			cur.Count = 0
		}
		cur.Count += s.Count
		f.Shapes[k] = cur
	}
}

// removeFailures takes released records' failures back out: a record a
// replay released no longer counts against the checks it failed.
func (f *unitFigures) removeFailures(names map[string]int64) {
	for name, n := range names {
		c, ok := f.Failures[name]
		if !ok {
			continue
		}
		c.Count = max(0, c.Count-n)
		if c.Count == 0 {
			delete(f.Failures, name)
			continue
		}
		f.Failures[name] = c
	}
}

// clusters are the shapes held by at least share of the unit's records
// (and minClusterRecords of them): a source that changed what it sends.
// A shape counts no more records than still fail its field's type and
// format checks, so records a replay released (through a version that
// maps the new shape) no longer count in it.
func (f *unitFigures) clusters(share float64) []shapeFigure {
	var out []shapeFigure
	for _, s := range f.Shapes {
		failing := f.Failures[s.Field+".type"].Count + f.Failures[s.Field+".format"].Count
		s.Count = min(s.Count, failing)
		if s.Count >= minClusterRecords && float64(s.Count) >= share*float64(f.Stats.Rows) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		return out[i].Shape < out[j].Shape
	})
	return out
}
