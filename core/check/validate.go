package check

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Failure is one failed check of one record.
type Failure struct {
	// Check indexes Plan.Checks.
	Check int
	Code  recordv1.ErrorCode
	// Field is the failing field's path; empty for the whole record.
	Field   string
	Message string
}

// RecordResult is the verdict on one record.
type RecordResult struct {
	Index, Position int64
	// Failures lists every failed check; nil when the record passed all.
	Failures []Failure
	// Quarantined is set when a BLOCK or QUARANTINE check failed (or the
	// record did not decode): the record must not pass.
	Quarantined bool
	// Alerted is set when an ALERT check failed; the record still passes.
	Alerted bool
}

// CheckResult counts one check's failures in a batch.
type CheckResult struct {
	Failures int64
	// Samples holds the source positions of the first failures.
	Samples []int64
	// Blocked is set when a BLOCK check exceeded its threshold.
	Blocked bool
}

// IdentifierValues are one identifier field's values in a batch, extracted
// so the gate resolves them in one idmap call.
type IdentifierValues struct {
	Field, Namespace, Format string
	// Values refer into the batch's records (number text or string bytes).
	Values [][]byte
	// Records holds the record index of each value.
	Records []int
}

// BatchResult is the outcome of validating one batch.
type BatchResult struct {
	Records []RecordResult
	// Checks is indexed like Plan.Checks.
	Checks []CheckResult
	// Blocked is set when any BLOCK check exceeded its threshold: nothing
	// of the batch may propagate.
	Blocked bool
	// Stats feeds the partition's statistical monitors.
	Stats Stats
	// Identifiers holds the values of fields with a match_rate check.
	Identifiers []IdentifierValues
	// Unknown counts undeclared top-level fields by name.
	Unknown map[string]int64

	// scratch is the memory this result was built in, for Plan.Recycle.
	scratch *scratch
}

// scratch is the per-record memory of a validation, kept for the next
// one: a caller validating batch after batch gives each result back with
// Plan.Recycle once it is done with it.
type scratch struct {
	records []RecordResult
	seen    []map[uint64]int32
	ids     []IdentifierValues
	fails   []Failure
}

// Recycle gives the memory of res back to p for a later validation of
// p's: res, its records' failures and its identifier values must not be
// used after it. Not calling it only costs allocations.
func (p *Plan) Recycle(res *BatchResult) {
	sc := res.scratch
	if sc == nil {
		return
	}
	res.scratch, res.Records, res.Identifiers = nil, nil, nil
	// Keep nothing of the batch alive: failures hold messages, identifier
	// values point into the records.
	clear(sc.records)
	clear(sc.fails)
	for i := range sc.ids {
		clear(sc.ids[i].Values)
	}
	p.scratch.Put(sc)
}

// BlockReasons describes each blocking check: its name, failure count,
// threshold and sample positions, for the caller's error message.
func (p *Plan) BlockReasons(r *BatchResult) []string {
	var out []string
	for i, cr := range r.Checks {
		if !cr.Blocked {
			continue
		}
		ch := p.checks[i]
		pos := make([]string, len(cr.Samples))
		for j, s := range cr.Samples {
			pos[j] = fmt.Sprint(s)
		}
		out = append(out, fmt.Sprintf("check %s (%s) failed %d of %d records, over its threshold of %s; sample positions %s",
			ch.Name, ch.Rule, cr.Failures, len(r.Records), ch.Threshold, strings.Join(pos, ", ")))
	}
	return out
}

// validator is the state of one Validate call.
type validator struct {
	p     *Plan
	res   *BatchResult
	fails []Failure
	key   []byte
	key2  []byte
	seed  maphash.Seed
	seen  []map[uint64]int32 // per unique plan: key hash → first record
	clash []map[string]int32 // per unique plan: keys whose hash collided
	stats []FieldStats
	recs  []record.Record
	// closed is scratch space for objectAdditional.
	closed []undeclaredIn
	// windows are the partition's spans for the in_partition checks; nil
	// when the batch's partition is not known.
	windows []partitionWindow
	// numbers are the current record's numeric values, added to the
	// means only if the record is not quarantined: a held value is no
	// part of what the partition's data says.
	numbers []pendingNumber
}

