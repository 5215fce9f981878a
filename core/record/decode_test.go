package record_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

func testSchema(t testing.TB) *record.Schema {
	t.Helper()
	fields := []*contractv1.Field{
		{Name: "s", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "i", Type: contractv1.FieldType_FIELD_TYPE_INT64},
		{Name: "f", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE},
		{Name: "b", Type: contractv1.FieldType_FIELD_TYPE_BOOL},
		{Name: "o", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{
			{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		}},
		{Name: "a", Type: contractv1.FieldType_FIELD_TYPE_ARRAY},
	}
	s, err := record.NewSchema(fields)
	if err != nil {
		t.Fatalf("NewSchema: %v", err)
	}
	return s
}

// decode decodes data with a new decoder for s, failing the test when the
// batch cannot be decoded.
func decode(t testing.TB, s *record.Schema, format recordv1.Format, data []byte, firstOffset int64) *record.Batch {
	t.Helper()
	b, err := record.NewDecoder(s, record.Options{}).Decode(format, data, firstOffset)
	if err != nil {
		t.Fatalf("Decode %v: %v", format, err)
	}
	return b
}

// decodeField decodes the JSON object {"field": literal} with d and
// returns the field's value.
func decodeField(t *testing.T, d *record.Decoder, s *record.Schema, field, literal string) record.Value {
	t.Helper()
	b, err := d.Decode(recordv1.Format_FORMAT_JSON, []byte(`{"`+field+`":`+literal+`}`), 0)
	if err != nil {
		t.Fatalf("Decode(%s): %v", literal, err)
	}
	return value(t, s, b.Records[0], field)
}

// malformed reports whether e is a MALFORMED record error whose message
// contains part.
func malformed(e *recordv1.RecordError, part string) bool {
	return e.GetCode() == recordv1.ErrorCode_ERROR_CODE_MALFORMED && strings.Contains(e.GetMessage(), part)
}

func value(t *testing.T, s *record.Schema, r record.Record, path string) record.Value {
	t.Helper()
	slot, ok := s.Lookup(path)
	if !ok {
		t.Fatalf("no field %q", path)
	}
	if r.Err != nil {
		t.Fatalf("record %d failed: %v", r.Index, r.Err)
	}
	return r.Values[slot]
}

func TestNewSchemaErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fields []*contractv1.Field
		want   string
	}{
		{"empty name", []*contractv1.Field{{Name: ""}}, "fields[0].name: empty"},
		{"dotted name", []*contractv1.Field{{Name: "a.b"}}, `fields[0].name: "a.b" contains a dot`},
		{"duplicate", []*contractv1.Field{{Name: "a"}, {Name: "a"}}, `fields[1].name: "a" is declared twice`},
		{"nested duplicate", []*contractv1.Field{{Name: "o", Type: contractv1.FieldType_FIELD_TYPE_OBJECT,
			Fields: []*contractv1.Field{{Name: "x"}, {Name: "x"}}}}, `fields[0].fields[1].name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := record.NewSchema(tt.fields)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewSchema error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestJSONStrictness decodes one NDJSON line per case, so each failure is a
// per-record error and the neighbour after it must still decode.
func TestJSONStrictness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string
		want string // substring of the error; "" means the line decodes
	}{
		{"plain", `{"s":"x","i":1}`, ""},
		{"trailing comma in object", `{"s":"x",}`, "expected a field name string"},
		{"trailing comma in array", `{"a":[1,2,]}`, "expected a value"},
		{"NaN", `{"f":NaN}`, "expected a value"},
		{"Infinity", `{"f":-Infinity}`, "expected a digit"},
		{"leading zero", `{"i":012}`, "expected ',' or '}'"},
		{"bare dot", `{"f":1.}`, "expected a digit after '.'"},
		{"empty exponent", `{"f":1e}`, "expected a digit in the exponent"},
		{"invalid escape", `{"s":"a\x"}`, `invalid escape '\x'`},
		{"escape of a non-ASCII byte", "{\"s\":\"a\\\x86\"}", `invalid escape '\' followed by byte 0x86`},
		{"short unicode escape", `{"s":"\u12"}`, "expected four hex digits"},
		{"lone high surrogate", `{"s":"\uD83D"}`, "unpaired high surrogate"},
		{"lone low surrogate", `{"s":"\uDE00x"}`, "unpaired low surrogate"},
		{"high then non-low", `{"s":"\uD83D\u0041"}`, "unpaired high surrogate"},
		{"control character", "{\"s\":\"a\x01b\"}", "control character 0x01"},
		{"invalid UTF-8", "{\"s\":\"a\xffb\"}", "invalid UTF-8"},
		{"invalid UTF-8 in unknown", "{\"zz\":\"\xc3\x28\"}", "invalid UTF-8"},
		{"overlong UTF-8", "{\"s\":\"\xc0\xaf\"}", "invalid UTF-8"},
		{"duplicate field", `{"i":1,"i":2}`, `field "i" appears twice`},
		{"unterminated string", `{"s":"abc`, "unterminated string"},
		{"not an object", `[1,2]`, "expected a JSON object for the record"},
		{"scalar record", `42`, "expected a JSON object"},
		{"trailing data", `{"i":1} {"i":2}`, "after the record's object"},
		{"single quotes", `{'s':1}`, "expected a field name string"},
		{"missing colon", `{"s" "x"}`, "expected ':'"},
		{"bad literal", `{"b":tru}`, "invalid literal"},
		{"deep unknown is fine", `{"zz":[[[{"q":[]}]]]}`, ""},
	}
	s := testSchema(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := tt.line + "\n" + `{"i":7}` + "\n"
			b := decode(t, s, recordv1.Format_FORMAT_NDJSON, []byte(data), 0)
			if len(b.Records) != 2 {
				t.Fatalf("got %d records, want 2", len(b.Records))
			}
			r := b.Records[0]
			switch {
			case tt.want == "" && r.Err != nil:
				t.Fatalf("got error %v, want none", r.Err)
			case tt.want != "" && r.Err == nil:
				t.Fatalf("got no error, want one containing %q", tt.want)
			case tt.want != "" && (!malformed(r.Err, tt.want) || !strings.HasPrefix(r.Err.GetMessage(), "line 1, byte offset ")):
				t.Fatalf("got %v %q, want MALFORMED starting with \"line 1, byte offset\" and containing %q", r.Err.GetCode(), r.Err.GetMessage(), tt.want)
			case tt.want != "" && r.Values != nil:
				t.Fatalf("failed record kept %d values, want none", len(r.Values))
			}
			if got, _ := value(t, s, b.Records[1], "i").Int(); got != 7 {
				t.Fatalf("neighbour i = %d, want 7", got)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"tab\there"`, "tab\there"},
		{`"q\"\\\/"`, `q"\/`},
		{`"\u00e9t\u00E9"`, "été"},
		{`"\ud83d\ude00"`, "😀"},
		{`"ünï"`, "ünï"},
		{`"\b\f\n\r"`, "\b\f\n\r"},
		{`""`, ""},
	}
	s := testSchema(t)
	d := record.NewDecoder(s, record.Options{})
	for _, tt := range tests {
		v := decodeField(t, d, s, "s", tt.in)
		if v.Kind() != record.KindString || string(v.Bytes()) != tt.want {
			t.Errorf("Decode(%s) = %v %q, want string %q", tt.in, v.Kind(), v.Bytes(), tt.want)
		}
	}
}

func TestNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		isInt    bool
		overflow bool
		i        int64
		f        float64
	}{
		{"0", true, false, 0, 0},
		{"-0", true, false, 0, 0},
		{"9223372036854775807", true, false, 9223372036854775807, 9223372036854775807},
		{"-9223372036854775808", true, false, -9223372036854775808, -9223372036854775808},
		{"9223372036854775808", false, true, 0, 9223372036854775808},
		{"123456789012345678901234567890", false, true, 0, 1.2345678901234568e29},
		{"12.0", false, false, 0, 12},
		{"0.1", false, false, 0, 0.1},
		{"-85.25", false, false, 0, -85.25},
		{"0.000123", false, false, 0, 0.000123},
		{"1e3", false, false, 0, 1000},
		{"1.7976931348623157e308", false, false, 0, 1.7976931348623157e308},
		{"1e400", false, true, 0, 0},
		{"3.14159265358979323846", false, false, 0, 3.141592653589793},
	}
	s := testSchema(t)
	d := record.NewDecoder(s, record.Options{})
	for _, tt := range tests {
		v := decodeField(t, d, s, "f", tt.in)
		if v.IsInt() != tt.isInt || v.Overflow() != tt.overflow || string(v.Bytes()) != tt.in {
			t.Errorf("%s: got int=%v overflow=%v text=%q, want int=%v overflow=%v", tt.in, v.IsInt(), v.Overflow(), v.Bytes(), tt.isInt, tt.overflow)
		}
		if i, _ := v.Int(); i != tt.i {
			t.Errorf("%s: Int() = %d, want %d", tt.in, i, tt.i)
		}
		if f, _ := v.Float(); !tt.overflow && f != tt.f {
			t.Errorf("%s: Float() = %v, want %v", tt.in, f, tt.f)
		}
	}
}

