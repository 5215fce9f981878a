package mapping

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// FieldError is one failure of one record: Field is the canonical field
// index it concerns (-1 for the whole record, such as a decoding failure).
type FieldError struct {
	Field int
	Err   *recordv1.RecordError
}

// RecordID is a canonical record's deterministic id: the SHA-256 of a
// length-prefixed encoding of the subject, the canonical model name and
// version and, for each canonical key field in declaration order, its name
// and canonical JSON value (every produced field when the model declares no
// key). The same order therefore gets the same id from any contract version
// and on every replay, so a downstream upsert is idempotent.
type RecordID [sha256.Size]byte

// String returns the id as 64 lower-case hex digits.
func (id RecordID) String() string { return hex.EncodeToString(id[:]) }

// Result is the outcome of one record: canonical values, or errors.
type Result struct {
	// Index and Position are the record's, as decoded.
	Index, Position int64
	// ID is the record id; zero when the record failed.
	ID RecordID
	// Values holds one value per canonical field, in the canonical model's
	// declaration order (see Plan.Fields); nil when the record failed.
	Values []Value
	// Errors lists every failure; empty exactly when Values is set.
	Errors []FieldError
}

// OK reports whether the record was mapped.
func (r *Result) OK() bool { return len(r.Errors) == 0 }

// RecordErrors returns the errors as protos, in order.
func (r *Result) RecordErrors() []*recordv1.RecordError {
	out := make([]*recordv1.RecordError, len(r.Errors))
	for i, e := range r.Errors {
		out[i] = e.Err
	}
	return out
}

// Lookup is the ids of one batch that go through one idmap translation,
// each once: the caller sends IDs in one Translate call and hands the
// answer to Resolve.
type Lookup struct {
	Namespace, From, To string
	// IDs are the distinct ids to translate, in order of first appearance.
	IDs []string

	index    map[string]int32
	answers  []Value
	statuses []idmapv1.TranslateStatus
	resolved bool
}

// Resolve records idmap's answer: values[i] and statuses[i] answer IDs[i],
// as in idmapv1.TranslateResponse.
func (l *Lookup) Resolve(values []string, statuses []idmapv1.TranslateStatus) error {
	if len(values) != len(l.IDs) || len(statuses) != len(l.IDs) {
		return fmt.Errorf("resolve %s/%s → %s/%s: idmap answered %d values and %d statuses for %d ids; the answer must be one per id",
			l.Namespace, l.From, l.Namespace, l.To, len(values), len(statuses), len(l.IDs))
	}
	l.answers = make([]Value, len(values))
	for i, v := range values {
		if statuses[i] == idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT {
			l.answers[i] = Value{kind: KindString, b: []byte(v)}
		}
	}
	l.statuses, l.resolved = statuses, true
	return nil
}

// ResolvePacked records idmap's answer given packed: value i is
// data[ends[i-1]:ends[i]] (from 0 for the first), statuses[i] its status.
// The values share data rather than being copied one by one.
func (l *Lookup) ResolvePacked(data []byte, ends []uint32, statuses []idmapv1.TranslateStatus) error {
	if len(ends) != len(l.IDs) || len(statuses) != len(l.IDs) {
		return fmt.Errorf("resolve %s/%s → %s/%s: idmap answered %d values and %d statuses for %d ids; the answer must be one per id",
			l.Namespace, l.From, l.Namespace, l.To, len(ends), len(statuses), len(l.IDs))
	}
	l.answers = make([]Value, len(ends))
	start := uint32(0)
	for i, end := range ends {
		if end < start || int(end) > len(data) {
			return fmt.Errorf("resolve %s/%s → %s/%s: idmap's value %d ends at %d, outside %d..%d", l.Namespace, l.From, l.Namespace, l.To, i, end, start, len(data))
		}
		if statuses[i] == idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT {
			l.answers[i] = Value{kind: KindString, b: data[start:end:end]}
		}
		start = end
	}
	l.statuses, l.resolved = statuses, true
	return nil
}

// Batch is one batch being mapped: Map has run every field that needs no
// idmap answer; Lookups lists the ids to translate; Results finishes.
type Batch struct {
	plan    *Plan
	recs    []record.Record
	vals    []Value
	errs    [][]FieldError
	lookups []*Lookup
	a       arena
	scratch []byte
	slabs   *slabs
}

// slabs are the per-record buffers of a batch. A plan keeps released ones
// for its next batches: a 1,000-record batch of a 12-field model holds
// about half a megabyte of values, and allocating it anew for every batch
// made the garbage collector a seventh of the adapter's time.
type slabs struct {
	vals    []Value
	errs    [][]FieldError
	results []Result
}

