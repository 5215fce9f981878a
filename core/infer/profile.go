package infer

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/shape"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Record is one record as Seam holds it: the bytes the source sent.
type Record struct {
	// Format is how Raw is written: FORMAT_JSON or FORMAT_NDJSON for one
	// JSON object, FORMAT_CSV for a header line and the record's row (as
	// the gate keeps a quarantined CSV record).
	Format recordv1.Format
	Raw    []byte
	// Partition is the partition the record was sent in.
	Partition string
	// ID and Position say where the record came from, for examples.
	ID       string
	Position int64
}

// Limits of a profile, so hostile records cannot make it grow without end.
const (
	// maxDistinct is how many distinct values of a field are counted; past
	// it the field is not an enumeration anyway.
	maxDistinct = 64
	// maxExamples is how many distinct example values a field keeps.
	maxExamples = 3
	// maxExampleLen bounds one example's length.
	maxExampleLen = 60
	// maxFieldsPerObject bounds the distinct member names profiled per object.
	maxFieldsPerObject = 1000
	// maxNesting bounds how deep objects and arrays are profiled.
	maxNesting = 16
	// maxIDValues bounds the distinct identifier values kept per field.
	maxIDValues = 1 << 20
)

// fieldName is the form a contract field name must have.
var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Profile is what a set of records shows, field by field.
type Profile struct {
	// Records is how many records were profiled; Malformed how many of
	// them could not be read as their format (they count nowhere else).
	Records, Malformed int
	// MalformedExamples say why some records could not be read.
	MalformedExamples []string
	// Partitions are the distinct partitions, sorted.
	Partitions []string
	// Fields are the top-level fields: those the contract declares in its
	// order, then the others in the order first seen.
	Fields []*FieldProfile
	// Unnamable counts members whose names a contract cannot declare
	// (names are letters, digits and _), by name.
	Unnamable map[string]int

	byPath map[string]*FieldProfile
}

// Field returns the profile of a dotted path ("amount", "address.zip",
// "lines[].sku"), or nil.
func (p *Profile) Field(path string) *FieldProfile { return p.byPath[path] }

// FieldProfile is what the values of one field look like.
type FieldProfile struct {
	// Path is the dotted name; Name the field's own name.
	Path, Name string
	// Declared is the active contract's declaration, nil for a field it
	// does not declare.
	Declared *contractv1.Field
	// Seen counts the objects the field could appear in (every record at
	// the top level); Present those with a non-null value; Null those
	// with an explicit null. Seen-Present-Null were absent.
	Seen, Present, Null int
	// Kinds counts present values by kind (see KindName).
	Kinds [numKinds]int
	// Shapes counts string values by shape: a named shape ("uuid",
	// "digits"…) or an exact template ("ACC-{digits:8}").
	Shapes map[string]int
	// Examples are up to three distinct values, as JSON.
	Examples []string
	// Distinct counts string values while there are at most maxDistinct
	// of them; DistinctOverflow is set past that.
	Distinct         map[string]int
	DistinctOverflow bool
	// Numbers are the numeric values: their count, bounds and whether all
	// integers fit INT32.
	Numbers        int
	MinNum, MaxNum float64
	IntsFitInt32   bool
	// MinLen and MaxLen bound the strings' lengths in characters.
	MinLen, MaxLen int
	// Decimals counts strings written as decimal numbers ("12.50", "-3"),
	// the way a DECIMAL field may be sent.
	Decimals int
	// Members are the profiles of an object's members; Items of an
	// array's elements.
	Members []*FieldProfile
	Items   *FieldProfile
	// IDs are the distinct string or integer values of an identifier
	// field (one that declares an identifier), in order of first sight.
	IDs []string

	templates *templateInference
	ids       map[string]bool
	keepIDs   bool
	// objects and arrays collect raw member values to profile a level
	// deeper once this level is done.
	objects [][]byte
}

// KindName names a kind index of FieldProfile.Kinds.
func KindName(k int) string { return kindNames[k] }

// Absent is how many objects lacked the field.
func (f *FieldProfile) Absent() int { return f.Seen - f.Present - f.Null }

// Template is the template most of the field's strings follow and how
// many do ("" when none has a template shape).
func (f *FieldProfile) Template() (string, int) {
	if f.templates == nil {
		return "", 0
	}
	return f.templates.best()
}