func TestNDJSONPositions(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	data := "{\"i\":1}\r\n\n   \n{\"i\":2,\"zz\":1,\"yy\":{}}\n{broken\n{\"i\":4}"
	b := decode(t, s, recordv1.Format_FORMAT_NDJSON, []byte(data), 100)
	type rec struct {
		index, pos int64
		raw        string
		failed     bool
	}
	want := []rec{{0, 101, `{"i":1}`, false}, {1, 104, `{"i":2,"zz":1,"yy":{}}`, false}, {2, 105, `{broken`, true}, {3, 106, `{"i":4}`, false}}
	if len(b.Records) != len(want) {
		t.Fatalf("got %d records, want %d", len(b.Records), len(want))
	}
	for i, w := range want {
		r := b.Records[i]
		got := rec{r.Index, r.Position, string(r.Raw), r.Err != nil}
		if got != w {
			t.Errorf("record %d: got %+v, want %+v", i, got, w)
		}
	}
	if got := b.Records[2].Err.GetMessage(); !strings.HasPrefix(got, "line 5, byte offset ") {
		t.Errorf("error message %q, want it to name line 5", got)
	}
	if u := b.Records[1].Unknown; len(u) != 2 || string(u[0]) != "zz" || string(u[1]) != "yy" {
		t.Errorf("unknown = %q, want [zz yy]", u)
	}
}