// pendingNumber is a numeric value of a field slot.
type pendingNumber struct {
	slot int
	x    float64
}

// Validate runs the record-level checks on a decoded batch. It does not
// allocate per record on the happy path: failures, stats and key sets live in
// per-batch slabs and maps sized once. in_partition checks need the batch's
// partition and are skipped here; ValidatePartition runs them.
func (p *Plan) Validate(records []record.Record) *BatchResult {
	return p.ValidatePartition(records, "")
}

// ValidatePartition is Validate for a batch sent in partition, which also
// runs the in_partition checks: each record's event time must lie in the
// partition's span (see PartitionWindow). An empty partition skips them.
func (p *Plan) ValidatePartition(records []record.Record, partition string) *BatchResult {
	n := len(records)
	sc, _ := p.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	// Recycle cleared what the last batch wrote; record(i) sets every
	// field of its result.
	if cap(sc.records) < n {
		sc.records = make([]RecordResult, n)
	}
	sc.records = sc.records[:n]
	v := &validator{p: p, recs: records, seed: maphash.MakeSeed(), windows: p.windows(partition),
		stats: make([]FieldStats, p.schema.Len()), fails: sc.fails[:0],
		res: &BatchResult{Records: sc.records, Checks: make([]CheckResult, len(p.checks)), scratch: sc}}
	for k := range p.uniques {
		if k < len(sc.seen) {
			clear(sc.seen[k])
		} else {
			sc.seen = append(sc.seen, make(map[uint64]int32, n))
		}
		v.seen = append(v.seen, sc.seen[k])
		v.clash = append(v.clash, nil)
	}
	for k, slot := range p.ids {
		id := p.schema.Field(slot).Decl.GetIdentifier()
		if k == len(sc.ids) {
			sc.ids = append(sc.ids, IdentifierValues{Values: make([][]byte, 0, n), Records: make([]int, 0, n)})
		}
		ids := &sc.ids[k]
		*ids = IdentifierValues{Field: p.schema.Field(slot).Path, Namespace: id.GetNamespace(), Format: id.GetFormat(),
			Values: ids.Values[:0], Records: ids.Records[:0]}
	}
	v.res.Identifiers = sc.ids[:len(p.ids)]
	for i := range records {
		v.record(i)
	}
	v.finish()
	sc.fails = v.fails
	return v.res
}

func (v *validator) fail(check int, field string, pos int64, msg string) {
	ch := &v.p.checks[check]
	v.fails = append(v.fails, Failure{Check: check, Code: ch.Code, Field: field, Message: msg})
	cr := &v.res.Checks[check]
	cr.Failures++
	if len(cr.Samples) < v.p.samples {
		cr.Samples = append(cr.Samples, pos)
	}
}

func (v *validator) record(i int) {
	r := &v.recs[i]
	p := v.p
	start := len(v.fails)
	v.numbers = v.numbers[:0]
	if r.Err != nil {
		v.fail(0, r.Err.GetField(), r.Position, r.Err.GetMessage())
		v.fails[len(v.fails)-1].Code = r.Err.GetCode()
	} else {
		v.fields(r)
		for k := range p.rules {
			v.rule(&p.rules[k], r)
		}
		for k := range p.uniques {
			v.unique(k, i)
		}
		for k := range p.cels {
			if msg := p.evalCEL(&p.cels[k], r.Values); msg != "" {
				v.fail(p.cels[k].check, "", r.Position, msg)
			}
		}
		if v.windows != nil {
			v.inPartition(r)
		}
		v.additional(r)
		v.objectAdditional(r)
		v.unknown(r)
	}
	rr := RecordResult{Index: r.Index, Position: r.Position}
	if end := len(v.fails); end > start {
		rr.Failures = v.fails[start:end:end]
		for _, f := range rr.Failures {
			switch p.checks[f.Check].Policy {
			case contractv1.Policy_POLICY_ALERT:
				rr.Alerted = true
			default:
				rr.Quarantined = true
			}
		}
	}
	if !rr.Quarantined {
		for _, n := range v.numbers {
			v.stats[n.slot].AddNumber(n.x)
		}
	}
	v.res.Records[i] = rr
}

