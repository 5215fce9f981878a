package gate

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/shape"
)

// unitFigures are what a partition (or an amendment) accumulates over its
// batches, stored with it as JSON: the check figures (statistics and
// record-check failures) and the shapes of values that failed a type or
// identifier-format check, from which the seal tells an unannounced change
// of the source.
type unitFigures struct {
	check.Figures
	Shapes map[string]shapeFigure `json:"shapes,omitempty"`
	// Values counts every present value of each scalar field by shape
	// (profile), and how many passed: what the seal learns from and
	// compares with what the subject showed before.
	Values map[string]shapeFigure `json:"values,omitempty"`
	// AsSealed is the judgment of the unit's first seal, which re-judgments
	// after a replay do not change.
	AsSealed *asSealed `json:"as_sealed,omitempty"`
	// Contained counts the unit's records held because their source was
	// contained and not released since: a unit with any is no baseline.
	Contained int64 `json:"contained,omitempty"`
}

// asSealed is what a unit's first seal found.
type asSealed struct {
	Verdict   int32   `json:"verdict"`
	MatchRate float64 `json:"match_rate"`
}

// shapeFigure counts the values of one field that had one shape.
type shapeFigure struct {
	Field    string `json:"field"`
	Shape    string `json:"shape"`
	Declared string `json:"declared"`
	Sample   string `json:"sample"`
	Count    int64  `json:"count"`
	// Passed counts the values of records that passed (Values only).
	Passed int64 `json:"passed,omitempty"`
}

// add merges another batch's figures.
func (f *unitFigures) add(o unitFigures) {
	f.Stats.Merge(o.Stats)
	for _, name := range slices.Sorted(maps.Keys(o.Failures)) {
		c := o.Failures[name]
		f.AddFailures(name, c.Count, c.Samples)
	}
	f.Shapes = mergeShapes(f.Shapes, o.Shapes)
	f.Values = mergeShapes(f.Values, o.Values)
	f.Contained += o.Contained
}

func mergeShapes(into, from map[string]shapeFigure) map[string]shapeFigure {
	for k, s := range from {
		if into == nil {
			into = map[string]shapeFigure{}
		}
		cur, ok := into[k]
		if !ok {
			cur = s
			cur.Count, cur.Passed = 0, 0
		}
		cur.Count += s.Count
		cur.Passed += s.Passed
		into[k] = cur
	}
	return into
}