func TestJSONArray(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	tests := []struct {
		name     string
		data     string
		failed   []bool // per record
		batchErr string
	}{
		{"empty input", "  ", nil, ""},
		{"empty array", " [ ] ", nil, ""},
		{"single object", ` {"i":1} `, []bool{false}, ""},
		{"array", `[{"i":1}, {"i":2}]`, []bool{false, false}, ""},
		{"bad element resynchronised", `[{"i":1},{"i":[1,}, {"s":"]"}, {"i":3}]`, []bool{false, true, false, false}, ""},
		{"scalar element", `[{"i":1}, 5, "x", {"i":3}]`, []bool{false, true, true, false}, ""},
		{"undelimitable", `[{"i":1}, {"s":"open]`, []bool{false}, "byte offset 21 (record 1): unterminated string"},
		{"missing comma", `[{"i":1} {"i":2}]`, []bool{false}, "expected ',' or ']' after array element 0"},
		{"trailing comma", `[{"i":1},]`, []bool{false}, "record 1"},
		{"trailing data", `[{"i":1}] x`, []bool{false}, "unexpected 'x' after the array"},
		{"not json", `hello`, nil, "expected '[' or '{'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := record.NewDecoder(s, record.Options{}).Decode(recordv1.Format_FORMAT_JSON, []byte(tt.data), 10)
			if tt.batchErr == "" && err != nil {
				t.Fatalf("Decode error %v, want none", err)
			}
			if tt.batchErr != "" {
				var be *record.BatchError
				if !errors.As(err, &be) || !strings.Contains(err.Error(), tt.batchErr) {
					t.Fatalf("Decode error %v, want a BatchError containing %q", err, tt.batchErr)
				}
			}
			if len(b.Records) != len(tt.failed) {
				t.Fatalf("got %d records, want %d", len(b.Records), len(tt.failed))
			}
			for i, r := range b.Records {
				if (r.Err != nil) != tt.failed[i] || r.Position != 10+int64(i) {
					t.Errorf("record %d: got err=%v position=%d, want failed=%v position=%d", i, r.Err, r.Position, tt.failed[i], 10+i)
				}
			}
		})
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	huge := `{"s":"` + strings.Repeat("x", 10_000_000) + `"}`
	deep := `{"a":` + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + `}`
	deepObj := `{"zz":` + strings.Repeat(`{"k":`, 10_000) + "1" + strings.Repeat("}", 10_000) + `}`
	tests := []struct {
		name   string
		format recordv1.Format
		data   string
		opts   record.Options
		code   recordv1.ErrorCode // of record 0; unspecified means it decodes
		want   string
	}{
		{"10MB NDJSON under 16MiB", recordv1.Format_FORMAT_NDJSON, huge, record.Options{}, 0, ""},
		{"10MB NDJSON over 1MiB", recordv1.Format_FORMAT_NDJSON, huge, record.Options{MaxRecordBytes: 1 << 20}, recordv1.ErrorCode_ERROR_CODE_TOO_LARGE, "10000008 bytes, over the 1048576 byte limit"},
		{"10MB JSON over 1MiB", recordv1.Format_FORMAT_JSON, "[" + huge + `,{"i":1}]`, record.Options{MaxRecordBytes: 1 << 20}, recordv1.ErrorCode_ERROR_CODE_TOO_LARGE, "record 0: record is 10000008 bytes"},
		{"10MB CSV over 1MiB", recordv1.Format_FORMAT_CSV, "s,i\n" + strings.Repeat("y", 10_000_000) + ",1\n", record.Options{MaxRecordBytes: 1 << 20}, recordv1.ErrorCode_ERROR_CODE_TOO_LARGE, "line 2: record is"},
		{"10,000 deep array", recordv1.Format_FORMAT_NDJSON, deep, record.Options{}, recordv1.ErrorCode_ERROR_CODE_MALFORMED, "nesting deeper than 64 levels"},
		{"10,000 deep object", recordv1.Format_FORMAT_JSON, "[" + deepObj + `,{"i":1}]`, record.Options{}, recordv1.ErrorCode_ERROR_CODE_MALFORMED, "nesting deeper than 64 levels"},
		{"depth limit is inclusive", recordv1.Format_FORMAT_NDJSON, `{"a":[[1]]}`, record.Options{MaxDepth: 3}, 0, ""},
		{"depth limit exceeded", recordv1.Format_FORMAT_NDJSON, `{"a":[[[1]]]}`, record.Options{MaxDepth: 3}, recordv1.ErrorCode_ERROR_CODE_MALFORMED, "deeper than 3"},
		{"declared object depth", recordv1.Format_FORMAT_NDJSON, `{"o":{"id":"x"}}`, record.Options{MaxDepth: 1}, recordv1.ErrorCode_ERROR_CODE_MALFORMED, "deeper than 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := record.NewDecoder(s, tt.opts).Decode(tt.format, []byte(tt.data), 0)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(b.Records) == 0 {
				t.Fatal("got no records, want at least one")
			}
			r := b.Records[0]
			if r.Err.GetCode() != tt.code || !strings.Contains(r.Err.GetMessage(), tt.want) {
				t.Fatalf("got %v %q, want %v containing %q", r.Err.GetCode(), r.Err.GetMessage(), tt.code, tt.want)
			}
			for _, n := range b.Records[1:] {
				if n.Err != nil {
					t.Fatalf("neighbour %d failed: %v", n.Index, n.Err)
				}
			}
		})
	}
}