// fields runs the implied checks of every field and gathers statistics.
func (v *validator) fields(r *record.Record) {
	vals := r.Values
	for k := range v.p.fields {
		fp := &v.p.fields[k]
		if fp.parent >= 0 && vals[fp.parent].Kind() != record.KindObject {
			continue // members of a missing or mistyped object are not checked
		}
		val := vals[fp.slot]
		st := &v.stats[fp.slot]
		st.Count++
		if !val.Present() {
			st.Nulls++
			if fp.required >= 0 {
				v.fail(fp.required, fp.path, r.Position, missing(fp.path, val))
			}
			continue
		}
		if fp.oneOf >= 0 {
			v.oneOf(fp, val, st, r.Position)
			continue
		}
		if fp.typeCheck >= 0 && !typeOK(fp.typ, fp.layout, fp.items, val) {
			v.fail(fp.typeCheck, fp.path, r.Position, fmt.Sprintf("field %s: got %s, want %s%s; send the declared type (values are never coerced)",
				fp.path, describe(val), contract.ShortName(fp.typ), layoutNote(fp)))
			continue // a mistyped value is not checked further
		}
		if fp.typeCheck >= 0 && fp.precision > 0 {
			if msg := decimalFits(val, fp.precision, fp.scale); msg != "" {
				v.fail(fp.typeCheck, fp.path, r.Position, fmt.Sprintf("field %s: %s does not fit DECIMAL(%d,%d): %s", fp.path, describe(val), fp.precision, fp.scale, msg))
				continue
			}
		}
		if contract.IsNumeric(fp.typ) {
			if f, ok := numeric(val); ok {
				v.numbers = append(v.numbers, pendingNumber{fp.slot, f})
			}
		}
		if fp.patternCheck >= 0 && val.Kind() == record.KindString && !fp.pattern.Match(val.Bytes()) {
			v.fail(fp.patternCheck, fp.path, r.Position, fmt.Sprintf("field %s: %s does not match pattern %s", fp.path, describe(val), fp.pattern))
		}
		if fp.enumCheck >= 0 && val.Kind() == record.KindString && !inEnum(fp.enum, val.Bytes()) {
			v.fail(fp.enumCheck, fp.path, r.Position, fmt.Sprintf("field %s: %s is not one of %s", fp.path, describe(val), strings.Join(fp.enum, ", ")))
		}
		if fp.rangeCheck >= 0 && fp.applies(val) && !inRange(val, fp.min, fp.max) {
			v.fail(fp.rangeCheck, fp.path, r.Position, fmt.Sprintf("field %s: %s is outside %s", fp.path, describe(val), bounds(fp.min, fp.max)))
		}
		if fp.lengthCheck >= 0 && !fp.lengthOK(val) {
			n, _ := length(val)
			v.fail(fp.lengthCheck, fp.path, r.Position, fmt.Sprintf("field %s: length %d is outside %s", fp.path, n, lengthBounds(fp.minLen, fp.maxLen)))
		}
		if fp.formatCheck >= 0 && (val.Kind() == record.KindString || val.IsInt()) && !fp.format.Valid(string(val.Bytes())) {
			v.fail(fp.formatCheck, fp.path, r.Position, fmt.Sprintf("field %s: %s is not a valid %s identifier", fp.path, describe(val), v.p.schema.Field(fp.slot).Decl.GetIdentifier().GetFormat()))
		}
	}
	for k, slot := range v.p.ids {
		val := vals[slot]
		if val.Kind() == record.KindString || val.Kind() == record.KindNumber {
			ids := &v.res.Identifiers[k]
			ids.Values = append(ids.Values, val.Bytes())
			ids.Records = append(ids.Records, int(r.Index))
			v.stats[slot].IDs++
		}
	}
}