// slabs returns buffers for recs records of n fields, zeroed.
func (p *Plan) slabs(recs, n int) *slabs {
	s, _ := p.pool.Get().(*slabs)
	if s == nil {
		s = &slabs{}
	}
	if cap(s.vals) < recs*n {
		s.vals = make([]Value, recs*n)
	}
	if cap(s.errs) < recs {
		s.errs = make([][]FieldError, recs)
	}
	return s
}

// Release hands the batch's buffers back to its plan for later batches.
// The batch, and every Result and Value it returned, must not be used
// after it. Releasing is optional: a batch that is not released is simply
// collected.
func (b *Batch) Release() {
	s := b.slabs
	if s == nil {
		return
	}
	// Zero what was used, so pooled buffers keep no input alive and the
	// next batch starts from absent values and no errors.
	clear(s.vals[:cap(s.vals)])
	clear(s.errs[:cap(s.errs)])
	clear(s.results[:cap(s.results)])
	b.slabs, b.vals, b.errs, b.recs = nil, nil, nil, nil
	b.plan.pool.Put(s)
}

// Map runs the plan on decoded records. It never fails as a whole: records
// that did not decode, and fields that fail, become per-record errors.
// Identifier fields wait for their Lookups to be resolved.
func (p *Plan) Map(recs []record.Record) *Batch {
	b := p.Start(recs)
	b.MapRest()
	return b
}

// Start is Map's first step: it reads the identifier fields of every
// record, so the batch's Lookups are complete, and maps nothing else. A
// caller can send the lookups to idmap while MapRest maps the other
// fields: Resolve and MapRest touch nothing of each other's.
func (p *Plan) Start(recs []record.Record) *Batch {
	n := len(p.fields)
	b := &Batch{plan: p, recs: recs}
	b.slabs = p.slabs(len(recs), n)
	b.vals, b.errs = b.slabs.vals[:len(recs)*n], b.slabs.errs[:len(recs)]
	for _, t := range p.translations {
		b.lookups = append(b.lookups, &Lookup{Namespace: t.namespace, From: t.from, To: t.to, index: map[string]int32{}})
	}
	for i := range recs {
		b.mapRecord(i, b.vals[i*n:(i+1)*n:(i+1)*n], true)
	}
	return b
}

// MapRest is Map's second step, after Start: it maps every field that
// needs no idmap answer. A record's errors keep the order of its fields,
// whichever step found them.
func (b *Batch) MapRest() {
	n := len(b.plan.fields)
	for i := range b.recs {
		early := len(b.errs[i])
		b.mapRecord(i, b.vals[i*n:(i+1)*n:(i+1)*n], false)
		if early > 0 && len(b.errs[i]) > early {
			slices.SortStableFunc(b.errs[i], func(x, y FieldError) int { return cmp.Compare(x.Field, y.Field) })
		}
	}
}

// FieldValues returns record i's canonical values as far as they were
// produced, failed fields absent, for previews that show each field's
// outcome. Callers that emit records use Result.Values, which is nil for a
// failed record. Call it after Results.
func (b *Batch) FieldValues(i int) []Value {
	n := len(b.plan.fields)
	return b.vals[i*n : (i+1)*n : (i+1)*n]
}

// Lookups returns the translations the batch needs, one per (namespace,
// from, to) the plan uses; a lookup without IDs needs no call.
func (b *Batch) Lookups() []*Lookup { return b.lookups }

func (b *Batch) fail(i, field int, code recordv1.ErrorCode, path, msg string) {
	b.errs[i] = append(b.errs[i], FieldError{Field: field, Err: &recordv1.RecordError{Code: code, Field: path, Message: msg}})
}