func TestCSV(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	data := "s,i,f,b,extra,o,a\r\n" +
		"hello,42,1.5,true,x,\"{\"\"id\"\":\"\"O1\"\"}\",\"[1,2]\"\n" +
		"\"multi\nline\",,,,,,\n" +
		"abc,12.5,nope,yes,,{bad,[\n" +
		"ragged,1\n" +
		"bad\"quote,1,1,true,,,\n" +
		"\n" +
		"last,-7,1e2,false,,,\n"
	b := decode(t, s, recordv1.Format_FORMAT_CSV, []byte(data), 0)
	if len(b.Records) != 6 {
		t.Fatalf("got %d records, want 6", len(b.Records))
	}
	r0 := b.Records[0]
	if v := value(t, s, r0, "s"); string(v.Bytes()) != "hello" || v.Kind() != record.KindString {
		t.Errorf("s = %v %q, want string hello", v.Kind(), v.Bytes())
	}
	if i, ok := value(t, s, r0, "i").Int(); !ok || i != 42 {
		t.Errorf("i = %d %v, want 42", i, ok)
	}
	if f, _ := value(t, s, r0, "f").Float(); f != 1.5 {
		t.Errorf("f = %v, want 1.5", f)
	}
	if v, ok := value(t, s, r0, "b").Bool(); !ok || !v {
		t.Errorf("b = %v %v, want true", v, ok)
	}
	if v := value(t, s, r0, "o.id"); string(v.Bytes()) != "O1" {
		t.Errorf("o.id = %q, want O1", v.Bytes())
	}
	if v := value(t, s, r0, "a"); v.Kind() != record.KindArray || v.Len() != 2 {
		t.Errorf("a = %v len %d, want array of 2", v.Kind(), v.Len())
	}
	if len(r0.Unknown) != 1 || string(r0.Unknown[0]) != "extra" || r0.Position != 2 {
		t.Errorf("record 0 unknown %q position %d, want [extra] at line 2", r0.Unknown, r0.Position)
	}
	r1 := b.Records[1]
	if v := value(t, s, r1, "s"); string(v.Bytes()) != "multi\nline" || r1.Position != 3 {
		t.Errorf("quoted newline: s = %q at %d, want \"multi\\nline\" at line 3", v.Bytes(), r1.Position)
	}
	if v := value(t, s, r1, "i"); v.Kind() != record.KindAbsent {
		t.Errorf("empty cell kind %v, want absent", v.Kind())
	}
	r2 := b.Records[2]
	for path, want := range map[string]record.Kind{"i": record.KindNumber, "f": record.KindRaw, "b": record.KindRaw, "o": record.KindRaw, "a": record.KindRaw} {
		if got := value(t, s, r2, path).Kind(); got != want {
			t.Errorf("line 5 %s kind %v, want %v", path, got, want)
		}
	}
	if value(t, s, r2, "i").IsInt() {
		t.Error("12.5 typed as an integer")
	}
	if e := b.Records[3].Err; !malformed(e, "line 6: 2 columns, but the header has 7") {
		t.Errorf("ragged row error %v, want MALFORMED naming line 6 and the column counts", e)
	}
	if e := b.Records[4].Err; !malformed(e, "line 7") {
		t.Errorf("bare quote error %v, want MALFORMED naming line 7", e)
	}
	if r := b.Records[5]; r.Position != 9 || string(r.Raw) != "last,-7,1e2,false,,," {
		t.Errorf("last record position %d raw %q, want line 9 and its row", r.Position, r.Raw)
	}
}