// renameV1 gives the shapes of figures written before Seam had one
// classifier their current names ("digit string" is digits): a partition
// open across the upgrade counts its values under one name. Templates keep
// their text; the learned shapes of version 1 cover what they stand for.
func (f *unitFigures) renameV1() {
	rename := func(m map[string]shapeFigure) map[string]shapeFigure {
		stale := false
		for _, s := range m {
			stale = stale || shape.FromV1(s.Shape) != s.Shape
		}
		if !stale {
			return m
		}
		var out map[string]shapeFigure
		for _, s := range m {
			s.Shape = shape.FromV1(s.Shape)
			out = mergeShapes(out, map[string]shapeFigure{s.Field + "\x00" + s.Shape: s})
		}
		return out
	}
	f.Shapes, f.Values = rename(f.Shapes), rename(f.Values)
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
// A shape counts no more records than still fail its field's type,
// pattern and format checks, so records a replay released (through a version that
// maps the new shape) no longer count in it.
func (f *unitFigures) clusters(share float64) []shapeFigure {
	var out []shapeFigure
	for _, s := range f.Shapes {
		failing := f.Failures[s.Field+".type"].Count + f.Failures[s.Field+".format"].Count + f.Failures[s.Field+".pattern"].Count
		s.Count = min(s.Count, failing)
		if s.Count >= minClusterRecords && float64(s.Count) >= share*float64(f.Stats.Rows) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, byFieldAndShape)
	return out
}

// learnedField is what a subject's accepted records showed of one field:
// records by shape, and the latest contract version they were learned
// under.
type learnedField struct {
	shapes  map[string]int64
	version int32
	// v1 are shapes learned before Seam had one classifier, by their
	// version-1 names (core/shape.V1Covers); the migration "shapes of one classifier" marked them.
	v1 map[string]int64
}

// empty reports a field with no learned shape.
func (l learnedField) empty() bool { return len(l.shapes) == 0 && len(l.v1) == 0 }

// knows reports whether values of shape name were learned: by that name,
// by a name of its family (shape.Family), or by a version-1 name that
// stands for it.
func (l learnedField) knows(name string) bool {
	if l.shapes[name] > 0 {
		return true
	}
	// Codes that outgrew their zero padding are the same codes.
	family := shape.Family(name)
	for k, n := range l.shapes {
		if n > 0 && shape.Family(k) == family {
			return true
		}
	}
	for old, n := range l.v1 {
		if n > 0 && shape.V1Covers(old, name) {
			return true
		}
	}
	return false
}

// names lists the learned shapes, most frequent first, version-1 names
// under their current ones.
func (l learnedField) names() []string {
	count := maps.Clone(l.shapes)
	for old, n := range l.v1 {
		if count == nil {
			count = map[string]int64{}
		}
		count[shape.FromV1(old)] += n
	}
	names := slices.Sorted(maps.Keys(count))
	sort.SliceStable(names, func(i, j int) bool { return count[names[i]] > count[names[j]] })
	return names
}

// shiftedShape is a field whose values moved to a shape the subject never
// showed in what passed before.
type shiftedShape struct {
	shapeFigure
	// Values counts the unit's values of the field; Moved those of the
	// new shape that are still held, or that passed unnoticed.
	Values, Moved int64
	// Known lists the shapes learned before, most frequent first.
	Known []string
}

// shifted are the fields whose values moved to a shape never learned for
// the subject, in at least share of the field's values (and
// minClusterRecords of them), either
//
//   - held: quarantined values of the new shape that still fail the
//     field's type, pattern or format check (a replay that releases them
//     through a version mapping the shape ends it), or
//   - unnoticed: accepted under a contract version no newer than the one
//     the field's shapes were learned under, so no version announced it
//     (a free-form field that starts carrying UUIDs).
//
// Values of a new shape accepted under a newer version are announced: the
// seal learns them instead. A field with no learned shape is not judged;
// its first partitions are where its shapes are learned.
func (f *unitFigures) shifted(learned map[string]learnedField, version int32, share float64) []shiftedShape {
	totals := map[string]int64{}
	for _, v := range f.Values {
		totals[v.Field] += v.Count
	}
	var out []shiftedShape
	for _, v := range f.Values {
		known := learned[v.Field]
		if known.empty() || known.knows(v.Shape) || v.Shape == "mixed" {
			continue
		}
		failing := f.Failures[v.Field+".type"].Count + f.Failures[v.Field+".format"].Count + f.Failures[v.Field+".pattern"].Count
		moved := min(v.Count-v.Passed, failing)
		if version <= known.version {
			moved = max(moved, v.Passed)
		}
		if moved < minClusterRecords || float64(moved) < share*float64(totals[v.Field]) {
			continue
		}
		out = append(out, shiftedShape{shapeFigure: v, Values: totals[v.Field], Moved: moved, Known: known.names()})
	}
	slices.SortFunc(out, func(a, b shiftedShape) int { return byFieldAndShape(a.shapeFigure, b.shapeFigure) })
	return out
}

// learnable are the shapes of the unit's passed values worth learning: at
// least 5% of a field's passed values, so a few odd records do not make a
// shape "known" and hide the day the source moves to it.
func (f *unitFigures) learnable() []shapeFigure {
	passed := map[string]int64{}
	for _, v := range f.Values {
		passed[v.Field] += v.Passed
	}
	var out []shapeFigure
	for _, v := range f.Values {
		if v.Passed == 0 || v.Shape == "mixed" || v.Passed*20 < passed[v.Field] {
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, byFieldAndShape)
	return out
}

// shapeChange is an unannounced change of one field the seal reports.
type shapeChange struct {
	shiftedShape
	// Held is set when the moved values are quarantined rather than passed.
	Held bool
}

// changes are the unit's unannounced changes: shapes of failing values
// that fill a large share of its records (seeded by the declared type,
// pattern or identifier format, so even a subject's first partition is
// judged), and values that moved to a shape the subject's accepted
// records never showed (shifted). A field and shape found both ways is
// one change.
func (f *unitFigures) changes(learned map[string]learnedField, version int32, share float64) []shapeChange {
	totals := map[string]int64{}
	for _, v := range f.Values {
		totals[v.Field] += v.Count
	}
	byKey := map[string]shapeChange{}
	var keys []string
	for _, c := range f.clusters(share) {
		k := c.Field + "\x00" + c.Shape
		values := totals[c.Field]
		if values < c.Count {
			values = f.Stats.Rows
		}
		var known []string
		if l, ok := learned[c.Field]; ok {
			known = l.names()
		}
		byKey[k] = shapeChange{shiftedShape: shiftedShape{shapeFigure: c, Values: values, Moved: c.Count, Known: known}, Held: true}
		keys = append(keys, k)
	}
	for _, s := range f.shifted(learned, version, share) {
		k := s.Field + "\x00" + s.Shape
		cur, ok := byKey[k]
		if !ok {
			keys = append(keys, k)
			byKey[k] = shapeChange{shiftedShape: s, Held: s.Passed < s.Moved}
			continue
		}
		cur.Known = s.Known
		if s.Moved > cur.Moved {
			cur.Moved = s.Moved
		}
		byKey[k] = cur
	}
	sort.Strings(keys)
	out := make([]shapeChange, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func (c shapeChange) share() float64 {
	if c.Values == 0 {
		return 0
	}
	return float64(c.Moved) / float64(c.Values)
}

// was says what the field's accepted values were before, if known.
func (c shapeChange) was() string {
	if len(c.Known) == 0 {
		return ""
	}
	known := c.Known
	if len(known) > 3 {
		known = known[:3]
	}
	return " where accepted values were " + strings.Join(known, ", ")
}

// fate says what became of the moved values.
func (c shapeChange) fate() string {
	if c.Held {
		return "they are quarantined, not passed with the value nulled"
	}
	return "they passed the contract's checks and reach consumers as they are"
}

// byFieldAndShape orders shape figures by field, then shape, so what a
// seal reports reads the same every time.
func byFieldAndShape(a, b shapeFigure) int {
	return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Shape, b.Shape))
}
