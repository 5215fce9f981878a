package jsonschema_test

import (
	"errors"
	"strings"
	"testing"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/interop"
	"github.com/seamdata/seam/core/interop/jsonschema"
)

// specCase is one schema of JSON Schema 2020-12, used as the property v of
// a record, and instances of v with the verdict the specification gives.
// An import may refuse the schema (what Seam cannot express), naming a
// JSON pointer inside it; if it imports, every verdict must agree.
type specCase struct {
	keyword, schema string
	// defs is the root's $defs, for cases that refer to them.
	defs           string
	valid, invalid []string
	refused        bool // the import must refuse, naming where
	// ecma marks cases whose verdict rests on ECMA-262 regular expressions,
	// which the reference validator (Go's regexp) reads otherwise; its
	// verdict is not consulted for them.
	ecma bool
}

// specCases are written from the JSON Schema 2020-12 specification
// (Validation, sections 6 and 7; Core, sections 8.2.3, 10.2 and 10.3),
// keyword by keyword: each supported keyword with its edge cases, and each
// keyword Seam does not check, which must be refused at import.
var specCases = []specCase{
	// Validation 6.1.1 type: a number with a zero fraction is an integer
	// (Seam's INT64 takes integer literals only: the caveat in the report).
	{keyword: "type integer", schema: `{"type": "integer"}`, valid: []string{"1", "-7", "0"}, invalid: []string{"1.5", `"1"`, "null", "true", "[]"}},
	{keyword: "type number", schema: `{"type": "number"}`, valid: []string{"1", "1.5", "-0", "1e3"}, invalid: []string{`"1"`, "true", "null", "{}"}},
	{keyword: "type string", schema: `{"type": "string"}`, valid: []string{`""`, `"a"`, `"1"`}, invalid: []string{"1", "null", "[]", "false"}},
	{keyword: "type boolean", schema: `{"type": "boolean"}`, valid: []string{"true", "false"}, invalid: []string{"0", `"true"`, "null"}},
	{keyword: "type object", schema: `{"type": "object"}`, valid: []string{"{}", `{"a": 1}`}, invalid: []string{"[]", "1", "null"}},
	{keyword: "type array", schema: `{"type": "array", "items": {"type": "integer"}}`, valid: []string{"[]", "[1, 2]"}, invalid: []string{"{}", "1", "null"}},
	{keyword: "type list with null", schema: `{"type": ["string", "null"]}`, valid: []string{`"a"`, "null"}, invalid: []string{"1"}},
	{keyword: "type list integer and number", schema: `{"type": ["integer", "number"]}`, valid: []string{"1", "1.5"}, invalid: []string{`"1"`, "null"}},
	{keyword: "type list integer and null", schema: `{"type": ["null", "integer"]}`, valid: []string{"1", "null"}, invalid: []string{"1.5", `"a"`}},
	{keyword: "type null only", schema: `{"type": ["null"]}`, valid: []string{"null"}, invalid: []string{"0", `""`, "false", "{}", "[]"}},
	{keyword: "type null", schema: `{"type": "null"}`, valid: []string{"null"}, invalid: []string{"0", `"null"`, "[null]"}},
	{keyword: "type list of two", schema: `{"type": ["string", "integer"]}`, valid: []string{`"a"`, "1", "-3", "1.0", "1e3"}, invalid: []string{"1.5", "true", "null", "{}", "[]"}},
	{keyword: "type list of every type", schema: `{"type": ["string", "number", "boolean", "object", "array"]}`, valid: []string{`"a"`, "1.5", "true", "{}", "[1]"}, invalid: []string{"null"}},
	{keyword: "type list of containers and null", schema: `{"type": ["array", "object", "null"]}`, valid: []string{"[1, 2]", `{"a": 1}`, "null"}, invalid: []string{"1", `"a"`}},
	{keyword: "type list with bounds for each type", schema: `{"type": ["string", "number"], "minimum": 2, "exclusiveMaximum": 5, "maxLength": 2, "pattern": "^a"}`,
		valid: []string{"2", "4.9", `"a"`, `"ab"`}, invalid: []string{"1", "5", `"abc"`, `"b"`, "true"}},
	{keyword: "type list with an unknown type", schema: `{"type": ["string", "date"]}`, refused: true},
	{keyword: "type unknown", schema: `{"type": "date"}`, refused: true},

	// 6.1.2 enum, 6.1.3 const: equality as in Core 4.2.2 — 1 and 1.0 are
	// the same number; objects and arrays are equal member by member.
	{keyword: "const 0.0", schema: `{"const": 0.0}`, valid: []string{"0", "0.0", "-0"}, invalid: []string{"1", `"0"`, "false", "null"}},
	{keyword: "const 1", schema: `{"const": 1}`, valid: []string{"1", "1.0"}, invalid: []string{"2", `"1"`, "true"}},
	{keyword: "const 1.0 typed integer", schema: `{"type": "integer", "const": 1.0}`, valid: []string{"1"}, invalid: []string{"2", "null"}},
	{keyword: "const fraction typed integer", schema: `{"type": "integer", "const": 1.5}`, refused: true},
	{keyword: "const false", schema: `{"const": false}`, valid: []string{"false"}, invalid: []string{"0", "null", "true"}},
	{keyword: "const true", schema: `{"const": true}`, valid: []string{"true"}, invalid: []string{"1", `"true"`}},
	{keyword: "const string", schema: `{"const": "a"}`, valid: []string{`"a"`}, invalid: []string{`"b"`, "null", `"A"`}},
	{keyword: "enum with a nul character", schema: `{"enum": ["hello\u0000there"]}`, valid: []string{`"hello\u0000there"`}, invalid: []string{`"hellothere"`}},
	{keyword: "enum [false] is not [0]", schema: `{"enum": [[false]]}`, valid: []string{"[false]"}, invalid: []string{"[0]", "[0.0]"}},
	{keyword: "enum [0] is not [false]", schema: `{"enum": [[0]]}`, valid: []string{"[0]", "[0.0]"}, invalid: []string{"[false]"}},
	{keyword: "const string with escapes", schema: `{"const": "a\"b\\c\n"}`, valid: []string{`"a\"b\\c\n"`}, invalid: []string{`"a\"b\\c"`}},
	{keyword: "const null", schema: `{"const": null}`, valid: []string{"null"}, invalid: []string{"0", "false", `""`, "{}", "[]"}},
	{keyword: "const 2^53 against its neighbour", schema: `{"const": 9007199254740992}`, valid: []string{"9007199254740992", "9007199254740992.0"}, invalid: []string{"9007199254740991", "9007199254740991.0"}},
	{keyword: "const looks alike, other code points", schema: `{"const": "\u00e4"}`, valid: []string{`"\u00e4"`}, invalid: []string{`"a\u0308"`}},
	{keyword: "const object", schema: `{"const": {"a": 1, "b": [true, null]}}`,
		valid:   []string{`{"a": 1, "b": [true, null]}`, `{"b": [true, null], "a": 1.0}`},
		invalid: []string{`{"a": 1}`, `{"a": 1, "b": [true]}`, `{"a": 1, "b": [true, null], "c": 0}`, `{"a": true, "b": [true, null]}`, "null", "[]"}},
	{keyword: "const list", schema: `{"const": [1, 2]}`, valid: []string{"[1, 2]", "[1.0, 2.0]"}, invalid: []string{"[2, 1]", "[1]", "[1, 2, 3]", `["1", 2]`, "null", "{}"}},
	{keyword: "const empty list", schema: `{"const": []}`, valid: []string{"[]"}, invalid: []string{"[1]", `[""]`, "{}"}},
	{keyword: "const empty object", schema: `{"const": {}}`, valid: []string{"{}"}, invalid: []string{`{"a": 1}`, "[]"}},
	{keyword: "const typed object", schema: `{"type": "object", "const": {"a": {"b": 0}}}`, valid: []string{`{"a": {"b": 0.0}}`}, invalid: []string{`{"a": {"b": false}}`, `{"a": {}}`}},
	{keyword: "const list of lists", schema: `{"const": [[1]]}`, valid: []string{"[[1]]", "[[1.0]]"}, invalid: []string{"[1]", "[[2]]", "[[1], [1]]", "null"}},
	{keyword: "enum with null", schema: `{"enum": [6, null]}`, valid: []string{"6", "6.0", "null"}, invalid: []string{"7", `"6"`}},
	{keyword: "enum strings", schema: `{"enum": ["a", "b"]}`, valid: []string{`"a"`}, invalid: []string{`"c"`, "null", "1"}},
	{keyword: "enum numbers", schema: `{"enum": [1, 2.5]}`, valid: []string{"1", "1.0", "2.5"}, invalid: []string{"2", "null", `"1"`, "true"}},
	{keyword: "enum numbers typed", schema: `{"type": "number", "enum": [1, 2.5]}`, valid: []string{"1", "1.0", "2.5"}, invalid: []string{"2", "null"}},
	{keyword: "enum integers typed", schema: `{"type": "integer", "enum": [1, 2.5, 3.0]}`, valid: []string{"1", "3"}, invalid: []string{"2", "null"}},
	{keyword: "enum typed string with other values", schema: `{"type": "string", "enum": ["a", 1, null]}`, valid: []string{`"a"`}, invalid: []string{"1", "null", `"b"`}},
	{keyword: "enum typed with null", schema: `{"type": ["string", "null"], "enum": ["a", null]}`, valid: []string{`"a"`, "null"}, invalid: []string{`"b"`}},
	{keyword: "enum booleans", schema: `{"enum": [false]}`, valid: []string{"false"}, invalid: []string{"0", "true"}},
	{keyword: "enum objects", schema: `{"enum": [{"a": 1}, {"a": [1.5]}]}`, valid: []string{`{"a": 1.0}`, `{"a": [1.5]}`}, invalid: []string{`{"a": 2}`, `{"a": 1, "b": 1}`, "{}", "1"}},
	{keyword: "enum lists", schema: `{"enum": [[1], [1, 2], []]}`, valid: []string{"[1]", "[1.0, 2]", "[]"}, invalid: []string{"[2]", "[2, 1]", "1"}},
	{keyword: "enum objects with null", schema: `{"enum": [{"a": null}, null]}`, valid: []string{`{"a": null}`, "null"}, invalid: []string{"{}", `{"a": 0}`}},
	{keyword: "enum mixed", schema: `{"enum": [6, "foo", [], true, {"foo": 12}]}`, valid: []string{"6", "6.0", `"foo"`, "[]", "true", `{"foo": 12.0}`}, invalid: []string{"null", `{"foo": false}`, `{"foo": 12, "boo": 42}`, "false", "[6]", `"6"`}},
	{keyword: "enum with a list", schema: `{"enum": [[1], 2]}`, valid: []string{"[1]", "2", "2.0"}, invalid: []string{"1", "[2]", "null"}},
	{keyword: "enum of lists of several types", schema: `{"enum": [[1], ["a"]]}`, valid: []string{"[1]", `["a"]`}, invalid: []string{`[1, "a"]`, "[]", `"a"`}},
	{keyword: "enum empty", schema: `{"enum": []}`, refused: true},
	{keyword: "enum beside const", schema: `{"enum": [1, 2], "const": 1}`, refused: true},

	// 6.2 numbers: bounds of integers are the whole numbers they admit.
	{keyword: "minimum", schema: `{"type": "number", "minimum": 1.1}`, valid: []string{"1.1", "2"}, invalid: []string{"1", "null"}},
	{keyword: "maximum", schema: `{"type": "number", "maximum": 3}`, valid: []string{"3", "3.0", "-1"}, invalid: []string{"3.5"}},
	{keyword: "minimum of an integer", schema: `{"type": "integer", "minimum": 1.5}`, valid: []string{"2"}, invalid: []string{"1"}},
	{keyword: "maximum of an integer", schema: `{"type": "integer", "maximum": -1.5}`, valid: []string{"-2"}, invalid: []string{"-1"}},
	{keyword: "exclusiveMinimum", schema: `{"type": "number", "exclusiveMinimum": 1.1}`, valid: []string{"1.2"}, invalid: []string{"1.1", "1"}},
	{keyword: "exclusiveMaximum", schema: `{"type": "number", "exclusiveMaximum": 3}`, valid: []string{"2.9"}, invalid: []string{"3", "3.0"}},
	{keyword: "exclusiveMaximum integer", schema: `{"type": "integer", "exclusiveMaximum": 3}`, valid: []string{"2"}, invalid: []string{"3"}},
	{keyword: "exclusiveMaximum of an integer, fraction", schema: `{"type": "integer", "exclusiveMaximum": 2.5}`, valid: []string{"2"}, invalid: []string{"3"}},
	{keyword: "exclusiveMinimum of an integer, fraction", schema: `{"type": "integer", "exclusiveMinimum": 1.5}`, valid: []string{"2"}, invalid: []string{"1"}},
	{keyword: "both bounds", schema: `{"type": "number", "minimum": 0, "exclusiveMaximum": 1}`, valid: []string{"0", "0.5"}, invalid: []string{"1", "-0.1"}},
	{keyword: "multipleOf integer", schema: `{"type": "integer", "multipleOf": 3}`, valid: []string{"0", "9", "-3"}, invalid: []string{"7", "null"}},
	{keyword: "multipleOf fraction", schema: `{"type": "number", "multipleOf": 0.01}`, refused: true},
	{keyword: "multipleOf on a number", schema: `{"type": "number", "multipleOf": 2}`, refused: true},
	{keyword: "minimum on a string never applies", schema: `{"type": "string", "minimum": 5}`, valid: []string{`"a"`}, invalid: []string{"1"}},

	// 6.3 strings: lengths count code points.
	{keyword: "maxLength", schema: `{"type": "string", "maxLength": 2}`, valid: []string{`"ab"`, `"éé"`, `"💩💩"`, `""`}, invalid: []string{`"abc"`, `"ééé"`}},
	{keyword: "minLength", schema: `{"type": "string", "minLength": 2}`, valid: []string{`"ab"`, `"💩💩"`}, invalid: []string{`"a"`, `"💩"`}},
	{keyword: "pattern", schema: `{"type": "string", "pattern": "^a+$"}`, valid: []string{`"aa"`}, invalid: []string{`"b"`, `"aab"`}},
	{keyword: "pattern is not anchored", schema: `{"type": "string", "pattern": "a+"}`, valid: []string{`"xaay"`}, invalid: []string{`"xyz"`}},
	{keyword: "pattern white space is ECMA-262's", schema: `{"type": "string", "pattern": "^\\s$"}`, valid: []string{`" "`, `"\u00a0"`, `"\ufeff"`, `"\u2003"`}, invalid: []string{`"a"`}, ecma: true},
	{keyword: "pattern non-space is ECMA-262's", schema: `{"type": "string", "pattern": "^\\S$"}`, valid: []string{`"a"`}, invalid: []string{`"\u00a0"`, `" "`}, ecma: true},
	{keyword: "pattern dot leaves out line terminators", schema: `{"type": "string", "pattern": "^a.b$"}`, valid: []string{`"axb"`, `"a\tb"`}, invalid: []string{`"a\nb"`, `"a\rb"`, `"a\u2028b"`}, ecma: true},
	{keyword: "pattern with look-ahead", schema: `{"type": "string", "pattern": "^(?=a)"}`, refused: true},
	{keyword: "pattern with a back reference", schema: `{"type": "string", "pattern": "(a)\\1"}`, refused: true},
	{keyword: "pattern with a unicode escape", schema: `{"type": "string", "pattern": "^\\u0041$"}`, refused: true},
	{keyword: "pattern with an RE2-only escape", schema: `{"type": "string", "pattern": "\\Aa"}`, refused: true},
	{keyword: "pattern on a date-time", schema: `{"type": "string", "format": "date-time", "pattern": "^2020"}`, valid: []string{`"2020-01-01T00:00:00Z"`}, invalid: []string{`"2021-01-01T00:00:00Z"`}},
	{keyword: "maxLength on a uuid", schema: `{"type": "string", "format": "uuid", "maxLength": 10}`, valid: []string{}, invalid: []string{`"2eb8aa08-aa98-11ea-b4aa-73b441d16380"`}},

	// 7.3 formats Seam asserts, read as draft 2020-12's format-assertion
	// vocabulary reads them; the others are refused.
	{keyword: "format date-time", schema: `{"type": "string", "format": "date-time"}`,
		valid: []string{`"1963-06-19T08:30:06.283185Z"`, `"1963-06-19t08:30:06z"`, `"1998-12-31T23:59:60Z"`, `"1998-12-31T15:59:60.123-08:00"`, `"2020-01-01T00:00:00+23:59"`, `"2020-01-01T00:00:00-00:00"`},
		invalid: []string{`"2020-01-01T00:00:00-24:00"`, `"2020-01-01T00:00:00+10:60"`, `"1963-06-19T08:30:06"`, `"2020-01-01 00:00:00Z"`, `"1990-02-31T15:59:59.123-08:00"`, `"1998-12-31T23:59:61Z"`, `"2020-01-01T24:00:00Z"`, `"1963-06-19T08:30:06.Z"`, "1",
			`"1998-12-31T23:58:60Z"`, `"1998-12-31T22:59:60Z"`, `"1963-06-19T08:30:06.28123+01:00Z"`, `"2013-350T01:01:01"`, `"1963-6-19T08:30:06Z"`, `"1963-06-1৪T00:00:00Z"`, `"+11963-06-19T08:30:06Z"`}},
	{keyword: "format date-time fractions", schema: `{"type": "string", "format": "date-time"}`,
		valid: []string{`"1985-04-12T00:59:59.999999999999999Z"`, `"1937-01-01T12:00:27.87+00:20"`}, invalid: []string{`"1937-01-01T12:00:27,87+00:20"`}},
	{keyword: "format date", schema: `{"type": "string", "format": "date"}`, valid: []string{`"2020-02-29"`, `"1963-06-19"`}, invalid: []string{`"2021-02-29"`, `"2020-1-01"`, `"2020-13-01"`, `"06/19/1963"`, `"2020-01-01T00:00:00Z"`}},
	{keyword: "format uuid", schema: `{"type": "string", "format": "uuid"}`,
		valid:   []string{`"2eb8aa08-aa98-11ea-b4aa-73b441d16380"`, `"2EB8AA08-AA98-11EA-B4AA-73B441D16380"`, `"00000000-0000-0000-0000-000000000000"`},
		invalid: []string{`"2eb8aa08aa9811eab4aa73b441d16380"`, `"2eb8aa08-aa98-11ea-b4aa-73b441d1638"`, `"{2eb8aa08-aa98-11ea-b4aa-73b441d16380}"`, `"urn:uuid:2eb8aa08-aa98-11ea-b4aa-73b441d16380"`, `"2eb8aa08-aa98-11ea-73b4-41d16380"`}},
	{keyword: "format ipv4", schema: `{"type": "string", "format": "ipv4"}`, valid: []string{`"192.168.0.1"`, `"0.0.0.0"`}, invalid: []string{`"087.10.0.1"`, `"256.0.0.1"`, `"1.2.3"`, `"1.2.3.4.5"`, `"0x7f000001"`}},
	{keyword: "format email", schema: `{"type": "string", "format": "email"}`, refused: true},
	{keyword: "format hostname", schema: `{"type": "string", "format": "hostname"}`, refused: true},
	{keyword: "format int32 of OpenAPI", schema: `{"type": "integer", "format": "int32"}`, valid: []string{"2147483648", "1"}, invalid: []string{"1.5"}},

	// Core 10.3.1.2 items: every element; null elements only when the
	// element schema admits null.
	{keyword: "items", schema: `{"type": "array", "items": {"type": "integer"}}`, valid: []string{"[1, 2]", "[]"}, invalid: []string{`[1, "a"]`, "[null]", "[1.5]"}},
	{keyword: "items with null", schema: `{"type": "array", "items": {"type": ["string", "null"]}}`, valid: []string{`["a", null]`}, invalid: []string{"[1]"}},
	{keyword: "items date-time", schema: `{"type": "array", "items": {"type": "string", "format": "date-time"}}`, valid: []string{`["2020-01-01T00:00:00Z"]`}, invalid: []string{`["x"]`, `["2020-01-01"]`}},
	{keyword: "items objects", schema: `{"type": "array", "items": {"type": "object"}}`, valid: []string{`[{}, {"a": 1}]`}, invalid: []string{"[1]", "[null]"}},
	{keyword: "minItems and maxItems", schema: `{"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}`, valid: []string{`["a"]`, `["a", "b"]`}, invalid: []string{"[]", `["a", "b", "c"]`}},
	{keyword: "items with lengths and a pattern", schema: `{"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 2, "pattern": "^[a-z]"}}`,
		valid: []string{`["ab", "aé"]`, "[]"}, invalid: []string{`["abc"]`, `[""]`, `["A"]`, `["a", null]`}},
	{keyword: "items with enum", schema: `{"type": "array", "items": {"enum": [1, 2]}}`, valid: []string{"[1, 2.0]", "[]"}, invalid: []string{"[3]", `["1"]`, "[null]"}},
	{keyword: "items with text values", schema: `{"type": "array", "items": {"type": ["string", "null"], "enum": ["a", null]}}`, valid: []string{`["a", null]`}, invalid: []string{`["b"]`}},
	{keyword: "items with bounds", schema: `{"type": "array", "items": {"type": "integer", "minimum": 1, "exclusiveMaximum": 3, "multipleOf": 1}}`,
		valid: []string{"[1, 2]"}, invalid: []string{"[0]", "[3]", "[2.5]"}},
	{keyword: "items with exclusive bounds", schema: `{"type": "array", "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5}}`,
		valid: []string{"[0.1, 1.5]"}, invalid: []string{"[0]", "[1.6]"}},
	{keyword: "items date-time with a pattern", schema: `{"type": "array", "items": {"type": "string", "format": "date-time", "pattern": "Z$"}}`,
		valid: []string{`["2020-01-01T00:00:00Z"]`}, invalid: []string{`["2020-01-01T00:00:00+01:00"]`}},
	{keyword: "items of a nested array", schema: `{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 1}}}}`,
		valid: []string{`{"tags": ["a"]}`, "{}"}, invalid: []string{`{"tags": ["ab"]}`}},
	{keyword: "items objects with properties", schema: `{"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}`, refused: true},
	{keyword: "array without items", schema: `{"type": "array"}`, valid: []string{"[]", `[1, "a", null, {}]`}, invalid: []string{"{}", "1", "null"}},
	{keyword: "items true", schema: `{"type": "array", "items": true}`, valid: []string{`[1, "a", null]`}, invalid: []string{"{}"}},
	{keyword: "items empty", schema: `{"type": "array", "items": {}}`, valid: []string{`[1, "a", null]`}, invalid: []string{"{}"}},
	{keyword: "items false", schema: `{"type": "array", "items": false}`, refused: true},
	{keyword: "items without type", schema: `{"items": {"type": "integer", "maximum": 3}}`, valid: []string{"[1, 3]", "[]", `{"a": "x"}`, `"x"`, "1"}, invalid: []string{`[1, "x"]`, "[4]", "[null]", "[1.5]"}},
	{keyword: "items false without type", schema: `{"items": false}`, valid: []string{"[]", "1", "{}"}, invalid: []string{"[1]"}},
	{keyword: "items of any type without type", schema: `{"items": {"enum": [1, "a"]}, "minItems": 1, "maxItems": 2}`, valid: []string{"[1, \"a\"]", "[1.0]", "{}", `""`}, invalid: []string{"[]", "[1, 1, 1]", "[2]", "[null]"}},
	{keyword: "arrays of arrays", schema: `{"type": "array", "items": {"type": "array", "items": {"type": "string"}}}`, refused: true},

	// Core 10.3.2.1 properties, Validation 6.5.3 required.
	{keyword: "properties", schema: `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}`,
		valid: []string{`{"a": 1}`, `{"a": 1, "b": "x", "c": null}`}, invalid: []string{"{}", `{"a": "x"}`, `{"a": 1, "b": 2}`, `{"a": 1, "b": null}`, `{"a": null}`}},
	{keyword: "nested exclusive bound and enum", schema: `{"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": 0, "enum": [1, 2.5, -1]}, "k": {"type": "integer", "multipleOf": 2}}}`,
		valid: []string{`{"n": 1}`, `{"n": 2.5}`, `{"k": 4}`, "{}"}, invalid: []string{`{"n": -1}`, `{"n": 2}`, `{"k": 3}`}},
	{keyword: "nested const object", schema: `{"type": "object", "properties": {"o": {"const": {"x": 1}}}}`, valid: []string{`{"o": {"x": 1.0}}`, "{}"}, invalid: []string{`{"o": {"x": 2}}`, `{"o": null}`}},
	{keyword: "untyped member", schema: `{"type": "object", "properties": {"a": {}, "b": true, "c": {"description": "any"}}}`,
		valid: []string{`{"a": null, "b": [1], "c": {"x": 1}}`, `{"a": 1}`}, invalid: []string{"1"}},
	{keyword: "required untyped member", schema: `{"type": "object", "properties": {"a": {}}, "required": ["a"]}`, valid: []string{`{"a": null}`, `{"a": 1}`}, invalid: []string{"{}", `{"b": 1}`}},
	{keyword: "required without type", schema: `{"properties": {"foo": {}, "bar": {}}, "required": ["foo"]}`, valid: []string{`{"foo": 1}`, `{"foo": null}`, "[]", `""`, "12", "null"}, invalid: []string{`{"bar": 1}`, "{}"}},
	{keyword: "required undeclared member", schema: `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}`, valid: []string{`{"b": null}`, `{"b": [1], "a": "x"}`}, invalid: []string{"{}", `{"a": "x"}`}},
	{keyword: "required names that need quoting", schema: `{"required": ["foo\nbar", "foo\"bar", "__proto__"]}`, valid: []string{`{"foo\nbar": 1, "foo\"bar": 1, "__proto__": 12}`, "12"}, invalid: []string{`{"foo\nbar": 1}`, "{}"}},
	{keyword: "required but nullable", schema: `{"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"]}`, valid: []string{`{"a": null}`, `{"a": "x"}`}, invalid: []string{"{}", `{"a": 1}`}},
	{keyword: "false member", schema: `{"type": "object", "properties": {"a": false, "b": true}}`, valid: []string{"{}", `{"b": 1}`}, invalid: []string{`{"a": null}`, `{"a": 1, "b": 1}`}},
	{keyword: "properties without type", schema: `{"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}`, valid: []string{`{"a": 1, "b": "x"}`, `{"c": []}`, "[]", "12", `"x"`}, invalid: []string{`{"a": 1, "b": {}}`, `{"a": [], "b": {}}`, `{"a": null}`}},
	{keyword: "properties without type, nested", schema: `{"properties": {"a": {"properties": {"b": {"type": "string"}}}}}`, valid: []string{`{"a": {"b": "x"}}`, `{"a": 1}`, "1"}, invalid: []string{`{"a": {"b": 37}}`}},
	{keyword: "constraints without type", schema: `{"minimum": 1}`, valid: []string{"1", "2.5", `"x"`, "true", "{}", "[]", "null"}, invalid: []string{"0", "0.5"}},
	{keyword: "exclusive bounds without type", schema: `{"exclusiveMinimum": -2, "exclusiveMaximum": 3.0}`, valid: []string{"-1", "2.9", `"x"`}, invalid: []string{"-2", "-2.0", "3", "-3"}},
	{keyword: "multipleOf without type", schema: `{"multipleOf": 2}`, valid: []string{"10", "0", "4.0", `"foo"`}, invalid: []string{"7", "7.5"}},
	{keyword: "multipleOf of a fraction without type", schema: `{"multipleOf": 1.5}`, refused: true},
	{keyword: "lengths without type", schema: `{"minLength": 2, "maxLength": 3}`, valid: []string{`"ab"`, `"💩💩"`, "1", "[1]", "{}"}, invalid: []string{`"a"`, `"💩"`, `"abcd"`}},
	{keyword: "pattern without type", schema: `{"pattern": "^a*$"}`, valid: []string{`"aaa"`, "true", "123", "1.0", "{}", "[]", "null"}, invalid: []string{`"abc"`}},
	{keyword: "format without type", schema: `{"format": "date-time"}`, refused: true},

	// 10.3.2.3 additionalProperties: a schema for the other members.
	{keyword: "additionalProperties false", schema: `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}`,
		valid: []string{`{"a": 1}`, "{}"}, invalid: []string{`{"a": 1, "b": 2}`, `{"a": "x"}`}},
	{keyword: "additionalProperties false, untyped members", schema: `{"type": "object", "properties": {"foo": {}, "bar": {}, "n": {"type": "integer"}}, "additionalProperties": false}`,
		valid: []string{`{"foo": 1, "bar": [null]}`, `{"foo": null}`, `{"n": 2}`, "{}"}, invalid: []string{`{"foo": 1, "quux": true}`, `{"n": "x"}`, `{"quux": null}`}},
	{keyword: "additionalProperties false, no properties", schema: `{"type": "object", "additionalProperties": false}`, valid: []string{"{}"}, invalid: []string{`{"a": 1}`, "[]"}},
	{keyword: "additionalProperties schema", schema: `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}}`,
		valid: []string{`{"a": 1, "b": true}`, "{}"}, invalid: []string{`{"a": 1, "b": 1}`, `{"b": null}`}},
	{keyword: "additionalProperties schema without type", schema: `{"properties": {"foo": {}, "bar": {}}, "additionalProperties": {"type": ["null", "boolean"]}}`,
		valid: []string{`{"foo": 1, "bar": 2, "quux": true}`, `{"quux": null}`, "[1]", "1"}, invalid: []string{`{"foo": 1, "quux": 12}`}},
	{keyword: "additionalProperties with another schema", schema: `{"type": "object", "additionalProperties": {"type": "string", "maxLength": 2}}`, refused: true},
	{keyword: "additionalProperties empty schema", schema: `{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {}}`,
		valid: []string{`{"a": 1, "b": "x"}`}, invalid: []string{`{"a": "x"}`, "[]"}},

	// Core 8.2.3.1 $ref: the referenced schema applies; keywords beside it
	// apply too (2019-09 and later).
	{keyword: "$ref", schema: `{"$ref": "#/$defs/small"}`, defs: `{"small": {"type": "integer", "maximum": 9}}`, valid: []string{"9"}, invalid: []string{"10", `"a"`}},
	{keyword: "$ref with an annotation beside", schema: `{"$ref": "#/$defs/small", "title": "n"}`, defs: `{"small": {"type": "integer", "maximum": 9}}`, valid: []string{"9"}, invalid: []string{"10"}},
	{keyword: "$ref with an assertion beside", schema: `{"$ref": "#/$defs/small", "minimum": 1}`, defs: `{"small": {"type": "integer", "maximum": 9}}`, refused: true},
	{keyword: "$ref not resolvable", schema: `{"$ref": "#/$defs/none"}`, refused: true},
	{keyword: "$ref to another document", schema: `{"$ref": "other.json#/x"}`, refused: true},
	{keyword: "$dynamicRef", schema: `{"type": "string", "$dynamicRef": "#x"}`, refused: true},

	// Applicators and assertions Seam does not check: refused where used.
	{keyword: "allOf", schema: `{"type": "integer", "allOf": [{"minimum": 1}]}`, refused: true},
	{keyword: "anyOf", schema: `{"anyOf": [{"type": "integer"}, {"type": "string"}]}`, refused: true},
	{keyword: "oneOf", schema: `{"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 0}]}`, refused: true},
	{keyword: "not", schema: `{"type": "integer", "not": {"const": 1}}`, refused: true},
	{keyword: "if then else", schema: `{"type": "integer", "if": {"minimum": 1}, "then": {"maximum": 9}, "else": {"maximum": 0}}`, refused: true},
	{keyword: "patternProperties", schema: `{"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {"^x": {"type": "integer"}}}`, refused: true},
	{keyword: "propertyNames", schema: `{"type": "object", "propertyNames": {"maxLength": 3}}`, refused: true},
	{keyword: "minProperties", schema: `{"type": "object", "minProperties": 1}`, refused: true},
	{keyword: "maxProperties", schema: `{"type": "object", "maxProperties": 1}`, refused: true},
	{keyword: "dependentRequired", schema: `{"type": "object", "properties": {"a": {"type": "string"}}, "dependentRequired": {"a": ["b"]}}`, refused: true},
	{keyword: "dependentSchemas", schema: `{"type": "object", "properties": {"a": {"type": "string"}}, "dependentSchemas": {"a": {"required": ["b"]}}}`, refused: true},
	{keyword: "uniqueItems", schema: `{"type": "array", "items": {"type": "integer"}, "uniqueItems": true}`, refused: true},
	{keyword: "contains", schema: `{"type": "array", "items": {"type": "integer"}, "contains": {"const": 1}}`, refused: true},
	{keyword: "prefixItems", schema: `{"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "integer"}}`, refused: true},
	{keyword: "unevaluatedProperties", schema: `{"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": false}`, refused: true},
	{keyword: "unevaluatedItems", schema: `{"type": "array", "items": {"type": "integer"}, "unevaluatedItems": false}`, refused: true},

	// Annotations assert nothing: the verdicts stay the type's.
	{keyword: "annotations", schema: `{"type": "integer", "title": "t", "description": "d", "examples": [1], "default": 0, "$comment": "c", "deprecated": true, "readOnly": true, "x-extension": 1}`,
		valid: []string{"1"}, invalid: []string{`"a"`}},
}