func TestCSVHeaderErrors(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	_, err := record.NewDecoder(s, record.Options{}).Decode(recordv1.Format_FORMAT_CSV, []byte("s,i,s\n1,2,3\n"), 0)
	if err == nil || !strings.Contains(err.Error(), `column 3 "s" repeats column 1`) {
		t.Fatalf("duplicate header error %v, want one naming columns 3 and 1", err)
	}
	b, err := record.NewDecoder(s, record.Options{}).Decode(recordv1.Format_FORMAT_CSV, nil, 0)
	if err != nil || len(b.Records) != 0 {
		t.Fatalf("empty CSV: %d records, err %v; want 0 and none", len(b.Records), err)
	}
}

func TestDecodeObjects(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	o1, err := structpb.NewStruct(map[string]any{"s": "x", "i": 12, "f": 1.5, "o": map[string]any{"id": "O"}, "zz": true})
	if err != nil {
		t.Fatal(err)
	}
	o2, err := structpb.NewStruct(map[string]any{"i": 12.5, "b": nil})
	if err != nil {
		t.Fatal(err)
	}
	b, err := record.NewDecoder(s, record.Options{}).DecodeObjects([]*structpb.Struct{o1, o2}, 5)
	if err != nil {
		t.Fatalf("DecodeObjects: %v", err)
	}
	if i, ok := value(t, s, b.Records[0], "i").Int(); !ok || i != 12 {
		t.Errorf("i = %d %v, want integer 12", i, ok)
	}
	if v := value(t, s, b.Records[0], "o.id"); string(v.Bytes()) != "O" {
		t.Errorf("o.id = %q, want O", v.Bytes())
	}
	if v := value(t, s, b.Records[1], "i"); v.IsInt() {
		t.Errorf("12.5 decoded as integer %q", v.Bytes())
	}
	if v := value(t, s, b.Records[1], "b"); v.Kind() != record.KindNull {
		t.Errorf("b kind %v, want null", v.Kind())
	}
	if b.Records[1].Position != 6 || len(b.Records[0].Unknown) != 1 {
		t.Errorf("position %d unknown %q, want 6 and [zz]", b.Records[1].Position, b.Records[0].Unknown)
	}
}

