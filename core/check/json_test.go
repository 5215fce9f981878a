package check_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestJSONField: a JSON field takes a value of any JSON type, and each of
// its constraints applies to the values of its kind only, as JSON Schema's
// keywords do: min and max to numbers, lengths and pattern to strings,
// items to the elements of arrays, fields to the members of objects.
func TestJSONField(t *testing.T) {
	t.Parallel()
	f := func(x float64) *float64 { return &x }
	n := func(x int64) *int64 { return &x }
	tests := []struct {
		name           string
		field          *contractv1.Field
		valid, invalid []string
	}{
		{"any value", &contractv1.Field{},
			[]string{`1`, `1.5`, `"a"`, `true`, `{}`, `[1, "a", null]`, `null`}, nil},
		{"bounds apply to numbers", &contractv1.Field{Min: f(1), Max: f(3)},
			[]string{`1`, `3.0`, `"0"`, `"99"`, `true`, `[0]`, `{"a": 0}`}, []string{`0`, `3.5`, `-1e9`}},
		{"lengths apply to strings", &contractv1.Field{MinLength: n(2), MaxLength: n(2)},
			[]string{`"ab"`, `"💩💩"`, `1`, `[1, 2, 3]`, `{}`}, []string{`"a"`, `"abc"`, `"💩"`}},
		{"pattern applies to strings", &contractv1.Field{Pattern: "^a+$"},
			[]string{`"aa"`, `1`, `true`, `["b"]`}, []string{`"ab"`, `""`}},
		{"items apply to the elements of arrays", &contractv1.Field{Items: &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_INT64}},
			[]string{`[1, 2]`, `[]`, `"x"`, `{"0": "x"}`, `[1, null]`}, []string{`[1, "x"]`, `[1.5]`}},
		{"fields apply to the members of objects", &contractv1.Field{Fields: []*contractv1.Field{
			{Name: "a", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true}}},
			[]string{`{"a": "x"}`, `{"a": "x", "b": 1}`, `1`, `[]`, `"x"`}, []string{`{"a": 1}`, `{}`, `{"b": "x"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := proto.Clone(tt.field).(*contractv1.Field)
			v.Name, v.Type = "v", contractv1.FieldType_FIELD_TYPE_JSON
			c := &contractv1.Contract{Subject: "t.json", Owner: "t", Fields: []*contractv1.Field{
				{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true, Key: true}, v}}
			if problems := contract.Validate(c); len(problems) > 0 {
				t.Fatalf("contract: %v", problems)
			}
			p := compile(t, c)
			for _, want := range []struct {
				values []string
				valid  bool
			}{{tt.valid, true}, {tt.invalid, false}} {
				for _, val := range want.values {
					res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, `{"id": 1, "v": `+val+`}`))
					if got := !res.Records[0].Quarantined; got != want.valid {
						t.Errorf("v = %s: valid %v (%v), want %v", val, got, res.Records[0].Failures, want.valid)
					}
				}
			}
		})
	}
}

// TestJSONFieldCannotBeAKey: a key is one value; a JSON field may be an
// object or a list.
func TestJSONFieldCannotBeAKey(t *testing.T) {
	t.Parallel()
	c := &contractv1.Contract{Subject: "t.json", Owner: "t", Fields: []*contractv1.Field{
		{Name: "v", Type: contractv1.FieldType_FIELD_TYPE_JSON, Required: true, Key: true}}}
	problems := contract.Validate(c)
	if len(problems) == 0 || !strings.Contains(problems[0].Message, "a key must be a single value, not JSON") {
		t.Fatalf("problems %v, want a key that must be a single value", problems)
	}
}