// majorityKind is the kind most present values have, and how many.
func (f *FieldProfile) majorityKind() (int, int) {
	best, n := -1, 0
	for k, c := range f.Kinds {
		if c > n {
			best, n = k, c
		}
	}
	return best, n
}

// majorityShape is the string shape most strings have, and how many:
// templates differing only in run lengths count as one.
func (f *FieldProfile) majorityShape() (string, int) {
	best, n := "", 0
	for _, s := range slices.Sorted(maps.Keys(f.Shapes)) {
		if c := f.Shapes[s]; c > n && !isTemplate(s) {
			best, n = s, c
		}
	}
	if t, c := f.Template(); c > n {
		best, n = t, c
	}
	return best, n
}

func isTemplate(shape string) bool { return bytes.IndexByte([]byte(shape), '{') >= 0 }

func newFieldProfile(path, name string, decl *contractv1.Field) *FieldProfile {
	f := &FieldProfile{Path: path, Name: name, Declared: decl, Shapes: map[string]int{}, Distinct: map[string]int{},
		MinNum: math.Inf(1), MaxNum: math.Inf(-1), IntsFitInt32: true, MinLen: -1}
	if decl.GetIdentifier() != nil {
		f.keepIDs, f.ids = true, map[string]bool{}
	}
	return f
}

// ProfileRecords profiles records against the active contract's fields
// (nil for none): every member of every object, declared or not, down to
// a bounded depth. It never fails: a record that cannot be read is counted
// as malformed, with why.
func ProfileRecords(active *contractv1.Contract, records []Record) *Profile {
	p := &Profile{Unnamable: map[string]int{}, byPath: map[string]*FieldProfile{}}
	top := &level{p: p, path: "", decls: active.GetFields(), byName: map[string]*FieldProfile{}}
	parts := map[string]bool{}
	var objs [][]byte
	var csv []Record
	for _, r := range records {
		p.Records++
		parts[r.Partition] = true
		switch r.Format {
		case recordv1.Format_FORMAT_CSV:
			csv = append(csv, r)
		default:
			objs = append(objs, r.Raw)
		}
	}
	p.Partitions = slices.Sorted(maps.Keys(parts))
	top.declare()
	top.objects(objs, 0)
	top.csvRows(csv)
	top.finish(0)
	p.Fields = top.fields
	return p
}

// level profiles the members of the objects of one place in the records:
// the top level, the members of an object field, or an array's objects.
type level struct {
	p      *Profile
	path   string // the dotted prefix of members ("" at the top, "address.")
	decls  []*contractv1.Field
	fields []*FieldProfile
	byName map[string]*FieldProfile
}

// declare creates the profiles of the declared members first, so they
// keep the contract's order.
func (l *level) declare() {
	for _, d := range l.decls {
		l.member(d.GetName(), d)
	}
}

func (l *level) member(name string, decl *contractv1.Field) *FieldProfile {
	if f := l.byName[name]; f != nil {
		return f
	}
	if len(l.fields) >= maxFieldsPerObject {
		return nil
	}
	f := newFieldProfile(l.path+name, name, decl)
	l.byName[name] = f
	l.fields = append(l.fields, f)
	l.p.byPath[f.Path] = f
	return f
}

// schema lays out every member known at this level as a STRING field, so
// the decoder keeps each value in the JSON kind it was sent in (objects
// and arrays as raw JSON, since no members are declared).
func (l *level) schema() *record.Schema {
	fields := make([]*contractv1.Field, 0, len(l.fields))
	for _, f := range l.fields {
		fields = append(fields, &contractv1.Field{Name: f.Name, Type: contractv1.FieldType_FIELD_TYPE_STRING})
	}
	s, err := record.NewSchema(fields)
	if err != nil {
		// Names are checked before they become members; a schema of
		// them cannot fail.
		panic(fmt.Sprintf("infer: schema of %d checked names: %v", len(fields), err))
	}
	return s
}