// A protobuf Struct carries numbers as doubles: an integer field's value
// at or beyond 2^53 cannot be trusted (9007199254740993 arrives as
// 9007199254740992), so the record fails with MALFORMED naming the field;
// below 2^53, and in floating-point fields, numbers pass exactly.
func TestDecodeObjectsRefusesInexactIntegers(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	tests := []struct {
		name string
		obj  map[string]any
		bad  string // the field the error names; "" when the record decodes
	}{
		{"2^53-1", map[string]any{"i": float64(1<<53 - 1)}, ""},
		{"2^53", map[string]any{"i": float64(1 << 53)}, "i"},
		{"9007199254740993", map[string]any{"i": 9007199254740993.0}, "i"},
		{"-2^53", map[string]any{"i": -float64(1 << 53)}, "i"},
		{"1234567890123456789", map[string]any{"i": 1234567890123456789.0}, "i"},
		{"1e300 in a double field", map[string]any{"f": 1e300}, ""},
	}
	for _, tt := range tests {
		o, err := structpb.NewStruct(tt.obj)
		if err != nil {
			t.Fatal(err)
		}
		b, err := record.NewDecoder(s, record.Options{}).DecodeObjects([]*structpb.Struct{o}, 0)
		if err != nil {
			t.Fatalf("%s: DecodeObjects: %v", tt.name, err)
		}
		e := b.Records[0].Err
		switch {
		case tt.bad == "" && e != nil:
			t.Errorf("%s: error %v, want the record decoded", tt.name, e)
		case tt.bad != "" && (!malformed(e, "field "+tt.bad+": ") || !strings.Contains(e.GetMessage(), "2^53")):
			t.Errorf("%s: error %v, want MALFORMED naming field %s and 2^53", tt.name, e, tt.bad)
		}
	}
}

func TestAppendJSONRoundTrip(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	in := `{"zz":1,"a":[1, {"x":"y"}],"o":{"id":"\u00e9\"\n","other":2},"b":false,"f":-1.5e3,"i":9223372036854775807,"s":"tab\t\u0001"}`
	d := record.NewDecoder(s, record.Options{})
	b, err := d.Decode(recordv1.Format_FORMAT_JSON, []byte(in), 0)
	if err != nil || b.Records[0].Err != nil {
		t.Fatalf("Decode: %v %v", err, b.Records[0].Err)
	}
	out := record.AppendJSON(nil, s, b.Records[0].Values)
	want := `{"s":"tab\t\u0001","i":9223372036854775807,"f":-1.5e3,"b":false,"o":{"id":"é\"\n"},"a":[1, {"x":"y"}]}`
	if string(out) != want {
		t.Fatalf("AppendJSON = %s, want %s", out, want)
	}
	b2, err := d.Decode(recordv1.Format_FORMAT_JSON, out, 0)
	if err != nil || b2.Records[0].Err != nil {
		t.Fatalf("Decode(encoded): %v %v", err, b2.Records[0].Err)
	}
	for i := range s.Len() {
		if !b.Records[0].Values[i].Equal(b2.Records[0].Values[i]) && s.Field(i).Path != "o" {
			t.Errorf("slot %s: got %q after round trip, want %q", s.Field(i).Path, b2.Records[0].Values[i].Bytes(), b.Records[0].Values[i].Bytes())
		}
	}
}

