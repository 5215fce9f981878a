package mapping_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record/recordtest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// build loads a source contract and canonical model from YAML fragments:
// source and canonical are flow lists of fields, fields is the flow map of
// mapping.fields.
func build(t testing.TB, source, canonical, fields string) (*contractv1.Contract, *contractv1.CanonicalModel) {
	t.Helper()
	src, err := contract.Load([]byte("subject: t.src\nowner: team\nfields: "+source+"\nmapping:\n  canonical: t.canon\n  fields: "+fields+"\n"), "source.yaml")
	if err != nil {
		t.Fatalf("load source: %v", err)
	}
	canon, err := contract.LoadCanonicalModel([]byte("name: t.canon\nowner: team\nfields: "+canonical+"\n"), "canonical.yaml")
	if err != nil {
		t.Fatalf("load canonical: %v", err)
	}
	return src, canon
}

func compile(t testing.TB, source, canonical, fields string) *mapping.Plan {
	t.Helper()
	src, canon := build(t, source, canonical, fields)
	p, err := mapping.CompileVersion(src, canon, 3, examples.CustomerCatalog())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// mapOne maps one NDJSON record and returns its canonical JSON or its
// errors; ids are answered from table.
func mapOne(t testing.TB, p *mapping.Plan, input string, table map[string]string) (string, []*recordv1.RecordError) {
	t.Helper()
	b := p.Map(decode(t, p, recordv1.Format_FORMAT_NDJSON, []byte(input)))
	resolveAll(t, b, fromTable(table))
	res, err := b.Results()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("got %d results, want 1", len(res))
	}
	if !res[0].OK() {
		if res[0].Values != nil {
			t.Errorf("failed record has values %v; want none", res[0].Values)
		}
		return "", res[0].RecordErrors()
	}
	return string(p.AppendJSON(nil, res[0].Values)), nil
}