// declaredOK reports whether a present value passes every implied value
// check of its field: the shape "declared" of a one_of check.
func (fp *fieldPlan) declaredOK(val record.Value) bool {
	if fp.typeCheck >= 0 && (!typeOK(fp.typ, fp.layout, fp.items, val) || fp.precision > 0 && decimalFits(val, fp.precision, fp.scale) != "") {
		return false
	}
	switch {
	case fp.patternCheck >= 0 && val.Kind() == record.KindString && !fp.pattern.Match(val.Bytes()),
		fp.enumCheck >= 0 && val.Kind() == record.KindString && !inEnum(fp.enum, val.Bytes()),
		fp.rangeCheck >= 0 && fp.applies(val) && !inRange(val, fp.min, fp.max),
		fp.formatCheck >= 0 && (val.Kind() == record.KindString || val.IsInt()) && !fp.format.Valid(string(val.Bytes())):
		return false
	}
	return fp.lengthCheck < 0 || fp.lengthOK(val)
}

// lengthOK says whether val's length (a string's in characters, an
// array's in elements) is within the field's bounds; other values have
// none to check. A string of b bytes has between b/4 and b characters, so
// its byte length decides most strings without counting them.
func (fp *fieldPlan) lengthOK(val record.Value) bool {
	if fp.anyType && val.Kind() != record.KindString {
		return true // a JSON field's lengths are its strings'
	}
	if val.Kind() == record.KindString {
		b := int64(len(val.Bytes()))
		if (b+3)/4 >= fp.minLen && (fp.maxLen < 0 || b <= fp.maxLen) {
			return true
		}
	}
	n, ok := length(val)
	return !ok || n >= fp.minLen && (fp.maxLen < 0 || n <= fp.maxLen)
}

// applies reports whether a range applies to val: to every value of a
// numeric field (a DECIMAL sent as a string too), to the numbers of a
// JSON field only, whose strings are text, not numbers.
func (fp *fieldPlan) applies(val record.Value) bool {
	return !fp.anyType || val.Kind() == record.KindNumber
}

// oneOf judges a field with a one_of check: the value passes when it has
// one of the listed shapes. Numeric statistics count values that pass as
// the declared type.
func (v *validator) oneOf(fp *fieldPlan, val record.Value, st *FieldStats, pos int64) {
	shapes := v.p.checks[fp.oneOf].Shapes
	ok := false
	for _, sh := range shapes {
		if (sh.Declared && fp.declaredOK(val)) || sh.Match(val) {
			ok = true
			break
		}
	}
	if !ok {
		v.fail(fp.oneOf, fp.path, pos, fmt.Sprintf("field %s: %s is none of the shapes %s", fp.path, describe(val), shapeNames(fp, shapes)))
		return
	}
	if contract.IsNumeric(fp.typ) && typeOK(fp.typ, fp.layout, fp.items, val) {
		if f, ok := numeric(val); ok {
			v.numbers = append(v.numbers, pendingNumber{fp.slot, f})
		}
	}
}

func missing(path string, v record.Value) string {
	if v.Kind() == record.KindNull {
		return fmt.Sprintf("field %s: null, but it is required; send a value", path)
	}
	return fmt.Sprintf("field %s: absent, but it is required; send a value", path)
}

func layoutNote(fp *fieldPlan) string {
	switch fp.typ {
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		if fp.layout == "" {
			return " as an RFC 3339 string"
		}
		return " in layout " + fp.layout
	case contractv1.FieldType_FIELD_TYPE_DATE:
		if fp.layout == "" {
			return " as a YYYY-MM-DD string"
		}
		return " in layout " + fp.layout
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
		return " (an integer literal without fraction or exponent)"
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		return ` (a JSON number, or the string "NaN", "Infinity" or "-Infinity")`
	}
	return ""
}

func inEnum(enum []string, b []byte) bool {
	for _, e := range enum {
		if e == string(b) {
			return true
		}
	}
	return false
}

func bounds(lo, hi float64) string {
	switch {
	case lo == lo && hi == hi:
		return fmt.Sprintf("[%g, %g]", lo, hi)
	case lo == lo:
		return fmt.Sprintf("[%g, ∞)", lo)
	}
	return fmt.Sprintf("(-∞, %g]", hi)
}

func lengthBounds(lo, hi int64) string {
	if hi < 0 {
		return fmt.Sprintf("[%d, ∞)", lo)
	}
	return fmt.Sprintf("[%d, %d]", lo, hi)
}