// mapRecord maps record i into out: with ids, only its identifier
// fields (pending their translation) and whether it decoded at all;
// without, every other field.
func (b *Batch) mapRecord(i int, out []Value, ids bool) {
	rec := &b.recs[i]
	if rec.Err != nil {
		if ids {
			b.errs[i] = append(b.errs[i], FieldError{Field: -1, Err: rec.Err})
		}
		return
	}
	p := b.plan
	if ids && len(p.translations) == 0 {
		return // no field is translated
	}
	var act map[string]any
	for fi := range p.fields {
		f := &p.fields[fi]
		if ids != (f.op == opFrom && f.lookup >= 0) {
			continue
		}
		switch f.op {
		case opNone:
		case opConstant:
			out[fi] = f.constant
		case opExpr:
			if act == nil {
				act = p.activation(rec)
			}
			v, fl := f.eval(act, &b.a)
			if fl != nil {
				b.fail(i, fi, fl.code, f.name, fmt.Sprintf("%s: %s", f.name, fl.msg))
				continue
			}
			out[fi] = v
		case opFrom:
			sv := rec.Values[f.slot]
			if !sv.Present() {
				switch {
				case f.hasDef:
					out[fi] = f.def
				case f.required:
					b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, f.source,
						fmt.Sprintf("%s is %s but canonical field %s is required; send it or give the mapping a default", f.source, sv.Kind(), f.name))
				}
				continue
			}
			if f.values != nil {
				if sv.Kind() != record.KindString {
					b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, f.source, fmt.Sprintf("%s is a %s; its value map maps strings", f.source, sv.Kind()))
					continue
				}
				mapped, ok := f.values[string(sv.Bytes())]
				if !ok {
					b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_ENUM_MISMATCH, f.source,
						fmt.Sprintf("%s value %q has no canonical %s value; add it to mapping.fields.%s.values", f.source, clip(sv.Bytes()), f.name, f.name))
					continue
				}
				sv = record.StringValue(mapped)
			}
			if f.lookup >= 0 {
				b.pend(i, fi, f, sv, out)
				continue
			}
			v, fl := f.conv.convert(sv, &b.a)
			if fl != nil {
				b.fail(i, fi, fl.code, f.source, fmt.Sprintf("%s → %s: %s", f.source, f.name, fl.msg))
				continue
			}
			out[fi] = v
		}
	}
}

// pend registers an identifier for translation.
func (b *Batch) pend(i, fi int, f *fieldPlan, sv record.Value, out []Value) {
	var id []byte
	switch {
	case sv.IsInt(), sv.Kind() == record.KindString:
		id = sv.Bytes()
	default:
		b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, f.source,
			fmt.Sprintf("%s is a %s; identifiers are integers or strings", f.source, sv.Kind()))
		return
	}
	l := b.lookups[f.lookup]
	at, ok := l.index[string(id)]
	if !ok {
		at = int32(len(l.IDs))
		s := string(id)
		l.index[s] = at
		l.IDs = append(l.IDs, s)
	}
	out[fi] = Value{kind: kindPending, n: uint64(at)}
}

// Results finishes the batch: it applies the idmap answers and derives
// record ids. It fails only when a lookup with ids was not resolved.
func (b *Batch) Results() ([]Result, error) { return b.results(true) }

// Outcomes finishes the batch as Results does but leaves each Result's ID
// zero: for a caller that only needs which records fail and why, which
// saves a SHA-256 per record.
func (b *Batch) Outcomes() ([]Result, error) { return b.results(false) }

func (b *Batch) results(ids bool) ([]Result, error) {
	for _, l := range b.lookups {
		if len(l.IDs) > 0 && !l.resolved {
			return nil, fmt.Errorf("finish batch: the %d ids of %s/%s → %s/%s were not translated; resolve every lookup first", len(l.IDs), l.Namespace, l.From, l.Namespace, l.To)
		}
	}
	p := b.plan
	n := len(p.fields)
	if cap(b.slabs.results) < len(b.recs) {
		b.slabs.results = make([]Result, len(b.recs))
	}
	out := b.slabs.results[:len(b.recs)]
	for i := range b.recs {
		r := &out[i]
		r.Index, r.Position = b.recs[i].Index, b.recs[i].Position
		vals := b.vals[i*n : (i+1)*n : (i+1)*n]
		if len(b.lookups) > 0 && b.errs[i] == nil {
			b.translate(i, vals)
		}
		if b.errs[i] != nil {
			r.Errors = b.errs[i]
			continue
		}
		r.Values = vals
		if ids {
			r.ID = b.recordID(vals)
		}
	}
	return out, nil
}

// translate replaces the pending ids of record i by their translations.
func (b *Batch) translate(i int, vals []Value) {
	p := b.plan
	for fi := range vals {
		if vals[fi].kind != kindPending {
			continue
		}
		f := &p.fields[fi]
		l := b.lookups[f.lookup]
		at := vals[fi].n
		id := l.IDs[at]
		switch st := l.statuses[at]; st {
		case idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT:
			v, fl := b.answer(f, l.answers[at])
			if fl != nil {
				b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_ID_INVALID, f.source, fmt.Sprintf("%s %q translated to %s/%s: %s", f.source, clip([]byte(id)), l.Namespace, l.To, fl.msg))
				vals[fi] = Value{}
				continue
			}
			vals[fi] = v
		case idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS:
			b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_ID_UNMAPPED, f.source,
				fmt.Sprintf("%s %q has no %s translation in idmap namespace %s; load the pair (seam idmap import) and replay", f.source, clip([]byte(id)), l.To, l.Namespace))
			vals[fi] = Value{}
		case idmapv1.TranslateStatus_TRANSLATE_STATUS_INVALID:
			b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_ID_INVALID, f.source,
				fmt.Sprintf("%s %q is not a valid %s/%s id", f.source, clip([]byte(id)), l.Namespace, l.From))
			vals[fi] = Value{}
		default:
			b.fail(i, fi, recordv1.ErrorCode_ERROR_CODE_ID_INVALID, f.source,
				fmt.Sprintf("%s %q: idmap gave no status (%v) for it", f.source, clip([]byte(id)), st))
			vals[fi] = Value{}
		}
	}
}