func TestElements(t *testing.T) {
	t.Parallel()
	s := testSchema(t)
	b := decode(t, s, recordv1.Format_FORMAT_JSON, []byte(`{"a":[1,"x\u0041",[2],{"k":1},null]}`), 0)
	var kinds []string
	err := record.Elements(value(t, s, b.Records[0], "a"), func(_ int, e record.Value) bool {
		kinds = append(kinds, e.Kind().String()+":"+string(e.Bytes()))
		return true
	})
	want := `number:1 string:xA array:[2] object:{"k":1} null:`
	if got := strings.Join(kinds, " "); err != nil || got != want {
		t.Fatalf("Elements = %q (err %v), want %q", got, err, want)
	}
}

func TestOrders(t *testing.T) {
	t.Parallel()
	s := recordtest.OrderSchema()
	for _, format := range []recordv1.Format{recordv1.Format_FORMAT_JSON, recordv1.Format_FORMAT_NDJSON} {
		data := recordtest.OrdersNDJSON(500)
		if format == recordv1.Format_FORMAT_JSON {
			data = recordtest.OrdersJSON(500)
		}
		b := decode(t, s, format, data, 0)
		if len(b.Records) != 500 {
			t.Fatalf("%v: got %d records, want 500", format, len(b.Records))
		}
		for _, r := range b.Records {
			if r.Err != nil || len(r.Unknown) != 0 {
				t.Fatalf("%v record %d: err %v unknown %q", format, r.Index, r.Err, r.Unknown)
			}
			if !bytes.Equal(record.AppendJSON(nil, s, r.Values), r.Raw) {
				t.Fatalf("%v record %d: re-encoded %s, want %s", format, r.Index, record.AppendJSON(nil, s, r.Values), r.Raw)
			}
		}
	}
}

