package gate

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/seamdata/seam/core/lexical"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
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
			shape := shapeOf(v)
			key := f.Field + "\x00" + shape
			if out == nil {
				out = map[string]shapeFigure{}
			}
			sf, ok := out[key]
			if !ok {
				sf = shapeFigure{Field: f.Field, Shape: shape, Declared: declaredShape(plan.Schema().Field(slot).Decl), Sample: sampleOf(v)}
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
	schema := plan.Schema()
	// Per field, by shape; the lookup by the scratch bytes does not
	// allocate, only a shape seen first does. Records are walked one
	// after the other, each across its fields, so a record's values are
	// read while they are in the cache.
	type field struct {
		f       *record.Field
		scalar  bool
		byShape map[string]*shapeFigure
		last    *shapeFigure // values in a row mostly share a shape
	}
	fields := make([]field, schema.Len())
	for slot := range fields {
		f := schema.Field(slot)
		t := f.Type()
		fields[slot] = field{f: f, scalar: t != contractv1.FieldType_FIELD_TYPE_OBJECT && t != contractv1.FieldType_FIELD_TYPE_ARRAY}
	}
	var buf []byte
	for i := range b.Records {
		vals := b.Records[i].Values
		ok := passed(i)
		for slot := range fields {
			fd := &fields[slot]
			if !fd.scalar || slot >= len(vals) || !vals[slot].Present() {
				continue
			}
			v := vals[slot]
			buf = appendShape(buf[:0], v)
			sf := fd.last
			if sf == nil || sf.Shape != string(buf) {
				sf = fd.byShape[string(buf)]
			}
			if sf == nil {
				shape := string(buf)
				if len(fd.byShape) >= maxShapesPerField {
					shape = "mixed"
					sf = fd.byShape[shape]
				}
				if sf == nil {
					if fd.byShape == nil {
						fd.byShape = map[string]*shapeFigure{}
					}
					sf = &shapeFigure{Field: fd.f.Path, Shape: shape, Declared: declaredShape(fd.f.Decl), Sample: sampleOf(v)}
					fd.byShape[shape] = sf
				}
			}
			fd.last = sf
			sf.Count++
			if ok {
				sf.Passed++
			}
		}
	}
	var out map[string]shapeFigure
	for _, fd := range fields {
		for shape, sf := range fd.byShape {
			if out == nil {
				out = map[string]shapeFigure{}
			}
			out[fd.f.Path+"\x00"+shape] = *sf
		}
	}
	return out
}

// shapeOf names what a value looks like, coarsely enough that one
// changed source produces one shape: a UUID, a digit string, a date, an
// e-mail address, hex, a template of letters and digit runs such as
// "ACC-{digits:8}", or text.
func shapeOf(v record.Value) string { return string(appendShape(nil, v)) }

// appendShape appends the name of v's shape to buf.
func appendShape(buf []byte, v record.Value) []byte {
	switch v.Kind() {
	case record.KindString, record.KindRaw:
		b := v.Bytes()
		switch {
		case len(b) == 0:
			return append(buf, "empty string"...)
		case lexical.IsUUID(b):
			return append(buf, "uuid"...)
		case allDigits(b):
			return append(buf, "digit string"...)
		case isDecimal(b):
			// A decimal sent as text ("100.00", "-7.5"): how many digits
			// it has is its value, not its shape.
			return append(buf, "decimal string"...)
		case lexical.ParseDate(b):
			return append(buf, "date"...)
		}
		if _, ok := lexical.ParseRFC3339(b); ok {
			return append(buf, "timestamp"...)
		}
		if isEmail(b) {
			return append(buf, "email"...)
		}
		if isHex(b) {
			return append(buf, "hex"...)
		}
		if t, ok := appendTemplate(buf, b); ok {
			return t
		}
		return append(buf, "text"...)
	case record.KindNumber:
		return append(buf, "number"...)
	case record.KindBool:
		return append(buf, "boolean"...)
	case record.KindObject:
		return append(buf, "object"...)
	case record.KindArray:
		return append(buf, "array"...)
	}
	return append(buf, v.Kind().String()...)
}

// appendTemplate appends a short code of letters, digits and separators
// as its letters and separators with each run of digits as {digits:N}
// ("ACC-00012345" is "ACC-{digits:8}"). Values without a digit, longer
// than 40 bytes or with other characters are not codes: buf comes back
// unchanged and false.
func appendTemplate(buf, b []byte) ([]byte, bool) {
	if len(b) > 40 {
		return buf, false
	}
	start := len(buf)
	digits := 0
	seen := false
	flush := func() {
		if digits > 0 {
			buf = append(buf, "{digits:"...)
			buf = strconv.AppendInt(buf, int64(digits), 10)
			buf = append(buf, '}')
			digits = 0
		}
	}
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits++
			seen = true
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '-', c == '_', c == '.', c == '/', c == ':', c == '#':
			flush()
			buf = append(buf, c)
		default:
			return buf[:start], false
		}
	}
	flush()
	if !seen {
		return buf[:start], false
	}
	return buf, true
}

// isDecimal reports a decimal number written out: an optional sign,
// digits, a point and digits, an optional exponent ("-12.50", "1.5e3").
// Digits alone are a digit string.
func isDecimal(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	intPart := 0
	for intPart < len(b) && b[intPart] >= '0' && b[intPart] <= '9' {
		intPart++
	}
	if intPart == 0 || intPart == len(b) || b[intPart] != '.' {
		return false
	}
	b = b[intPart+1:]
	frac := 0
	for frac < len(b) && b[frac] >= '0' && b[frac] <= '9' {
		frac++
	}
	if frac == 0 {
		return false
	}
	b = b[frac:]
	if len(b) == 0 {
		return true
	}
	if b[0] != 'e' && b[0] != 'E' {
		return false
	}
	b = b[1:]
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	return len(b) > 0 && allDigits(b)
}

func isEmail(b []byte) bool {
	at := bytes.IndexByte(b, '@')
	return at > 0 && bytes.IndexByte(b[at+1:], '.') > 0 && bytes.IndexByte(b, ' ') < 0 && bytes.Count(b, []byte("@")) == 1
}

// isHex reports a hex string of at least 8 digits with letters and digits
// both (all digits is a digit string, all letters a word).
func isHex(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	var letters, digits bool
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			letters = true
		default:
			return false
		}
	}
	return letters && digits
}

func sampleOf(v record.Value) string {
	b := v.Bytes()
	if len(b) > 40 {
		return fmt.Sprintf("%q…", b[:40])
	}
	return fmt.Sprintf("%q", b)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
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