// answer converts a translated id to the canonical field's type.
func (b *Batch) answer(f *fieldPlan, v Value) (Value, *failure) {
	if isInt(f.typ) {
		n, err := strconv.ParseInt(string(v.b), 10, 64)
		if err != nil || (f.typ == contractv1.FieldType_FIELD_TYPE_INT32 && int64(int32(n)) != n) {
			return Value{}, &failure{msg: fmt.Sprintf("idmap answered %q, which is not a %s", clip(v.b), contract.ShortName(f.typ))}
		}
		return IntValue(n), nil
	}
	return f.conv.fromString(v.b, &b.a)
}

// recordID hashes the record's identity; see RecordID.
func (b *Batch) recordID(vals []Value) RecordID {
	p := b.plan
	buf := b.scratch[:0]
	buf = appendPrefixed(buf, p.subject)
	buf = appendPrefixed(buf, p.canonicalName)
	buf = binary.BigEndian.AppendUint32(buf, uint32(p.canonicalVersion))
	add := func(fi int) {
		buf = appendPrefixed(buf, p.fields[fi].name)
		start := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		buf = vals[fi].AppendJSON(buf)
		binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	}
	if len(p.keys) > 0 {
		for _, fi := range p.keys {
			add(fi)
		}
	} else {
		for fi := range vals {
			if vals[fi].kind != KindAbsent {
				add(fi)
			}
		}
	}
	b.scratch = buf
	return sha256.Sum256(buf)
}

func appendPrefixed(dst []byte, b string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// FieldInfo describes one canonical field of a plan.
type FieldInfo struct {
	// Name is the canonical field name.
	Name string
	// Source is the dotted source path the value is read from, if any.
	Source string
	// Expr is the CEL expression that computes it, if any.
	Expr string
	// Mapped is false for a field the mapping does not produce.
	Mapped bool
}

// Fields describes the canonical fields in declaration order; Result.Values
// and FieldError.Field index into it.
func (p *Plan) Fields() []FieldInfo {
	out := make([]FieldInfo, len(p.fields))
	for i, f := range p.fields {
		out[i] = FieldInfo{Name: f.name, Source: f.source, Expr: f.expr, Mapped: f.op != opNone}
	}
	return out
}

// SourceValue returns the source value canonical field i reads from rec
// (absent for constants, expressions and failed records).
func (p *Plan) SourceValue(rec *record.Record, i int) record.Value {
	f := &p.fields[i]
	if f.op != opFrom || rec.Values == nil {
		return record.Value{}
	}
	return rec.Values[f.slot]
}

// Schema is the source contract's compiled schema: decode source records
// with it.
func (p *Plan) Schema() *record.Schema { return p.src }

// Subject is the source subject.
func (p *Plan) Subject() string { return p.subject }

// Canonical returns the canonical model name and version the plan maps to.
func (p *Plan) Canonical() (name string, version int32) { return p.canonicalName, p.canonicalVersion }

// Translations reports how many distinct idmap translations the plan uses.
func (p *Plan) Translations() int { return len(p.translations) }

// AppendJSON appends a mapped record (Result.Values) as one JSON object, in
// canonical declaration order, leaving out fields without a value.
func (p *Plan) AppendJSON(dst []byte, vals []Value) []byte {
	dst = append(dst, '{')
	first := true
	for fi := range vals {
		v := &vals[fi]
		if v.kind == KindAbsent {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, p.fields[fi].key...)
		dst = v.AppendJSON(dst)
	}
	return append(dst, '}')
}

// Struct returns a mapped record as a structpb object, for callers that
// sent objects.
func (p *Plan) Struct(vals []Value) *structpb.Struct {
	s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(vals))}
	for fi := range vals {
		if vals[fi].kind != KindAbsent {
			s.Fields[p.fields[fi].name] = vals[fi].Proto()
		}
	}
	return s
}