// objects profiles JSON objects at this level: a first pass learns the
// member names, a second reads the values.
func (l *level) objects(objs [][]byte, depth int) {
	if len(objs) == 0 {
		return
	}
	dec := record.NewDecoder(l.schema(), record.Options{})
	grew := false
	for _, raw := range objs {
		b, err := dec.Decode(recordv1.Format_FORMAT_JSON, raw, 0)
		if err != nil || len(b.Records) != 1 || b.Records[0].Err != nil {
			continue // counted as malformed in the second pass
		}
		for _, name := range b.Records[0].Unknown {
			grew = l.learn(string(name)) || grew
		}
		dec.Recycle()
	}
	if grew {
		dec = record.NewDecoder(l.schema(), record.Options{})
	}
	schema := l.schemaFields()
	for _, raw := range objs {
		b, err := dec.Decode(recordv1.Format_FORMAT_JSON, raw, 0)
		var rec *record.Record
		switch {
		case err != nil:
			l.malformed(err.Error())
		case len(b.Records) != 1:
			l.malformed("not one JSON object")
		case b.Records[0].Err != nil:
			l.malformed(b.Records[0].Err.GetMessage())
		default:
			rec = &b.Records[0]
		}
		if rec == nil {
			continue
		}
		for i, f := range schema {
			f.Seen++
			f.add(rec.Values[i], false, depth)
		}
		dec.Recycle()
	}
}

// schemaFields returns the members in schema slot order.
func (l *level) schemaFields() []*FieldProfile { return slices.Clone(l.fields) }

// learn adds a member name first seen in a record; it reports whether the
// level grew. Names a contract cannot declare are counted apart.
func (l *level) learn(name string) bool {
	if l.byName[name] != nil {
		return false
	}
	if !fieldName.MatchString(name) || len(name) > 128 {
		l.p.Unnamable[l.path+name]++
		return false
	}
	return l.member(name, nil) != nil
}

func (l *level) malformed(why string) {
	if l.path != "" {
		return // a nested value that did not decode was already counted with its record
	}
	l.p.Malformed++
	if len(l.p.MalformedExamples) < maxExamples {
		l.p.MalformedExamples = append(l.p.MalformedExamples, why)
	}
}

// csvRows profiles CSV records: each is its header line and its row, and
// each cell is read by its text, as a number column would read it.
func (l *level) csvRows(rows []Record) {
	for _, r := range rows {
		header, _, ok := bytes.Cut(r.Raw, []byte("\n"))
		if !ok {
			l.malformed("a CSV record without its header line")
			continue
		}
		names, err := csvHeader(header)
		if err != nil {
			l.malformed(err.Error())
			continue
		}
		fields := make([]*contractv1.Field, 0, len(names))
		var profiles []*FieldProfile
		for _, n := range names {
			if !fieldName.MatchString(n) {
				l.p.Unnamable[n]++
				continue
			}
			l.learn(n)
			if f := l.byName[n]; f != nil {
				fields = append(fields, &contractv1.Field{Name: n, Type: contractv1.FieldType_FIELD_TYPE_STRING})
				profiles = append(profiles, f)
			}
		}
		s, err := record.NewSchema(fields)
		if err != nil {
			l.malformed(fmt.Sprintf("CSV header: %v", err))
			continue
		}
		b, err := record.NewDecoder(s, record.Options{}).Decode(recordv1.Format_FORMAT_CSV, r.Raw, 0)
		if err != nil || len(b.Records) != 1 || b.Records[0].Err != nil {
			why := "not one CSV row under its header"
			switch {
			case err != nil:
				why = err.Error()
			case len(b.Records) == 1:
				why = b.Records[0].Err.GetMessage()
			}
			l.malformed(why)
			continue
		}
		// Every declared or seen field could have been a column; one that
		// is not in this file's header is absent from the record.
		for _, f := range l.fields {
			f.Seen++
		}
		for i, f := range profiles {
			f.add(b.Records[0].Values[i], true, 0)
		}
	}
}

// csvHeader splits a CSV header line into names.
func csvHeader(line []byte) ([]string, error) {
	names, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		return nil, fmt.Errorf("CSV header: %v", err)
	}
	return names, nil
}

// finish profiles the objects collected one level down, then sorts out
// each field's members.
func (l *level) finish(depth int) {
	for _, f := range l.fields {
		f.finish(l.p, depth)
	}
}

