package gate

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/shape"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

const contractPolicyAlert = contractv1.Policy_POLICY_ALERT

// minClusterRecords is the fewest failing values of one shape that count
// as a cluster: a handful of odd records is noise, not a changed source.
const minClusterRecords = 10

// shapes counts, by field and shape, the values of a batch that failed a
// type, pattern or identifier-format check. A partition adds them up; its
// seal reports a field whose failing values share one shape in a large
// share of its records as an unannounced change (figures.go).
func shapes(plan *check.Plan, b *record.Batch, res *check.BatchResult) map[string]shapeFigure {
	checks := plan.Checks()
	var out map[string]shapeFigure
	for i := range res.Records {
		for _, f := range res.Records[i].Failures {
			k := checks[f.Check].Kind
			if k != check.KindType && k != check.KindFormat && k != check.KindPattern {
				continue
			}
			slot, ok := plan.Schema().Lookup(f.Field)
			if !ok {
				continue
			}
			v := b.Records[i].Values[slot]
			name := shapeOf(v)
			key := f.Field + "\x00" + name
			if out == nil {
				out = map[string]shapeFigure{}
			}
			sf, ok := out[key]
			if !ok {
				sf = shapeFigure{Field: f.Field, Shape: name, Declared: declaredShape(plan.Schema().Field(slot).Decl), Sample: sampleOf(v)}
			}
			sf.Count++
			out[key] = sf
		}
	}
	return out
}

// declaredShape says what the contract declares a field to be.
func declaredShape(decl *contractv1.Field) string {
	declared := strings.TrimPrefix(decl.GetType().String(), "FIELD_TYPE_")
	if id := decl.GetIdentifier(); id != nil {
		declared += " (" + id.GetNamespace() + "/" + id.GetFormat() + ")"
	}
	if p := decl.GetPattern(); p != "" {
		declared += " matching " + p
	}
	return declared
}

// maxShapesPerField bounds the distinct shapes a unit keeps per field;
// values of further shapes count as "mixed", so free-form values cannot
// grow a partition's figures without bound.
const maxShapesPerField = 16

// profile counts, by field and shape, every present value of the batch's
// scalar fields, and how many of them were in records that passed: the
// seal learns a subject's shapes from what passed in partitions that were
// not blocked, and tells a field whose values moved to a shape never
// learned.
func profile(plan *check.Plan, b *record.Batch, passed func(i int) bool) map[string]shapeFigure {
	return profileValues(plan, b).figures(passed)
}

// valueProfile is a batch's values counted by field and shape, before
// which records passed is known: the gate counts them while the adapter
// maps the batch, and adds what passed once it has answered.
type valueProfile struct {
	fields []profiledField
	// shapes holds, record after record, one byte per field: 0 when the
	// value was not counted, else 1 + the index of its figure in the
	// field's list.
	shapes []uint8
}

type profiledField struct {
	f      *record.Field
	scalar bool
	// list and byShape are the field's figures, at most
	// maxShapesPerField of them and "mixed".
	list    []*shapeFigure
	byShape map[string]uint8 // index in list
	// known remembers the figure of text values seen in this batch, for a
	// field of few values (a status, a currency, a country) that do not
	// come in runs: naming a text's shape tries every named shape in turn,
	// a lookup by its bytes is one hash. A field of many values (ids,
	// times) stops remembering once its values rarely repeat.
	known       map[string]uint8
	lookups     int
	hits        int
	unrewarding bool
}

// Bounds on a field's remembered values: at most maxKnownValues of them,
// and a field stops looking after knownTrial lookups if fewer than one in
// two found the value.
const (
	maxKnownValues = 64
	knownTrial     = 256
)

// profileValues counts every present value of the batch's scalar fields
// by field and shape. The lookup by the scratch bytes does not allocate,
// only a shape seen first does. Records are walked one after the other,
// each across its fields, so a record's values are read while they are in
// the cache.
func profileValues(plan *check.Plan, b *record.Batch) *valueProfile {
	schema := plan.Schema()
	vp := &valueProfile{fields: make([]profiledField, schema.Len()), shapes: make([]uint8, len(b.Records)*schema.Len())}
	for slot := range vp.fields {
		f := schema.Field(slot)
		t := f.Type()
		vp.fields[slot] = profiledField{f: f, scalar: t != contractv1.FieldType_FIELD_TYPE_OBJECT && t != contractv1.FieldType_FIELD_TYPE_ARRAY && t != contractv1.FieldType_FIELD_TYPE_JSON}
	}
	// Values in a row mostly share a shape, and often are the same value:
	// a value of the field's last kind that is no text, or a text equal to
	// the field's last one, has the last one's shape and needs no naming.
	last := make([]uint8, len(vp.fields))
	lastValue := make([]record.Value, len(vp.fields))
	var buf []byte
	for i := range b.Records {
		vals := b.Records[i].Values
		row := vp.shapes[i*len(vp.fields) : (i+1)*len(vp.fields)]
		for slot := range vp.fields {
			fd := &vp.fields[slot]
			if !fd.scalar || slot >= len(vals) || !vals[slot].Present() {
				continue
			}
			v := vals[slot]
			k := last[slot]
			if k == 0 || v.Kind() != lastValue[slot].Kind() || text(v) && !bytes.Equal(v.Bytes(), lastValue[slot].Bytes()) {
				k = fd.figureOf(v, k, &buf)
				lastValue[slot] = v
			}
			last[slot], row[slot] = k, k
			fd.list[k-1].Count++
		}
	}
	return vp
}