// Members of a declared object that the contract does not declare are
// named with the object they were found in, at any depth; members of array
// elements and of undeclared fields are not looked at.
func TestUnknownMembers(t *testing.T) {
	t.Parallel()
	s, err := record.NewSchema([]*contractv1.Field{
		{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "payer", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{
			{Name: "iban", Type: contractv1.FieldType_FIELD_TYPE_STRING},
			{Name: "address", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{
				{Name: "country", Type: contractv1.FieldType_FIELD_TYPE_STRING},
			}},
		}},
		{Name: "lines", Type: contractv1.FieldType_FIELD_TYPE_ARRAY, Items: &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_OBJECT}},
	})
	if err != nil {
		t.Fatal(err)
	}
	payer, _ := s.Lookup("payer")
	address, _ := s.Lookup("payer.address")
	data := `{"id":"a","payer":{"iban":"DE1","bic":"X","address":{"country":"DE","city":"Bonn","zip":"1"},"name":"Ana"},"extra":{"deep":1}}
{"id":"b","payer":{"iban":"DE2"},"lines":[{"sku":"s"}]}
{"id":"c","payer":"not an object"}
{"id":"d","payer":{"x":1,"x":2}}`
	for _, tc := range []struct {
		name   string
		decode func(d *record.Decoder) (*record.Batch, error)
	}{
		{"ndjson", func(d *record.Decoder) (*record.Batch, error) {
			return d.Decode(recordv1.Format_FORMAT_NDJSON, []byte(data), 0)
		}},
		{"json array", func(d *record.Decoder) (*record.Batch, error) {
			return d.Decode(recordv1.Format_FORMAT_JSON, []byte("["+strings.ReplaceAll(data, "\n", ",")+"]"), 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.decode(record.NewDecoder(s, record.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			got := func(r record.Record) string {
				var out []string
				for _, m := range r.UnknownMembers {
					out = append(out, fmt.Sprintf("%s.%s", s.Field(m.Object).Path, m.Name))
				}
				return strings.Join(out, " ")
			}
			want := []string{"payer.bic payer.address.city payer.address.zip payer.name", "", "", "payer.x payer.x"}
			for i, w := range want {
				if g := got(b.Records[i]); g != w {
					t.Errorf("record %d: unknown members %q, want %q", i, g, w)
				}
			}
			if u := b.Records[0].Unknown; len(u) != 1 || string(u[0]) != "extra" {
				t.Errorf("record 0: unknown %q, want [extra]", u)
			}
			if b.Records[0].UnknownMembers[1].Object != address || b.Records[0].UnknownMembers[0].Object != payer {
				t.Errorf("record 0: objects %v, want payer (%d) then payer.address (%d)", b.Records[0].UnknownMembers, payer, address)
			}
		})
	}
}

// TestMemberNames covers the names a decoder recognises by comparing
// bytes with the field it expects next: a name that only starts like it,
// the same name escaped, a declared name that itself needs escaping in
// JSON, and names sent out of declaration order.
func TestMemberNames(t *testing.T) {
	t.Parallel()
	s, err := record.NewSchema([]*contractv1.Field{
		{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "idx", Type: contractv1.FieldType_FIELD_TYPE_INT64},
		{Name: `say "hi"`, Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "été", Type: contractv1.FieldType_FIELD_TYPE_STRING},
	})
	if err != nil {
		t.Fatal(err)
	}
	data := `{"id":"a","idx":1,"say \"hi\"":"q","été":"e"}
{"idx":2,"id":"b"}
{"i\u0064":"c","\u0069dx":3}
{"id2":"d","id":"d"}
{"idx":4,"id":"e","say \"hi\"":"r","\u00e9t\u00e9":"f"}
{"id":"f","i\u0064":"g"}`
	b := decode(t, s, recordv1.Format_FORMAT_NDJSON, []byte(data), 0)
	field := func(r record.Record, path string) string {
		slot, _ := s.Lookup(path)
		v := r.Values[slot]
		if !v.Present() {
			return "-"
		}
		return string(v.Bytes())
	}
	for i, want := range []string{"a 1 q e", "b 2 - -", "c 3 - -", "d - - -", "e 4 r f"} {
		r := b.Records[i]
		if r.Err != nil {
			t.Errorf("record %d: %v", i, r.Err)
			continue
		}
		if got := strings.Join([]string{field(r, "id"), field(r, "idx"), field(r, `say "hi"`), field(r, "été")}, " "); got != want {
			t.Errorf("record %d: %q, want %q", i, got, want)
		}
	}
	if u := b.Records[3].Unknown; len(u) != 1 || string(u[0]) != "id2" {
		t.Errorf("record 3: unknown %q, want [id2]", u)
	}
	if err := b.Records[5].Err; err == nil || !strings.Contains(err.GetMessage(), `field "id" appears twice`) {
		t.Errorf("record 5: %v, want the escaped repeat of id refused", err)
	}
}

// TestFirstOffsetNeverWraps: a first offset so large that a record's
// position would pass the largest int64 (and wrap negative) is refused
// whole, for raw and object batches; one that fits is kept exact.
func TestFirstOffsetNeverWraps(t *testing.T) {
	t.Parallel()
	d := record.NewDecoder(testSchema(t), record.Options{})
	data := []byte("{\"a\":1}\n{\"a\":2}\n")
	for _, first := range []int64{math.MaxInt64, math.MaxInt64 - 1, -2} {
		if _, err := d.Decode(recordv1.Format_FORMAT_NDJSON, data, first); err == nil || !strings.Contains(err.Error(), "first_offset") {
			t.Errorf("Decode with first_offset %d: %v, want an error naming first_offset", first, err)
		}
	}
	for _, first := range []int64{math.MaxInt64, math.MaxInt64 - 1, -1} {
		if _, err := d.DecodeObjects([]*structpb.Struct{{}, {}}, first); err == nil || !strings.Contains(err.Error(), "first_offset") {
			t.Errorf("DecodeObjects with first_offset %d: %v, want an error naming first_offset", first, err)
		}
	}
	// A line's position is first_offset plus its line number: -1 makes a
	// stream's offset 0 the first line's position, 0.
	b, err := d.Decode(recordv1.Format_FORMAT_NDJSON, data, -1)
	if err != nil || b.Records[0].Position != 0 {
		t.Fatalf("Decode NDJSON with first_offset -1 = %v, %v; want the first line at position 0", b, err)
	}
	first := int64(math.MaxInt64 - 100)
	b, err = d.Decode(recordv1.Format_FORMAT_NDJSON, data, first)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range b.Records {
		if r.Position < first || (i > 0 && r.Position <= b.Records[i-1].Position) {
			t.Errorf("record %d position %d, want increasing positions from %d", i, r.Position, first)
		}
	}
}