func (v *validator) rule(vr *valueRule, r *record.Record) {
	fp := &v.p.fields[vr.slot]
	if fp.parent >= 0 && r.Values[fp.parent].Kind() != record.KindObject {
		return
	}
	val := r.Values[vr.slot]
	switch vr.kind {
	case KindRequired:
		if !val.Present() {
			v.fail(vr.check, fp.path, r.Position, missing(fp.path, val))
		}
	case KindNotNull:
		if val.Kind() == record.KindNull {
			v.fail(vr.check, fp.path, r.Position, fmt.Sprintf("field %s: null; send a value or leave the field out", fp.path))
		}
	case KindPattern:
		if val.Kind() == record.KindString && !vr.re.Match(val.Bytes()) {
			v.fail(vr.check, fp.path, r.Position, fmt.Sprintf("field %s: %s does not match pattern %s", fp.path, describe(val), vr.re))
		}
	case KindRange:
		if val.Present() && fp.applies(val) && !inRange(val, vr.min, vr.max) {
			v.fail(vr.check, fp.path, r.Position, fmt.Sprintf("field %s: %s is outside %s", fp.path, describe(val), bounds(vr.min, vr.max)))
		}
	}
}

// appendKey appends a record's key: each field's kind and length-prefixed
// bytes, so ("a","bc") and ("ab","c") differ. It reports false when a key
// field is absent or null: required checks report those, not uniqueness.
func appendKey(dst []byte, vals []record.Value, slots []int) ([]byte, bool) {
	for _, s := range slots {
		val := vals[s]
		if !val.Present() {
			return dst, false
		}
		b := val.Bytes()
		dst = append(dst, byte(val.Kind()))
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst, true
}

// unique finds duplicate keys by hash with exact confirmation, so the happy
// path stores 12 bytes per record and allocates nothing.
func (v *validator) unique(k, i int) {
	up := &v.p.uniques[k]
	r := &v.recs[i]
	key, ok := appendKey(v.key[:0], r.Values, up.slots)
	v.key = key
	if !ok {
		return
	}
	h := maphash.Bytes(v.seed, key)
	first, hit := v.seen[k][h]
	if !hit {
		v.seen[k][h] = int32(i)
		return
	}
	v.key2, _ = appendKey(v.key2[:0], v.recs[first].Values, up.slots)
	if !bytes.Equal(key, v.key2) {
		// A hash collision between different keys: fall back to exact keys.
		if v.clash[k] == nil {
			v.clash[k] = map[string]int32{}
		}
		if first, hit = v.clash[k][string(key)]; !hit {
			v.clash[k][string(key)] = int32(i)
			return
		}
	}
	ch := v.p.checks[up.check]
	var parts []string
	for _, s := range up.slots {
		parts = append(parts, v.p.schema.Field(s).Path+"="+describe(r.Values[s]))
	}
	v.fail(up.check, ch.Field, r.Position, fmt.Sprintf("duplicate key (%s), first seen at position %d; keys must be unique in a batch",
		strings.Join(parts, ", "), v.recs[first].Position))
}

func (v *validator) unknown(r *record.Record) {
	if len(r.Unknown) == 0 {
		return
	}
	if v.res.Unknown == nil {
		v.res.Unknown = map[string]int64{}
	}
	for _, name := range r.Unknown {
		v.res.Unknown[string(name)]++
	}
}

// finish decides blocking and collects statistics.
func (v *validator) finish() {
	total := int64(len(v.recs))
	for i := range v.res.Checks {
		cr := &v.res.Checks[i]
		ch := &v.p.checks[i]
		if ch.Policy == contractv1.Policy_POLICY_BLOCK && cr.Failures > 0 && ch.Threshold.Exceeded(cr.Failures, total) {
			cr.Blocked = true
			v.res.Blocked = true
		}
	}
	v.res.Stats = Stats{Rows: total, Fields: make(map[string]FieldStats, len(v.stats))}
	for slot, st := range v.stats {
		v.res.Stats.Fields[v.p.schema.Field(slot).Path] = st
	}
}