// text reports whether v's shape depends on its bytes; any other value's
// shape is its kind's (shape.Append).
func text(v record.Value) bool {
	return v.Kind() == record.KindString || v.Kind() == record.KindRaw
}

// figureOf returns 1 + the index of v's figure, given the field's last
// one (0 for none), naming v's shape in *buf unless the field remembers
// the value.
func (fd *profiledField) figureOf(v record.Value, last uint8, buf *[]byte) uint8 {
	remember := text(v) && !fd.unrewarding
	if remember {
		fd.lookups++
		if k, ok := fd.known[string(v.Bytes())]; ok {
			fd.hits++
			return k
		}
		if fd.lookups >= knownTrial && 2*fd.hits < fd.lookups {
			fd.unrewarding, fd.known, remember = true, nil, false
		}
	}
	*buf = shape.Append((*buf)[:0], v)
	k := last
	if k == 0 || fd.list[k-1].Shape != string(*buf) {
		k = fd.index(*buf, v)
	}
	if remember && len(fd.known) < maxKnownValues {
		if fd.known == nil {
			fd.known = make(map[string]uint8, maxKnownValues)
		}
		fd.known[string(v.Bytes())] = k
	}
	return k
}

// index returns 1 + the index of shapeName's figure in the field's list,
// adding the figure (or counting the value as "mixed" once the field has
// maxShapesPerField shapes).
func (fd *profiledField) index(shapeName []byte, v record.Value) uint8 {
	if k, ok := fd.byShape[string(shapeName)]; ok {
		return k + 1
	}
	name := string(shapeName)
	if len(fd.byShape) >= maxShapesPerField {
		name = "mixed"
		if k, ok := fd.byShape[name]; ok {
			return k + 1
		}
	}
	if fd.byShape == nil {
		fd.byShape = map[string]uint8{}
	}
	fd.byShape[name] = uint8(len(fd.list))
	fd.list = append(fd.list, &shapeFigure{Field: fd.f.Path, Shape: name, Declared: declaredShape(fd.f.Decl), Sample: sampleOf(v)})
	return uint8(len(fd.list))
}

// figures adds the values of the records that passed and returns the
// figures by field and shape.
func (vp *valueProfile) figures(passed func(i int) bool) map[string]shapeFigure {
	if n := len(vp.fields); n > 0 {
		for i := range len(vp.shapes) / n {
			if !passed(i) {
				continue
			}
			for slot, k := range vp.shapes[i*n : (i+1)*n] {
				if k != 0 {
					vp.fields[slot].list[k-1].Passed++
				}
			}
		}
	}
	var out map[string]shapeFigure
	for _, fd := range vp.fields {
		for _, sf := range fd.list {
			if out == nil {
				out = map[string]shapeFigure{}
			}
			out[fd.f.Path+"\x00"+sf.Shape] = *sf
		}
	}
	return out
}

// shapeOf names what a value looks like, as every part of Seam names it
// (core/shape): "uuid", "digits", "name-{digits}", "VH-{digits:6}", …
func shapeOf(v record.Value) string { return shape.Of(v) }

func sampleOf(v record.Value) string {
	b := v.Bytes()
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

func thresholdFraction(f float64) *contractv1.Threshold {
	return &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: f}}
}

func thresholdCount(n int64) *contractv1.Threshold {
	return &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: n}}
}

func thresholdText(d interface {
	GetThreshold() *contractv1.Threshold
}) string {
	switch l := d.GetThreshold().GetLimit().(type) {
	case *contractv1.Threshold_Fraction:
		return fmt.Sprintf("more than %g of the batch", l.Fraction)
	case *contractv1.Threshold_Count:
		if l.Count == 0 {
			return "no failure tolerated"
		}
		return fmt.Sprintf("more than %d records", l.Count)
	}
	return "no failure tolerated"
}