func TestMapFeatures(t *testing.T) {
	t.Parallel()
	table := map[string]string{
		"0b8e5f6a-1c2d-4e3f-8a9b-000000000007": "7",
		"0b8e5f6a-1c2d-4e3f-8a9b-000000000008": "not-a-number",
	}
	tests := []struct {
		name, source, canonical, fields, input string
		want                                   string
	}{
		{"rename", `[{name: total, type: DOUBLE, required: true}]`, `[{name: amount, type: DOUBLE, required: true}]`,
			`{amount: {from: total}}`, `{"total":12.50}`, `{"amount":12.50}`},
		{"nested source path", `[{name: customer, type: OBJECT, required: true, fields: [{name: id, type: INT64, required: true}]}]`,
			`[{name: customer_id, type: INT64, required: true}]`, `{customer_id: {from: customer.id}}`,
			`{"customer":{"id":42,"name":"x"}}`, `{"customer_id":42}`},
		{"widening int32 to int64 and double", `[{name: a, type: INT32}, {name: b, type: INT32}]`, `[{name: a, type: INT64}, {name: b, type: DOUBLE}]`,
			`{a: {from: a}, b: {from: b}}`, `{"a":5,"b":6}`, `{"a":5,"b":6}`},
		{"cast string to int", `[{name: n, type: STRING}]`, `[{name: n, type: INT64}]`,
			`{n: {from: n, cast: {to: INT64}}}`, `{"n":"-17"}`, `{"n":-17}`},
		{"cast number to string", `[{name: n, type: DOUBLE}]`, `[{name: n, type: STRING}]`,
			`{n: {from: n, cast: {to: STRING}}}`, `{"n":1.50}`, `{"n":"1.50"}`},
		{"cast cents to units by exact decimal scaling", `[{name: cents, type: INT64}]`, `[{name: amount, type: DOUBLE}]`,
			`{amount: {from: cents, cast: {scale: 0.01}}}`, `{"cents":1234}`, `{"amount":12.34}`},
		{"cast units to cents, exact", `[{name: amount, type: DOUBLE}]`, `[{name: cents, type: INT64}]`,
			`{cents: {from: amount, cast: {scale: 100, rounding: EXACT}}}`, `{"amount":12.34}`, `{"cents":1234}`},
		{"rounding half even", `[{name: x, type: DOUBLE}]`, `[{name: x, type: INT64}]`,
			`{x: {from: x, cast: {rounding: HALF_EVEN}}}`, `{"x":2.5}`, `{"x":2}`},
		{"rounding half up", `[{name: x, type: DOUBLE}]`, `[{name: x, type: INT64}]`,
			`{x: {from: x, cast: {rounding: HALF_UP}}}`, `{"x":-2.5}`, `{"x":-3}`},
		{"rounding down", `[{name: x, type: DOUBLE}]`, `[{name: x, type: INT64}]`,
			`{x: {from: x, cast: {rounding: DOWN}}}`, `{"x":-2.7}`, `{"x":-2}`},
		{"rounding up", `[{name: x, type: DOUBLE}]`, `[{name: x, type: INT64}]`,
			`{x: {from: x, cast: {rounding: UP}}}`, `{"x":2.1}`, `{"x":3}`},
		{"more digits than uint64 holds", `[{name: x, type: STRING}]`, `[{name: x, type: DOUBLE}]`,
			`{x: {from: x, cast: {to: DOUBLE}}}`, `{"x":"20000000000000000000.5"}`, `{"x":20000000000000000000}`},
		{"non-decimal scale", `[{name: kmh, type: DOUBLE}]`, `[{name: ms, type: INT64}]`,
			`{ms: {from: kmh, cast: {scale: 0.5, rounding: HALF_EVEN}}}`, `{"kmh":5}`, `{"ms":2}`},
		{"timestamp with layout and zone", `[{name: at, type: STRING}]`, `[{name: at, type: TIMESTAMP}]`,
			`{at: {from: at, cast: {layout: "02.01.2006 15:04", zone: Europe/Berlin}}}`, `{"at":"01.07.2025 14:30"}`, `{"at":"2025-07-01T12:30:00Z"}`},
		{"timestamp RFC3339 offset normalised to UTC", `[{name: at, type: TIMESTAMP, layout: RFC3339}]`, `[{name: at, type: TIMESTAMP}]`,
			`{at: {from: at}}`, `{"at":"2025-03-01T10:00:00.250+02:00"}`, `{"at":"2025-03-01T08:00:00.25Z"}`},
		{"timestamp from unix millis", `[{name: at, type: INT64}]`, `[{name: at, type: TIMESTAMP}]`,
			`{at: {from: at, cast: {layout: unix_ms}}}`, `{"at":1700000000123}`, `{"at":"2023-11-14T22:13:20.123Z"}`},
		{"date", `[{name: d, type: STRING}]`, `[{name: d, type: DATE}]`,
			`{d: {from: d, cast: {layout: "01/02/2006"}}}`, `{"d":"12/31/2024"}`, `{"d":"2024-12-31"}`},
		{"boolean from string", `[{name: b, type: STRING}]`, `[{name: b, type: BOOL}]`,
			`{b: {from: b, cast: {to: BOOL}}}`, `{"b":"TRUE"}`, `{"b":true}`},
		{"boolean from integer", `[{name: b, type: INT32}]`, `[{name: b, type: BOOL}]`,
			`{b: {from: b, cast: {to: BOOL}}}`, `{"b":0}`, `{"b":false}`},
		{"uuid lower-cased", `[{name: u, type: STRING}]`, `[{name: u, type: UUID}]`,
			`{u: {from: u, cast: {to: UUID}}}`, `{"u":"0B8E5F6A-1C2D-4E3F-8A9B-00000000000A"}`, `{"u":"0b8e5f6a-1c2d-4e3f-8a9b-00000000000a"}`},
		{"decimal keeps digits", `[{name: p, type: STRING}]`, `[{name: p, type: DECIMAL}]`,
			`{p: {from: p, cast: {to: DECIMAL, scale: 0.001}}}`, `{"p":"12345678901234567"}`, `{"p":"12345678901234.567"}`},
		{"decimal zero keeps its scale", `[{name: p, type: DECIMAL}]`, `[{name: p, type: DECIMAL}]`,
			`{p: {from: p}}`, `{"p":"0.0000000000"}`, `{"p":"0.0000000000"}`},
		{"decimal keeps trailing zeros", `[{name: p, type: DECIMAL}]`, `[{name: p, type: DECIMAL}]`,
			`{p: {from: p}}`, `{"p":"-12.3400"}`, `{"p":"-12.3400"}`},
		{"largest real as FLOAT", `[{name: r, type: FLOAT}]`, `[{name: r, type: FLOAT}]`,
			`{r: {from: r}}`, `{"r":3.4028235e+38}`, `{"r":3.4028235e+38}`},
		{"largest real from text", `[{name: r, type: STRING}]`, `[{name: r, type: FLOAT}]`,
			`{r: {from: r, cast: {to: FLOAT}}}`, `{"r":"-3.4028235e38"}`, `{"r":-3.4028235e+38}`},
		{"NaN and infinities as FLOAT and DOUBLE", `[{name: r, type: FLOAT}, {name: d, type: DOUBLE}, {name: e, type: DOUBLE}]`,
			`[{name: r, type: FLOAT}, {name: d, type: DOUBLE}, {name: e, type: DOUBLE}]`,
			`{r: {from: r}, d: {from: d}, e: {from: e}}`, `{"r":"NaN","d":"Infinity","e":"-Infinity"}`, `{"r":"NaN","d":"Infinity","e":"-Infinity"}`},
		{"infinity from text", `[{name: r, type: STRING}]`, `[{name: r, type: DOUBLE}]`,
			`{r: {from: r, cast: {to: DOUBLE, scale: -2}}}`, `{"r":"Infinity"}`, `{"r":"-Infinity"}`},
		{"FLOAT widened to DOUBLE keeps NaN", `[{name: r, type: FLOAT}]`, `[{name: r, type: DOUBLE}]`,
			`{r: {from: r, cast: {to: DOUBLE}}}`, `{"r":"NaN"}`, `{"r":"NaN"}`},
		{"enum value map", `[{name: st, type: STRING, enum: [P, S]}]`, `[{name: status, type: STRING, enum: [paid, shipped]}]`,
			`{status: {from: st, values: {P: paid, S: shipped}}}`, `{"st":"S"}`, `{"status":"shipped"}`},
		{"default for absent optional field", `[{name: ch, type: STRING}]`, `[{name: channel, type: STRING, required: true}]`,
			`{channel: {from: ch, default: web}}`, `{}`, `{"channel":"web"}`},
		{"default for null", `[{name: d, type: DOUBLE}]`, `[{name: d, type: DOUBLE, required: true}]`,
			`{d: {from: d, default: 0}}`, `{"d":null}`, `{"d":0}`},
		{"absent optional field left out", `[{name: a, type: STRING}, {name: b, type: STRING}]`, `[{name: a, type: STRING}, {name: b, type: STRING}]`,
			`{a: {from: a}, b: {from: b}}`, `{"b":"x"}`, `{"b":"x"}`},
		{"constant", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}, {name: source, type: STRING, required: true}, {name: v, type: INT32}]`,
			`{a: {from: a}, source: {constant: shop}, v: {constant: 2}}`, `{"a":"x"}`, `{"a":"x","source":"shop","v":2}`},
		{"expression", `[{name: net, type: DOUBLE, required: true}, {name: tax, type: DOUBLE}]`, `[{name: gross, type: DOUBLE, required: true}]`,
			`{gross: {expr: "src.net + (has(src.tax) ? src.tax : 0.0)"}}`, `{"net":10.5,"tax":2}`, `{"gross":12.5}`},
		{"expression with rounding cast", `[{name: net, type: DOUBLE, required: true}]`, `[{name: cents, type: INT64, required: true}]`,
			`{cents: {expr: "src.net * 100.0", cast: {rounding: HALF_UP}}}`, `{"net":10.005}`, `{"cents":1001}`},
		{"expression string", `[{name: first, type: STRING, required: true}, {name: last, type: STRING, required: true}]`, `[{name: name, type: STRING, required: true}]`,
			`{name: {expr: "src.first + ' ' + src.last"}}`, `{"first":"Ada","last":"Lovelace"}`, `{"name":"Ada Lovelace"}`},
		{"identifier translation", `[{name: cid, type: UUID, required: true, identifier: {namespace: customer, format: uuid}}]`,
			`[{name: customer_id, type: INT64, required: true, identifier: {namespace: customer, format: legacy-int}}]`,
			`{customer_id: {from: cid, translate: {from: customer/uuid, to: customer/legacy-int}}}`,
			`{"cid":"0b8e5f6a-1c2d-4e3f-8a9b-000000000007"}`, `{"customer_id":7}`},
		{"object passthrough", `[{name: meta, type: OBJECT}]`, `[{name: meta, type: OBJECT}]`,
			`{meta: {from: meta}}`, `{"meta":{"a":[1,2]}}`, `{"meta":{"a":[1,2]}}`},
		{"JSON passthrough of an object", `[{name: v, type: JSON}]`, `[{name: v, type: JSON}]`,
			`{v: {from: v}}`, `{"v":{"a":[1,2]}}`, `{"v":{"a":[1,2]}}`},
		{"JSON passthrough of a number", `[{name: v, type: JSON}]`, `[{name: v, type: JSON}]`,
			`{v: {from: v}}`, `{"v":1.50}`, `{"v":1.50}`},
		{"JSON passthrough of a string", `[{name: v, type: JSON}]`, `[{name: v, type: JSON}]`,
			`{v: {from: v}}`, `{"v":"x"}`, `{"v":"x"}`},
		{"JSON takes any type without a cast", `[{name: n, type: INT64}, {name: b, type: BOOL}]`, `[{name: n, type: JSON}, {name: b, type: JSON}]`,
			`{n: {from: n}, b: {from: b}}`, `{"n":7,"b":false}`, `{"n":7,"b":false}`},
		{"JSON constant", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}, {name: tags, type: JSON}]`,
			`{a: {from: a}, tags: {constant: [x, 1]}}`, `{"a":"y"}`, `{"a":"y","tags":["x",1]}`},
		{"JSON from an expression", `[{name: n, type: DOUBLE, required: true}]`, `[{name: o, type: JSON, required: true}]`,
			`{o: {expr: "{'n': src.n}"}}`, `{"n":2.5}`, `{"o":{"n":2.5}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, tc.source, tc.canonical, tc.fields)
			got, errs := mapOne(t, p, tc.input, table)
			if errs != nil {
				t.Fatalf("got errors %v, want %s", errs, tc.want)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestMapRecordErrors covers each per-record error code: the record fails
// with the code and field path, and never yields a value in place of one.
func TestMapRecordErrors(t *testing.T) {
	t.Parallel()
	table := map[string]string{"0b8e5f6a-1c2d-4e3f-8a9b-000000000008": "not-a-number"}
	idField := `[{name: cid, type: STRING, required: true, identifier: {namespace: customer, format: uuid}}]`
	idCanon := `[{name: customer_id, type: INT64, required: true, identifier: {namespace: customer, format: legacy-int}}]`
	idMap := `{customer_id: {from: cid, translate: {from: customer/uuid, to: customer/legacy-int}}}`
	tests := []struct {
		name, source, canonical, fields, input string
		code                                   recordv1.ErrorCode
		field, msg                             string
	}{
		{"cast refuses non-number", `[{name: n, type: STRING}]`, `[{name: n, type: INT64}]`,
			`{n: {from: n, cast: {to: INT64}}}`, `{"n":"12a"}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "n", "not a number"},
		{"EXACT refuses fractions", `[{name: amount, type: DOUBLE}]`, `[{name: cents, type: INT64}]`,
			`{cents: {from: amount, cast: {scale: 100, rounding: EXACT}}}`, `{"amount":12.345}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "amount", "has a fraction"},
		{"unspecified rounding is exact", `[{name: x, type: STRING}]`, `[{name: x, type: INT32}]`,
			`{x: {from: x, cast: {to: INT32}}}`, `{"x":"2.5"}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "x", "has a fraction"},
		{"int32 range", `[{name: x, type: INT64}]`, `[{name: x, type: INT32}]`,
			`{x: {from: x, cast: {to: INT32}}}`, `{"x":3000000000}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "x", "out of INT32 range"},
		{"bad timestamp", `[{name: at, type: STRING}]`, `[{name: at, type: TIMESTAMP}]`,
			`{at: {from: at, cast: {layout: RFC3339}}}`, `{"at":"2025-02-30T10:00:00Z"}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "at", "not a time"},
		{"bad uuid", `[{name: u, type: STRING}]`, `[{name: u, type: UUID}]`,
			`{u: {from: u, cast: {to: UUID}}}`, `{"u":"0b8e5f6a-1c2d-4e3f-8a9b"}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "u", "not a UUID"},
		{"bad boolean", `[{name: b, type: STRING}]`, `[{name: b, type: BOOL}]`,
			`{b: {from: b, cast: {to: BOOL}}}`, `{"b":"yes"}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "b", "not a boolean"},
		{"NaN spelled otherwise", `[{name: d, type: DOUBLE}]`, `[{name: d, type: DOUBLE}]`,
			`{d: {from: d}}`, `{"d":"nan"}`, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "d", "without a cast"},
		{"NaN is no DECIMAL", `[{name: d, type: DOUBLE}]`, `[{name: d, type: DECIMAL}]`,
			`{d: {from: d, cast: {to: DECIMAL}}}`, `{"d":"NaN"}`, recordv1.ErrorCode_ERROR_CODE_CAST_FAILED, "d", "not a decimal number"},
		{"wrong type without cast", `[{name: n, type: INT64}]`, `[{name: n, type: INT64}]`,
			`{n: {from: n}}`, `{"n":"12"}`, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "n", "without a cast"},
		{"fraction where an integer is declared", `[{name: n, type: INT64}]`, `[{name: n, type: INT64}]`,
			`{n: {from: n}}`, `{"n":12.5}`, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "n", "has a fraction"},
		{"missing required", `[{name: a, type: STRING, required: true}]`, `[{name: a, type: STRING, required: true}]`,
			`{a: {from: a}}`, `{}`, recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "a", "required"},
		{"null for required", `[{name: a, type: STRING, required: true}]`, `[{name: a, type: STRING, required: true}]`,
			`{a: {from: a}}`, `{"a":null}`, recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "a", "is null"},
		{"missing nested required", `[{name: c, type: OBJECT, required: true, fields: [{name: id, type: INT64, required: true}]}]`,
			`[{name: cid, type: INT64, required: true}]`, `{cid: {from: c.id}}`, `{"c":{}}`, recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "c.id", "required"},
		{"unmapped enum value", `[{name: st, type: STRING}]`, `[{name: status, type: STRING}]`,
			`{status: {from: st, values: {P: paid}}}`, `{"st":"X"}`, recordv1.ErrorCode_ERROR_CODE_ENUM_MISMATCH, "st", `"X" has no canonical`},
		{"expression fails", `[{name: a, type: DOUBLE, required: true}]`, `[{name: b, type: DOUBLE, required: true}]`,
			`{b: {expr: "src.a / src.missing"}}`, `{"a":1}`, recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, "b", "failed"},
		{"expression gives wrong type", `[{name: a, type: STRING, required: true}]`, `[{name: b, type: INT64, required: true}]`,
			`{b: {expr: "src.a"}}`, `{"a":"x"}`, recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, "b", "does not fit"},
		{"expression gives fraction for integer", `[{name: a, type: DOUBLE, required: true}]`, `[{name: b, type: INT64, required: true}]`,
			`{b: {expr: "src.a * 2.0"}}`, `{"a":1.25}`, recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, "b", "has a fraction"},
		{"id unmapped", idField, idCanon, idMap, `{"cid":"0b8e5f6a-1c2d-4e3f-8a9b-000000000009"}`, recordv1.ErrorCode_ERROR_CODE_ID_UNMAPPED, "cid", "no legacy-int translation"},
		{"id answer of the wrong type", idField, idCanon, idMap, `{"cid":"0b8e5f6a-1c2d-4e3f-8a9b-000000000008"}`, recordv1.ErrorCode_ERROR_CODE_ID_INVALID, "cid", "not a INT64"},
		{"id of the wrong kind", idField, idCanon, idMap, `{"cid":true}`, recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "cid", "identifiers are"},
		{"malformed record", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}]`,
			`{a: {from: a}}`, `{"a":"x"`, recordv1.ErrorCode_ERROR_CODE_MALFORMED, "", "line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, tc.source, tc.canonical, tc.fields)
			got, errs := mapOne(t, p, tc.input, table)
			if errs == nil {
				t.Fatalf("got %s, want error %v", got, tc.code)
			}
			if errs[0].GetCode() != tc.code || errs[0].GetField() != tc.field || !strings.Contains(errs[0].GetMessage(), tc.msg) {
				t.Errorf("got %v %q %q, want %v %q containing %q", errs[0].GetCode(), errs[0].GetField(), errs[0].GetMessage(), tc.code, tc.field, tc.msg)
			}
		})
	}
}

// TestMapInvalidIDStatus: an id idmap calls INVALID fails with ID_INVALID.
func TestMapInvalidIDStatus(t *testing.T) {
	t.Parallel()
	p := compile(t, `[{name: cid, type: STRING, required: true, identifier: {namespace: customer, format: uuid}}]`,
		`[{name: customer_id, type: INT64, required: true, identifier: {namespace: customer, format: legacy-int}}]`,
		`{customer_id: {from: cid, translate: {from: customer/uuid, to: customer/legacy-int}}}`)
	b := p.Map(decode(t, p, recordv1.Format_FORMAT_NDJSON, []byte(`{"cid":"nope"}`+"\n"+`{"cid":"nope"}`)))
	if _, err := b.Results(); err == nil {
		t.Fatal("Results before Resolve succeeded; want an error naming the unresolved lookup")
	}
	l := b.Lookups()[0]
	if got := l.IDs; !slices.Equal(got, []string{"nope"}) {
		t.Fatalf("lookup ids %q, want [nope] (each id once)", got)
	}
	if err := l.Resolve(nil, nil); err == nil {
		t.Fatal("Resolve with a short answer succeeded; want an error")
	}
	if err := l.Resolve([]string{""}, []idmapv1.TranslateStatus{idmapv1.TranslateStatus_TRANSLATE_STATUS_INVALID}); err != nil {
		t.Fatal(err)
	}
	res, err := b.Results()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.OK() || r.Errors[0].Err.GetCode() != recordv1.ErrorCode_ERROR_CODE_ID_INVALID {
			t.Errorf("record %d: got %v, want ID_INVALID", i, r.RecordErrors())
		}
	}
}

// TestMapNeighboursSurvive: one bad record in a batch fails alone.
func TestMapNeighboursSurvive(t *testing.T) {
	t.Parallel()
	p := compile(t, `[{name: n, type: STRING, required: true}]`, `[{name: n, type: INT64, required: true}]`, `{n: {from: n, cast: {to: INT64}}}`)
	b := p.Map(decode(t, p, recordv1.Format_FORMAT_NDJSON, []byte("{\"n\":\"1\"}\n{\"n\":\"x\"}\n{\"n\"\n{\"n\":\"3\"}\n")))
	res, err := b.Results()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		if r.OK() {
			got = append(got, string(p.AppendJSON(nil, r.Values)))
		} else {
			got = append(got, r.Errors[0].Err.GetCode().String())
		}
	}
	want := []string{`{"n":1}`, "ERROR_CODE_CAST_FAILED", "ERROR_CODE_MALFORMED", `{"n":3}`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCompileProblems covers the completeness and consistency checks: each
// mapping is refused with a problem at its mapping path.
func TestCompileProblems(t *testing.T) {
	t.Parallel()
	idSrc := `[{name: cid, type: UUID, required: true, identifier: {namespace: customer, format: uuid}}]`
	idCanon := `[{name: customer_id, type: INT64, required: true, identifier: {namespace: customer, format: legacy-int}}]`
	tests := []struct {
		name, source, canonical, fields string
		path, reason                    string
	}{
		{"required canonical field not produced", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}, {name: b, type: STRING, required: true}]`,
			`{a: {from: a}}`, "mapping.fields.b", mapping.ReasonRequiredMissing},
		{"required from optional without default", `[{name: a, type: STRING}]`, `[{name: a, type: STRING, required: true}]`,
			`{a: {from: a}}`, "mapping.fields.a.from", mapping.ReasonRequiredMayBeEmpty},
		{"unknown canonical field", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}]`,
			`{a: {from: a}, zzz: {from: a}}`, "mapping.fields.zzz", mapping.ReasonCanonicalUnknown},
		{"unknown source field", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}]`,
			`{a: {from: nope}}`, "mapping.fields.a.from", mapping.ReasonSourceUnknown},
		{"unknown nested source field", `[{name: c, type: OBJECT, fields: [{name: id, type: INT64}]}]`, `[{name: a, type: INT64}]`,
			`{a: {from: c.name}}`, "mapping.fields.a.from", mapping.ReasonSourceUnknown},
		{"types disagree", `[{name: a, type: STRING}]`, `[{name: a, type: INT64}]`,
			`{a: {from: a}}`, "mapping.fields.a.from", mapping.ReasonTypeMismatch},
		{"narrowing needs a cast", `[{name: a, type: INT64}]`, `[{name: a, type: INT32}]`,
			`{a: {from: a}}`, "mapping.fields.a.from", mapping.ReasonTypeMismatch},
		{"cast to another type than the canonical", `[{name: a, type: STRING}]`, `[{name: a, type: INT64}]`,
			`{a: {from: a, cast: {to: DOUBLE}}}`, "mapping.fields.a.cast.to", mapping.ReasonCastInvalid},
		{"cast impossible", `[{name: a, type: BOOL}]`, `[{name: a, type: TIMESTAMP}]`,
			`{a: {from: a, cast: {to: TIMESTAMP}}}`, "mapping.fields.a.cast.to", mapping.ReasonCastInvalid},
		{"unknown zone", `[{name: a, type: STRING}]`, `[{name: a, type: TIMESTAMP}]`,
			`{a: {from: a, cast: {layout: "2006-01-02 15:04", zone: Mars/Base}}}`, "mapping.fields.a.cast.zone", mapping.ReasonCastInvalid},
		{"layout without elements", `[{name: a, type: STRING}]`, `[{name: a, type: TIMESTAMP}]`,
			`{a: {from: a, cast: {layout: "yyyy-mm-dd"}}}`, "mapping.fields.a.cast.layout", mapping.ReasonCastInvalid},
		{"rounding on a float target", `[{name: a, type: DOUBLE}]`, `[{name: a, type: DOUBLE}]`,
			`{a: {from: a, cast: {rounding: HALF_UP}}}`, "mapping.fields.a.cast.rounding", mapping.ReasonCastInvalid},
		{"no producer", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}]`,
			`{a: {cast: {to: STRING}}}`, "mapping.fields.a", mapping.ReasonNoProducer},
		{"two producers", `[{name: a, type: STRING}]`, `[{name: a, type: STRING}]`,
			`{a: {from: a, constant: x}}`, "mapping.fields.a", mapping.ReasonManyProducers},
		{"constant of the wrong type", `[{name: a, type: STRING}]`, `[{name: a, type: INT64}]`,
			`{a: {constant: "x"}}`, "mapping.fields.a.constant", mapping.ReasonConstantInvalid},
		{"default of the wrong type", `[{name: a, type: INT64}]`, `[{name: a, type: INT64}]`,
			`{a: {from: a, default: 1.5}}`, "mapping.fields.a.default", mapping.ReasonDefaultInvalid},
		{"expression does not compile", `[{name: a, type: INT64}]`, `[{name: a, type: INT64}]`,
			`{a: {expr: "src.a +"}}`, "mapping.fields.a.expr", mapping.ReasonExprInvalid},
		{"expression of the wrong type", `[{name: a, type: INT64}]`, `[{name: a, type: BOOL}]`,
			`{a: {expr: "'x'"}}`, "mapping.fields.a.expr", mapping.ReasonTypeMismatch},
		{"value map misses a source enum value", `[{name: s, type: STRING, enum: [A, B]}]`, `[{name: s, type: STRING}]`,
			`{s: {from: s, values: {A: a}}}`, "mapping.fields.s.values", mapping.ReasonValuesInvalid},
		{"value map produces a value the canonical enum lacks", `[{name: s, type: STRING}]`, `[{name: s, type: STRING, enum: [a]}]`,
			`{s: {from: s, values: {A: b}}}`, "mapping.fields.s.values.A", mapping.ReasonValuesInvalid},
		{"identifier format changes without translate", idSrc, idCanon,
			`{customer_id: {from: cid}}`, "mapping.fields.customer_id", mapping.ReasonTranslateMissing},
		{"translate reference malformed", idSrc, idCanon,
			`{customer_id: {from: cid, translate: {from: customer, to: customer/legacy-int}}}`, "mapping.fields.customer_id.translate.from", mapping.ReasonTranslateInvalid},
		{"translate across namespaces", idSrc, idCanon,
			`{customer_id: {from: cid, translate: {from: customer/uuid, to: order/legacy-int}}}`, "mapping.fields.customer_id.translate.to", mapping.ReasonTranslateInvalid},
		{"idmap namespace unknown", `[{name: cid, type: UUID, required: true}]`, `[{name: customer_id, type: INT64, required: true}]`,
			`{customer_id: {from: cid, translate: {from: client/uuid, to: client/legacy-int}}}`, "mapping.fields.customer_id.translate.from", mapping.ReasonNamespaceUnknown},
		{"idmap format unknown", idSrc, `[{name: customer_id, type: INT64, required: true}]`,
			`{customer_id: {from: cid, translate: {from: customer/uuid, to: customer/crm-code}}}`, "mapping.fields.customer_id.translate.to", mapping.ReasonFormatUnknown},
		{"translated id does not fit the canonical type", idSrc, `[{name: customer_id, type: BOOL, required: true}]`,
			`{customer_id: {from: cid, translate: {from: customer/uuid, to: customer/legacy-int}}}`, "mapping.fields.customer_id.translate.to", mapping.ReasonTranslateInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, canon := build(t, tc.source, tc.canonical, tc.fields)
			p, err := mapping.Compile(src, canon, examples.CustomerCatalog())
			var problems contract.Problems
			if !errors.As(err, &problems) {
				t.Fatalf("got plan %v, error %v; want problems", p, err)
			}
			for _, pr := range problems {
				if pr.Path == tc.path && pr.Reason == tc.reason {
					return
				}
			}
			t.Errorf("got problems %v, want one at %s with reason %s", problems, tc.path, tc.reason)
		})
	}
}

func TestCompileMissingMappingAndCanonical(t *testing.T) {
	t.Parallel()
	src, canon := build(t, `[{name: a, type: STRING}]`, `[{name: a, type: STRING}]`, `{a: {from: a}}`)
	noMapping := &contractv1.Contract{Subject: "t.src", Fields: src.GetFields()}
	if _, err := mapping.Compile(noMapping, canon, nil); err == nil || !strings.Contains(err.Error(), "mapping: no mapping") {
		t.Errorf("got %v, want a problem at mapping", err)
	}
	other := &contractv1.CanonicalModel{Name: "t.other", Fields: canon.GetFields()}
	if _, err := mapping.Compile(src, other, nil); err == nil || !strings.Contains(err.Error(), "mapping.canonical") {
		t.Errorf("got %v, want a problem at mapping.canonical", err)
	}
	// A nil catalog skips the idmap check (the registry's case).
	idSrc, idCanon := build(t, `[{name: cid, type: UUID, required: true}]`, `[{name: customer_id, type: INT64, required: true}]`,
		`{customer_id: {from: cid, translate: {from: client/uuid, to: client/legacy-int}}}`)
	if _, err := mapping.Compile(idSrc, idCanon, nil); err != nil {
		t.Errorf("compile without catalog: %v; want no idmap check", err)
	}
}

type failingCatalog struct{}

func (failingCatalog) Formats(string) ([]*idmapv1.Format, bool, error) {
	return nil, false, errors.New("idmap unreachable")
}

func TestCompileCatalogFailure(t *testing.T) {
	t.Parallel()
	src, canon := build(t, `[{name: cid, type: UUID, required: true}]`, `[{name: customer_id, type: INT64, required: true}]`,
		`{customer_id: {from: cid, translate: {from: customer/uuid, to: customer/legacy-int}}}`)
	_, err := mapping.Compile(src, canon, failingCatalog{})
	var problems contract.Problems
	if err == nil || errors.As(err, &problems) || !strings.Contains(err.Error(), "idmap unreachable") {
		t.Errorf("got %v, want the catalog's failure wrapped, not problems", err)
	}
}

// TestDraftKeepsGoodFields: a draft plan maps what compiled.
func TestDraftKeepsGoodFields(t *testing.T) {
	t.Parallel()
	src, canon := build(t, `[{name: a, type: STRING}, {name: b, type: STRING}]`, `[{name: a, type: STRING}, {name: b, type: INT64}]`, `{a: {from: a}, b: {from: b}}`)
	p, problems, err := mapping.Draft(src, canon, 0, nil)
	if err != nil || len(problems) != 1 {
		t.Fatalf("got problems %v, err %v; want one problem", problems, err)
	}
	got, errs := mapOne(t, p, `{"a":"x","b":"y"}`, nil)
	if errs != nil || got != `{"a":"x"}` {
		t.Errorf("got %s %v, want {\"a\":\"x\"}", got, errs)
	}
}

// Outcomes answers what Results answers, without the record ids.
func TestOutcomesAreResultsWithoutIDs(t *testing.T) {
	t.Parallel()
	p, err := mapping.CompileVersion(examples.ShopOrdersV1(), examples.CommerceOrder(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := append(recordtest.OrdersNDJSON(20), []byte("\n{\"order_id\":\"ORD-1\",\"amount\":\"x\"}\n")...)
	recs := decode(t, p, recordv1.Format_FORMAT_NDJSON, data)
	finish := func(outcomes bool) []mapping.Result {
		b := p.Map(recs)
		finish := b.Results
		if outcomes {
			finish = b.Outcomes
		}
		res, err := finish()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(res)
	}
	want, got := finish(false), finish(true)
	failed := 0
	for i := range want {
		w, g := want[i], got[i]
		if w.OK() != g.OK() || len(w.Errors) != len(g.Errors) || string(p.AppendJSON(nil, w.Values)) != string(p.AppendJSON(nil, g.Values)) || g.ID != (mapping.RecordID{}) {
			t.Fatalf("record %d: outcome %+v, result %+v", i, g, w)
		}
		if !w.OK() {
			failed++
		} else if w.ID == (mapping.RecordID{}) {
			t.Fatalf("record %d: Results gave no id", i)
		}
	}
	if failed == 0 || failed == len(want) {
		t.Fatalf("%d of %d records failed; want some of each", failed, len(want))
	}
}

// A record's errors come in the order of its canonical fields, though Map
// reads identifier fields first (Start, so the lookups can go to idmap
// while MapRest maps the rest): an identifier field's error sits between
// those of the fields around it.
func TestMapErrorsInFieldOrder(t *testing.T) {
	t.Parallel()
	p := compile(t,
		`[{name: a, type: STRING}, {name: cid, type: STRING, identifier: {namespace: customer, format: uuid}}, {name: z, type: STRING}]`,
		`[{name: a, type: INT64}, {name: customer_id, type: INT64, identifier: {namespace: customer, format: legacy-int}}, {name: z, type: INT64}]`,
		`{a: {from: a, cast: {to: INT64}}, customer_id: {from: cid, translate: {from: customer/uuid, to: customer/legacy-int}}, z: {from: z, cast: {to: INT64}}}`)
	_, errs := mapOne(t, p, `{"a":"x","cid":true,"z":"y"}`, nil)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.GetField())
	}
	if want := []string{"a", "cid", "z"}; !slices.Equal(fields, want) {
		t.Fatalf("errors on fields %q, want %q: %v", fields, want, errs)
	}
}