// TestSpecification imports each case and, unless it is refused, wants
// Seam's verdict on every instance to be the specification's, checked
// against a JSON Schema validator too so the cases themselves are right.
func TestSpecification(t *testing.T) {
	t.Parallel()
	for _, tc := range specCases {
		t.Run(tc.keyword, func(t *testing.T) {
			t.Parallel()
			defs := ""
			if tc.defs != "" {
				defs = `, "$defs": ` + tc.defs
			}
			doc := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"id": {"type": "integer"}, "v": ` + tc.schema + `}, "required": ["id"]` + defs + `}`
			res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Source: tc.keyword, Subject: "spec.v", Owner: "spec"})
			if tc.refused {
				var ie *interop.Error
				if !errors.As(err, &ie) || !strings.HasPrefix(ie.Path, "/properties/v") {
					t.Fatalf("import: got %v, want a refusal at /properties/v…", err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			validator := compileString(t, doc)
			for _, want := range []struct {
				insts []string
				valid bool
			}{{tc.valid, true}, {tc.invalid, false}} {
				for _, inst := range want.insts {
					line := []byte(`{"id": 1, "v": ` + inst + `}`)
					if verr := validatorSays(t, validator, line); !tc.ecma && (verr == nil) != want.valid {
						t.Fatalf("the case is wrong: the validator says %v for %s", verr, inst)
					}
					rr := seamSays(t, res.Contract, line)[0]
					if rr.Quarantined == want.valid {
						t.Errorf("v = %s: got quarantined=%v (%v), want valid=%v\ncontract: %v", inst, rr.Quarantined, rr.Failures, want.valid, res.Contract)
					}
				}
			}
		})
	}
}

func compileString(t *testing.T, doc string) *sjs.Schema {
	t.Helper()
	return compileAt(t, "file:///spec.json", []byte(doc))
}

// TestCheckNamesDoNotCollide: a_b and a.b both give the name a_b_not_null;
// the import numbers the second, so the contract compiles as it is.
func TestCheckNamesDoNotCollide(t *testing.T) {
	t.Parallel()
	doc := `{"type": "object", "properties": {"a_b": {"type": "string"}, "a": {"type": "object", "properties": {"b": {"type": "string"}}}}}`
	res, err := jsonschema.Import([]byte(doc), jsonschema.ImportOptions{Subject: "spec.names", Owner: "spec"})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	var names []string
	for _, c := range res.Contract.GetChecks() {
		names = append(names, c.GetName())
	}
	if strings.Join(names, " ") != "a_b_not_null a_b_not_null_2 a_not_null" {
		t.Errorf("got checks %v, want a_b_not_null a_b_not_null_2 a_not_null", names)
	}
	if _, err := check.Compile(res.Contract); err != nil {
		t.Error(err)
	}
}