func (f *FieldProfile) finish(p *Profile, depth int) {
	if len(f.objects) > 0 && depth < maxNesting {
		sub := &level{p: p, path: f.Path + ".", decls: f.Declared.GetFields(), byName: map[string]*FieldProfile{}}
		sub.declare()
		sub.objects(f.objects, depth+1)
		sub.finish(depth + 1)
		f.Members = sub.fields
	}
	f.objects = nil
	if f.Items != nil {
		f.Items.finish(p, depth+1)
	}
}

// add counts one value. csv marks a CSV cell, whose text is typed by how
// it reads.
func (f *FieldProfile) add(v record.Value, csv bool, depth int) {
	switch v.Kind() {
	case record.KindAbsent:
		return
	case record.KindNull:
		f.Null++
		return
	}
	f.Present++
	switch v.Kind() {
	case record.KindString, record.KindRaw:
		text := string(v.Bytes())
		if csv {
			if isNum, isInt := jsonNumber(text); isNum {
				f.number(text, isInt)
				return
			}
			if text == "true" || text == "false" {
				f.Kinds[kindBool]++
				f.example(text)
				return
			}
		}
		f.str(text)
	case record.KindNumber:
		f.number(string(v.Bytes()), v.IsInt())
	case record.KindBool:
		f.Kinds[kindBool]++
		f.example(string(record.AppendValue(nil, v)))
	case record.KindObject:
		f.Kinds[kindObject]++
		if depth < maxNesting {
			f.objects = append(f.objects, v.Bytes())
		}
	case record.KindArray:
		f.Kinds[kindArray]++
		if depth >= maxNesting {
			return
		}
		if f.Items == nil {
			f.Items = newFieldProfile(f.Path+contract.ItemsSuffix, "", f.Declared.GetItems())
			f.Items.keepIDs = false
		}
		_ = record.Elements(v, func(_ int, e record.Value) bool {
			f.Items.Seen++
			f.Items.add(e, false, depth+1)
			return true
		})
	}
}

func (f *FieldProfile) number(text string, isInt bool) {
	x, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(x, 0) {
		// Out of float64's range: a number no numeric type holds.
		f.Kinds[kindNumber]++
		f.example(text)
		return
	}
	if isInt {
		f.Kinds[kindInteger]++
		if i, err := strconv.ParseInt(text, 10, 64); err != nil || i < math.MinInt32 || i > math.MaxInt32 {
			f.IntsFitInt32 = false
		}
		f.id(text)
	} else {
		f.Kinds[kindNumber]++
	}
	f.Numbers++
	f.MinNum, f.MaxNum = math.Min(f.MinNum, x), math.Max(f.MaxNum, x)
	f.example(text)
}

func (f *FieldProfile) str(s string) {
	f.Kinds[kindString]++
	if decimalText(s) {
		f.Decimals++
	}
	sh := stringShape(s)
	f.Shapes[sh]++
	if sh == shape.String || isTemplate(sh) {
		// Only text that is no named shape can follow a template: a UUID
		// cut at its digits is not "{alpha:1}{digits:3}…".
		if f.templates == nil {
			f.templates = newTemplateInference()
		}
		f.templates.add(s)
	}
	n := utf8.RuneCountInString(s)
	if f.MinLen < 0 || n < f.MinLen {
		f.MinLen = n
	}
	f.MaxLen = max(f.MaxLen, n)
	if !f.DistinctOverflow {
		if _, ok := f.Distinct[s]; ok || len(f.Distinct) < maxDistinct {
			f.Distinct[s]++
		} else {
			f.DistinctOverflow = true
			f.Distinct = nil
		}
	}
	f.id(s)
	f.example(strconv.Quote(s))
}

func (f *FieldProfile) id(s string) {
	if !f.keepIDs || f.ids[s] || len(f.IDs) >= maxIDValues {
		return
	}
	f.ids[s] = true
	f.IDs = append(f.IDs, s)
}

func (f *FieldProfile) example(js string) {
	if len(f.Examples) >= maxExamples {
		return
	}
	if len(js) > maxExampleLen {
		js = js[:maxExampleLen] + "…"
	}
	if !slices.Contains(f.Examples, js) {
		f.Examples = append(f.Examples, js)
	}
}
