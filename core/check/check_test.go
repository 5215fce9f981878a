package check_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// compileError is a rule the check compiler refuses, and a part of what
// it says.
type compileError struct{ rule, want string }

// wantCompileErrors compiles the contract withChecks makes of each rule
// as its one check, wanting a *check.Error that says what the case wants.
func wantCompileErrors(t *testing.T, withChecks func(...*contractv1.Check) *contractv1.Contract, tests []compileError) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			_, err := check.Compile(withChecks(&contractv1.Check{Name: "c", Rule: tt.rule}))
			var ce *check.Error
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Compile(%q) error = %v, want a *check.Error containing %q", tt.rule, err, tt.want)
			}
		})
	}
}

func orders(checks ...*contractv1.Check) *contractv1.Contract {
	return &contractv1.Contract{Subject: "shop.orders", Fields: recordtest.OrderFields(), Checks: checks}
}

func compile(t testing.TB, c *contractv1.Contract, opts ...check.Option) *check.Plan {
	t.Helper()
	p, err := check.Compile(c, opts...)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

func decode(t testing.TB, p *check.Plan, format recordv1.Format, data string) []record.Record {
	t.Helper()
	b, err := record.NewDecoder(p.Schema(), record.Options{}).Decode(format, []byte(data), 0)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return b.Records
}

func checkIndex(t testing.TB, p *check.Plan, name string) int {
	t.Helper()
	for i, c := range p.Checks() {
		if c.Name == name {
			return i
		}
	}
	t.Fatalf("no check named %q", name)
	return -1
}

// order returns a valid order with edits applied: "field": raw JSON value,
// or "-field" to drop it.
func order(edits ...string) string {
	valid := string(recordtest.OrderJSON(nil, 7))
	for _, e := range edits {
		name, val, _ := strings.Cut(e, "=")
		start := strings.Index(valid, `"`+strings.TrimPrefix(name, "-")+`":`)
		if start < 0 {
			valid = valid[:len(valid)-1] + `,"` + name + `":` + val + "}"
			continue
		}
		end := start + strings.IndexAny(valid[start:], ",}")
		if strings.Contains(valid[start:end], `"`+strings.TrimPrefix(name, "-")+`":"`) {
			// A string value: skip to its closing quote.
			q := strings.Index(valid[start:], `":"`) + start + 3
			end = q + strings.Index(valid[q:], `"`) + 1
		}
		if strings.HasPrefix(name, "-") {
			if valid[end] == ',' {
				end++
			}
			valid = valid[:start] + valid[end:]
			continue
		}
		valid = valid[:start] + `"` + name + `":` + val + valid[end:]
	}
	return strings.Replace(valid, ",}", "}", 1)
}

func TestOrderHelper(t *testing.T) {
	t.Parallel()
	p := compile(t, orders())
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, order()+"\n"+order("-coupon", `amount=1.5`, `order_id="ORD-0000000008"`)))
	for _, r := range res.Records {
		if len(r.Failures) != 0 {
			t.Fatalf("valid order failed: %+v", r.Failures)
		}
	}
}

func TestImpliedChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		record string
		check  string // "" means the record passes
		code   recordv1.ErrorCode
		msg    string
	}{
		{"valid", order(), "", 0, ""},
		{"string in INT64", order(`customer_id="123"`), "customer_id.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, `got string "123", want INT64`},
		{"12.0 in INT64", order(`customer_id=12.0`), "customer_id.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "got number 12.0, want INT64"},
		{"UUID in INT64", order(`customer_id="0b5f6a1e-7c1d-4c2a-9d6e-3f1a2b3c4d5e"`), "customer_id.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "want INT64"},
		{"int64 overflow", order(`customer_id=9223372036854775808`), "customer_id.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "out-of-range number"},
		{"INT32 overflow", order(`items=2147483648`), "items.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "want INT32"},
		{"bool as string", order(`amount="12.5"`), "amount.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "want DOUBLE"},
		{"integer in DOUBLE", order(`amount=12`), "", 0, ""},
		{"missing required", order(`-customer_id`), "customer_id.required", recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "absent, but it is required"},
		{"null required", order(`customer_id=null`), "customer_id.required", recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "null, but it is required"},
		{"null optional", order(`coupon=null`, `status=null`), "", 0, ""},
		{"pattern", order(`order_id="ORD-12"`), "order_id.pattern", recordv1.ErrorCode_ERROR_CODE_PATTERN_MISMATCH, `does not match pattern ^ORD-[0-9]{10}$`},
		{"enum", order(`currency="JPY"`), "currency.enum", recordv1.ErrorCode_ERROR_CODE_ENUM_MISMATCH, "is not one of USD, EUR, GBP"},
		{"range below", order(`amount=-0.01`), "amount.range", recordv1.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "outside [0, 1e+06]"},
		{"range above int", order(`items=1001`), "items.range", recordv1.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "integer 1001 is outside [1, 1000]"},
		{"range edge", order(`items=1000`, `amount=0`), "", 0, ""},
		{"length", order(`country="USA"`), "country.length", recordv1.ErrorCode_ERROR_CODE_LENGTH, "length 3 is outside [2, 2]"},
		{"length counts characters", order(`country="ÉÜ"`), "", 0, ""},
		{"length counts characters past the bound", order(`country="ÉÜÖ"`), "country.length", recordv1.ErrorCode_ERROR_CODE_LENGTH, "length 3 is outside [2, 2]"},
		{"length of four-byte characters", order(`country="😀😀"`), "", 0, ""},
		{"length under the bound", order(`country="É"`), "country.length", recordv1.ErrorCode_ERROR_CODE_LENGTH, "length 1 is outside [2, 2]"},
		{"timestamp", order(`created_at="2025-03-01 10:00:00"`), "created_at.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "as an RFC 3339 string"},
		{"timestamp offset", order(`created_at="2024-02-29T23:59:59.123+05:30"`), "", 0, ""},
		{"timestamp bad day", order(`created_at="2025-02-29T10:00:00Z"`), "created_at.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "RFC 3339"},
		{"object in string", order(`status={"a":1}`), "status.type", recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "got object, want STRING"},
	}
	p := compile(t, orders())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, tt.record))
			r := res.Records[0]
			if tt.check == "" {
				if len(r.Failures) != 0 || r.Quarantined {
					t.Fatalf("got failures %+v, want none", r.Failures)
				}
				return
			}
			if len(r.Failures) != 1 {
				t.Fatalf("got failures %+v, want exactly one of %s", r.Failures, tt.check)
			}
			f := r.Failures[0]
			if got := p.Checks()[f.Check].Name; got != tt.check || f.Code != tt.code || !strings.Contains(f.Message, tt.msg) {
				t.Fatalf("got %s %v %q, want %s %v containing %q", got, f.Code, f.Message, tt.check, tt.code, tt.msg)
			}
			if res.Checks[f.Check].Failures != 1 || len(res.Checks[f.Check].Samples) != 1 || res.Checks[f.Check].Samples[0] != 1 {
				t.Fatalf("check result %+v, want 1 failure at position 1", res.Checks[f.Check])
			}
		})
	}
}

func TestTypes(t *testing.T) {
	t.Parallel()
	fields := []*contractv1.Field{
		{Name: "u", Type: contractv1.FieldType_FIELD_TYPE_UUID},
		{Name: "d", Type: contractv1.FieldType_FIELD_TYPE_DATE},
		{Name: "dl", Type: contractv1.FieldType_FIELD_TYPE_DATE, Layout: "02/01/2006"},
		{Name: "dec", Type: contractv1.FieldType_FIELD_TYPE_DECIMAL},
		{Name: "fl", Type: contractv1.FieldType_FIELD_TYPE_FLOAT},
		{Name: "db", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE},
		{Name: "pos", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE, Min: protoFloat(0)},
		{Name: "dp", Type: contractv1.FieldType_FIELD_TYPE_DECIMAL, Precision: proto32(8), Scale: proto32(1)},
		{Name: "b", Type: contractv1.FieldType_FIELD_TYPE_BOOL},
		{Name: "arr", Type: contractv1.FieldType_FIELD_TYPE_ARRAY, Items: &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_INT64}, MaxLength: proto64(2)},
		{Name: "o", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true}}},
	}
	p := compile(t, &contractv1.Contract{Fields: fields})
	tests := []struct {
		rec  string
		fail string
	}{
		{`{"u":"0B5F6A1E-7c1d-4c2a-9d6e-3f1a2b3c4d5e","d":"2024-02-29","dl":"31/12/2024","dec":"-12.50","fl":1.5,"b":false,"arr":[1,null],"o":{"id":"x"}}`, ""},
		{`{"u":"0b5f6a1e7c1d4c2a9d6e3f1a2b3c4d5e"}`, "u.type"},
		{`{"d":"2023-02-29"}`, "d.type"},
		{`{"dl":"2024-12-31"}`, "dl.type"},
		{`{"dec":"1e5"}`, "dec.type"},
		{`{"dec":12.5}`, ""},
		{`{"fl":1e39}`, "fl.type"},
		{`{"fl":3.4028235e+38}`, ""}, // the largest real, as PostgreSQL prints it
		{`{"fl":-3.4028235e38}`, ""},
		{`{"fl":1.4e-45}`, ""},
		{`{"fl":3.4028237e38}`, "fl.type"}, // rounds to +Inf as a float32
		// NaN and the infinities travel as protobuf's JSON mapping spells
		// them, and only so.
		{`{"fl":"NaN","db":"NaN"}`, ""},
		{`{"fl":"Infinity","db":"-Infinity"}`, ""},
		{`{"fl":"-Infinity","db":"Infinity"}`, ""},
		{`{"db":"nan"}`, "db.type"},
		{`{"db":"inf"}`, "db.type"},
		{`{"db":"+Infinity"}`, "db.type"},
		{`{"db":"1.5"}`, "db.type"},
		{`{"db":1e400}`, "db.type"}, // an overflow is not an infinity
		{`{"dec":"NaN"}`, "dec.type"},
		{`{"pos":"Infinity"}`, ""},
		{`{"pos":"-Infinity"}`, "pos.range"},
		{`{"pos":"NaN"}`, "pos.range"}, // NaN is in no bounded range
		{`{"dp":"1234567.1"}`, ""},
		{`{"dp":"-0.50"}`, ""},
		{`{"dp":"0.0000000000"}`, ""},
		{`{"dp":1.2e2}`, ""},
		{`{"dp":"1.25"}`, "dp.type"},
		{`{"dp":"12345678.0"}`, "dp.type"},
		{`{"dp":1.5e7}`, "dp.type"},
		{`{"dp":5e-2}`, "dp.type"},
		{`{"b":"true"}`, "b.type"},
		{`{"b":1}`, "b.type"},
		{`{"arr":[1,"2"]}`, "arr.type"},
		{`{"arr":[1,2,3]}`, "arr.length"},
		{`{"o":{}}`, "o.id.required"},
		{`{"o":"x"}`, "o.type"}, // members of a mistyped object are not checked
		{`{}`, ""},              // nor of an absent one
	}
	for _, tt := range tests {
		res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, tt.rec))
		var got []string
		for _, f := range res.Records[0].Failures {
			got = append(got, p.Checks()[f.Check].Name)
		}
		if strings.Join(got, ",") != tt.fail {
			t.Errorf("%s: got failures %v, want %q", tt.rec, got, tt.fail)
		}
	}
}

func proto64(v int64) *int64 { return &v }

func proto32(v int32) *int32 { return &v }

func protoFloat(v float64) *float64 { return &v }

func TestDecodeFailuresQuarantine(t *testing.T) {
	t.Parallel()
	p := compile(t, orders())
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, order()+"\n{broken\n"+order(`order_id="ORD-0000000008"`)))
	r := res.Records[1]
	if len(r.Failures) != 1 || r.Failures[0].Code != recordv1.ErrorCode_ERROR_CODE_MALFORMED || !r.Quarantined || p.Checks()[r.Failures[0].Check].Name != "record.decode" {
		t.Fatalf("got %+v, want one quarantined MALFORMED failure of record.decode", r)
	}
	if len(res.Records[0].Failures)+len(res.Records[2].Failures) != 0 {
		t.Fatalf("neighbours failed: %+v %+v", res.Records[0].Failures, res.Records[2].Failures)
	}
}

func TestUnique(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(&contractv1.Check{Name: "one_per_customer_day", Rule: "unique(customer_id, created_at)"}))
	data := strings.Join([]string{
		order(`order_id="ORD-0000000001"`, `customer_id=1`),
		order(`order_id="ORD-0000000002"`, `customer_id=2`),
		order(`order_id="ORD-0000000001"`, `customer_id=3`),
		order(`order_id="ORD-0000000004"`, `customer_id=1`),
		order(`-order_id`, `customer_id=5`),
		order(`-order_id`, `customer_id=6`),
	}, "\n")
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, data))
	key, day := checkIndex(t, p, "order_id.unique"), checkIndex(t, p, "one_per_customer_day")
	if got := res.Checks[key]; got.Failures != 1 || got.Samples[0] != 3 {
		t.Errorf("order_id.unique: got %+v, want 1 failure at position 3", got)
	}
	if got := res.Records[2].Failures[0].Message; !strings.Contains(got, `order_id=string "ORD-0000000001"), first seen at position 1`) {
		t.Errorf("duplicate message %q, want it to name the key and the first position", got)
	}
	if got := res.Checks[day]; got.Failures != 1 || got.Samples[0] != 4 {
		t.Errorf("one_per_customer_day: got %+v, want 1 failure at position 4", got)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(
		&contractv1.Check{Name: "big", Rule: "cel(amount < 100000.0)"},
		&contractv1.Check{Name: "aov", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 7d)"},
		&contractv1.Check{Name: "coupon_present", Rule: "required(coupon)"},
		&contractv1.Check{Name: "amount_cap", Rule: "range(amount, max: 5000)", Policy: contractv1.Policy_POLICY_ALERT},
	))
	want := map[string]contractv1.Policy{
		"record.decode":        contractv1.Policy_POLICY_QUARANTINE,
		"order_id.required":    contractv1.Policy_POLICY_BLOCK, // key
		"customer_id.required": contractv1.Policy_POLICY_BLOCK, // identifier
		"amount.required":      contractv1.Policy_POLICY_QUARANTINE,
		"customer_id.type":     contractv1.Policy_POLICY_QUARANTINE,
		"order_id.unique":      contractv1.Policy_POLICY_QUARANTINE,
		"big":                  contractv1.Policy_POLICY_QUARANTINE,
		"aov":                  contractv1.Policy_POLICY_ALERT,
		"coupon_present":       contractv1.Policy_POLICY_QUARANTINE,
		"amount_cap":           contractv1.Policy_POLICY_ALERT,
	}
	for name, policy := range want {
		c := p.Checks()[checkIndex(t, p, name)]
		if c.Policy != policy || c.Threshold != (check.Threshold{}) {
			t.Errorf("%s: got policy %v threshold %v, want %v and none", name, c.Policy, c.Threshold, policy)
		}
	}
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, order(`amount=6000`, `coupon="C"`)))
	if r := res.Records[0]; r.Quarantined || !r.Alerted || len(r.Failures) != 1 {
		t.Errorf("ALERT failure: got %+v, want the record alerted but not quarantined", r)
	}
}

// missingBatch returns n records of which missing lack customer_id, spread
// evenly; records share value slices, which Validate only reads.
func missingBatch(t testing.TB, p *check.Plan, n, missing int) []record.Record {
	t.Helper()
	proto := decode(t, p, recordv1.Format_FORMAT_NDJSON, order()+"\n"+order("-customer_id"))
	recs := make([]record.Record, n)
	for i := range recs {
		src := proto[0]
		if missing > 0 && i%(n/missing) == 0 && i/(n/missing) < missing {
			src = proto[1]
		}
		recs[i] = record.Record{Index: int64(i), Position: int64(i), Values: src.Values}
	}
	return recs
}

func TestThresholds(t *testing.T) {
	t.Parallel()
	fields := recordtest.OrderFields()
	fields[0].Key = false // keep 1,000,000 copies of one order from being duplicates
	tests := []struct {
		name      string
		threshold *contractv1.Threshold
		n         int
		missing   int
		blocked   bool
	}{
		{"0.4% over a 0.001 fraction blocks", &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: 0.001}}, 1_000_000, 4_000, true},
		{"one odd record under 1% passes", &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: 0.01}}, 1_000, 1, false},
		{"at the count passes", &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: 3}}, 1_000, 3, false},
		{"over the count blocks", &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: 3}}, 1_000, 4, true},
		{"no threshold blocks on one", nil, 1_000, 1, true},
		{"no failures never blocks", nil, 1_000, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, &contractv1.Contract{Fields: fields, Checks: []*contractv1.Check{
				{Name: "customer_present", Rule: "required(customer_id)", Policy: contractv1.Policy_POLICY_BLOCK, Threshold: tt.threshold},
			}})
			res := p.Validate(missingBatch(t, p, tt.n, tt.missing))
			i := checkIndex(t, p, "customer_present")
			if got := res.Checks[i]; got.Failures != int64(tt.missing) || res.Blocked != tt.blocked || got.Blocked != tt.blocked {
				t.Fatalf("got %d failures blocked=%v, want %d blocked=%v", got.Failures, res.Blocked, tt.missing, tt.blocked)
			}
			if tt.blocked {
				reasons := p.BlockReasons(res)
				want := fmt.Sprintf("check customer_present (required(customer_id)) failed %d of %d records", tt.missing, tt.n)
				if len(reasons) != 1 || !strings.Contains(reasons[0], want) || !strings.Contains(reasons[0], "sample positions 0") {
					t.Fatalf("BlockReasons = %q, want one containing %q and sample positions", reasons, want)
				}
			}
		})
	}
}

func TestCEL(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(&contractv1.Check{Name: "small", Rule: `cel(amount < 100.0 && currency in ["USD", "EUR"] && size(order_id) == 14)`}))
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, strings.Join([]string{
		order(`amount=50.5`, `currency="USD"`),
		order(`amount=150.5`, `currency="USD"`, `order_id="ORD-0000000008"`),
		order(`amount=50.5`, `currency="GBP"`, `order_id="ORD-0000000009"`),
	}, "\n")))
	got := []int{len(res.Records[0].Failures), len(res.Records[1].Failures), len(res.Records[2].Failures)}
	if fmt.Sprint(got) != "[0 1 1]" {
		t.Fatalf("failures per record %v, want [0 1 1]", got)
	}
	if f := res.Records[1].Failures[0]; f.Code != recordv1.ErrorCode_ERROR_CODE_CHECK_FAILED || !res.Records[1].Quarantined {
		t.Fatalf("CEL failure %+v, want CHECK_FAILED and quarantined", f)
	}
	// A type-mismatched value makes the expression fail, never pass.
	res = p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, order(`amount="5"`)))
	if n := len(res.Records[0].Failures); n != 2 {
		t.Fatalf("got %d failures for a string amount, want the type check and the CEL check", n)
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []compileError{
		{"required(nope)", `checks[0].rule: column 10: field "nope" is not declared`},
		{"requird(amount)", `checks[0].rule: column 1: unknown rule "requird"`},
		{"required(amount", `checks[0].rule: column 16: expected ',' or ')'`},
		{"required(amount) x", `checks[0].rule: column 18: unexpected "x"`},
		{"required(amount, currency)", "required takes 1 field, got 2 arguments"},
		{"null_rate(coupon, maxx: 0.1)", `column 19: null_rate does not take "maxx"; it takes min, max, max_relative_change, max_point_change, direction, baseline, min_rows`},
		{"null_rate(coupon)", "null_rate needs a bound"},
		{"mean_drift(amount, max_relative_change: 0.15)", "max_relative_change needs a baseline"},
		{"mean_drift(currency, max_relative_change: 0.15, baseline: 7)", `mean_drift needs a numeric field; "currency" is STRING`},
		{"mean_drift(amount, max_relative_change: 0.15, baseline: 1.5)", "column 47: baseline takes a whole number of trailing partitions"},
		{"match_rate(amount, min: 0.9)", `match_rate needs an identifier field`},
		{"pattern(currency)", `field "currency" declares no pattern`},
		{`pattern(currency, "[")`, "expected an RE2 pattern string"},
		{"range(amount, min: 5, max: 1)", "min 5 is above max 1"},
		{"cel(amount + 1.0)", "column 5: CEL expression has type double; a check needs a bool"},
		{"cel(nope > 1)", "column 5: invalid CEL expression"},
		{"cel(amount > 1", "expected ')' to close cel("},
		{"unique()", "unique takes at least 1 field"},
		{"", "expected a rule name"},
	}
	wantCompileErrors(t, orders, tests)
	_, err := check.Compile(orders(&contractv1.Check{Name: "a", Rule: "required(amount)"}, &contractv1.Check{Name: "a", Rule: "required(currency)"}))
	if err == nil || !strings.Contains(err.Error(), `checks[1].name: "a" is also the name of checks[0]`) {
		t.Fatalf("duplicate names error = %v", err)
	}
	bad := recordtest.OrderFields()
	bad[0].Pattern = "("
	_, err = check.Compile(&contractv1.Contract{Fields: bad})
	if err == nil || !strings.Contains(err.Error(), "fields[0].pattern: invalid RE2 pattern") {
		t.Fatalf("bad pattern error = %v, want one naming fields[0].pattern", err)
	}
}

type formats map[string]check.IdentifierFormat

func (f formats) IdentifierFormat(ns, format string) (check.IdentifierFormat, bool) {
	v, ok := f[ns+"/"+format]
	return v, ok
}

type digitsOnly struct{}

func (digitsOnly) Valid(id string) bool { return strings.Trim(id, "0123456789") == "" && len(id) >= 6 }

func TestIdentifierFormat(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(), check.WithIdentifierFormats(formats{"customer/legacy-int": digitsOnly{}}))
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, order(`customer_id=12`)))
	if f := res.Records[0].Failures; len(f) != 1 || p.Checks()[f[0].Check].Name != "customer_id.format" || f[0].Code != recordv1.ErrorCode_ERROR_CODE_ID_INVALID {
		t.Fatalf("got %+v, want one customer_id.format ID_INVALID failure", f)
	}
	_, err := check.Compile(orders(), check.WithIdentifierFormats(formats{}))
	if err == nil || !strings.Contains(err.Error(), `fields[1].identifier: unknown identifier format "legacy-int"`) {
		t.Fatalf("unknown format error = %v", err)
	}
}

// week is seven partitions with the same figures: a baseline of 7.
func week(s check.Stats) []check.Stats { return slices.Repeat([]check.Stats{s}, 7) }

func stats(rows int64, field string, fs check.FieldStats) check.Stats {
	return check.Stats{Rows: rows, Fields: map[string]check.FieldStats{field: fs}}
}

func TestMonitor(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(
		&contractv1.Check{Name: "aov", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 7)"},
		&contractv1.Check{Name: "customer_match", Rule: "match_rate(customer_id, min: 0.9, baseline: 7)"},
		&contractv1.Check{Name: "match_drift", Rule: "match_rate(customer_id, max_relative_change: 0.5, baseline: 3)"},
		&contractv1.Check{Name: "coupon_nulls", Rule: "null_rate(coupon, max: 0.9)"},
		&contractv1.Check{Name: "volume", Rule: "row_count(max_relative_change: 0.5, baseline: 7)"},
	))
	mean := func(m float64) check.Stats {
		return stats(1000, "amount", check.FieldStats{Count: 1000, Numbers: 1000, Mean: m})
	}
	match := func(r float64) check.Stats {
		return stats(500_000, "customer_id", check.FieldStats{Count: 500_000, IDs: 500_000, Matched: int64(r * 500_000)})
	}
	tests := []struct {
		name     string
		current  check.Stats
		baseline []check.Stats
		want     []string // alerting check names
		observed float64
		base     float64
	}{
		{"mean 85 to 102 alerts", mean(102), week(mean(85)), []string{"aov"}, 102, 85},
		{"mean 85 to 90 passes", mean(90), week(mean(85)), nil, 0, 0},
		{"no baseline, no drift alert", mean(102), nil, nil, 0, 0},
		{"match rate 0.98 to 0.02 alerts", match(0.02), week(match(0.98)), []string{"customer_match", "match_drift"}, 0.02, math.NaN()},
		{"match rate steady passes", match(0.97), week(match(0.98)), nil, 0, 0},
		{"null rate over max", stats(100, "coupon", check.FieldStats{Count: 100, Nulls: 95}), nil, []string{"coupon_nulls"}, 0.95, math.NaN()},
		{"row count halves", check.Stats{Rows: 400}, week(check.Stats{Rows: 1000}), []string{"volume"}, 400, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The window counts: rows of every baseline entry are the same,
			// except "volume", which must not see a partition beyond 7.
			alerts := p.Monitor(tt.current, check.SameTrail(p, tt.baseline))
			var names []string
			for _, a := range alerts {
				names = append(names, a.Name)
				if a.Policy != contractv1.Policy_POLICY_ALERT || a.Message == "" {
					t.Errorf("alert %+v, want policy ALERT and a message", a)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("alerts %v, want %v", names, tt.want)
			}
			if len(alerts) > 0 {
				a := alerts[0]
				if math.Abs(a.Observed-tt.observed) > 1e-9 || (!math.IsNaN(tt.base) && math.Abs(a.Baseline-tt.base) > 1e-9) {
					t.Fatalf("alert observed %v baseline %v, want %v and %v", a.Observed, a.Baseline, tt.observed, tt.base)
				}
			}
		})
	}
}

func TestBaselineWindow(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(&contractv1.Check{Name: "aov", Rule: "mean_drift(amount, max_relative_change: 0.15, baseline: 2)"}))
	mean := func(m float64) check.Stats {
		return stats(10, "amount", check.FieldStats{Count: 10, Numbers: 10, Mean: m})
	}
	// Old partitions at 50 fall outside the 2-partition window; 100 and 102 form it.
	alerts := p.Monitor(mean(103), check.SameTrail(p, []check.Stats{mean(50), mean(50), mean(100), mean(102)}))
	if len(alerts) != 0 {
		t.Fatalf("alerts %+v, want none: the window is the last 2 partitions", alerts)
	}
	if got := check.RelativeChange(102, 85); math.Abs(got-0.2) > 1e-12 {
		t.Fatalf("RelativeChange(102, 85) = %v, want 0.2", got)
	}
}

func TestValidateStats(t *testing.T) {
	t.Parallel()
	p := compile(t, orders(&contractv1.Check{Name: "m", Rule: "match_rate(customer_id, min: 0.9)"}))
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, strings.Join([]string{
		order(`amount=10`, `customer_id=11`, `order_id="ORD-0000000001"`, `coupon="C"`),
		order(`amount=20`, `customer_id="abc"`, `order_id="ORD-0000000002"`, `coupon=null`, `zz=1`),
		order(`amount=30`, `-customer_id`, `order_id="ORD-0000000003"`, `-coupon`),
	}, "\n")))
	// Only the first record passes (the others fail customer_id's type
	// and presence): a quarantined record's amount is no part of the mean.
	a := res.Stats.Fields["amount"]
	if a.Numbers != 1 || math.Abs(a.Mean-10) > 1e-12 || res.Stats.Rows != 3 {
		t.Errorf("amount stats %+v rows %d, want 1 number (the passing record's) with the mean 10", a, res.Stats.Rows)
	}
	if c := res.Stats.Fields["coupon"]; c.Nulls != 2 || c.Count != 3 {
		t.Errorf("coupon stats %+v, want 2 nulls of 3", c)
	}
	ids := res.Identifiers
	if len(ids) != 1 || ids[0].Namespace != "customer" || len(ids[0].Values) != 2 || string(ids[0].Values[1]) != "abc" || ids[0].Records[1] != 1 {
		t.Errorf("identifiers %+v, want customer values 11 and abc from records 0 and 1", ids)
	}
	if res.Unknown["zz"] != 1 {
		t.Errorf("unknown %v, want zz counted once", res.Unknown)
	}
	var merged check.Stats
	merged.Merge(res.Stats)
	merged.Merge(res.Stats)
	if merged.Rows != 6 || merged.Fields["amount"].Numbers != 2 || math.Abs(merged.Fields["amount"].Mean-10) > 1e-12 {
		t.Errorf("merged %+v, want rows 6 and amount's mean 10 over 2 numbers", merged)
	}
}

// Means are kept so that no run of legal values overflows: two amounts of
// 1.7e308 have the mean 1.7e308, not +Inf, batch by batch, merged, and as
// a baseline.
func TestMeanDoesNotOverflow(t *testing.T) {
	t.Parallel()
	c := orders(&contractv1.Check{Name: "d", Rule: "mean_drift(amount, max_relative_change: 0.5, baseline: 3)"})
	for _, f := range c.Fields {
		if f.Name == "amount" {
			f.Min, f.Max = nil, nil // ±1.7e308 pass, so they count in the mean
		}
	}
	p := compile(t, c)
	huge := func(first int) check.Stats {
		return p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, strings.Join([]string{
			order(`amount=1.7e308`, fmt.Sprintf(`order_id="ORD-%010d"`, first)),
			order(`amount=1.7e308`, fmt.Sprintf(`order_id="ORD-%010d"`, first+1)),
		}, "\n"))).Stats
	}
	one := huge(1)
	if f := one.Fields["amount"]; f.Numbers != 2 || f.Mean != 1.7e308 {
		t.Fatalf("mean of two 1.7e308 = %v over %d, want 1.7e308 over 2", f.Mean, f.Numbers)
	}
	var day check.Stats
	for i := range 3 {
		day.Merge(huge(10 * i))
	}
	if f := day.Fields["amount"]; f.Numbers != 6 || math.IsInf(f.Mean, 0) || math.Abs(f.Mean-1.7e308)/1.7e308 > 1e-12 {
		t.Fatalf("merged mean = %v over %d, want 1.7e308 over 6", f.Mean, f.Numbers)
	}
	mixed := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, strings.Join([]string{
		order(`amount=1.7e308`, `order_id="ORD-0000000001"`), order(`amount=-1.7e308`, `order_id="ORD-0000000002"`),
	}, "\n"))).Stats
	if f := mixed.Fields["amount"]; f.Mean != 0 {
		t.Fatalf("mean of 1.7e308 and -1.7e308 = %v, want 0", f.Mean)
	}
	if alerts := p.Monitor(day, check.SameTrail(p, []check.Stats{one, one, one})); len(alerts) != 0 {
		t.Fatalf("alerts %+v against a baseline of the same huge mean, want none", alerts)
	}
}

// TestValidateAllocations guards the hot path: structural validation of a
// clean batch allocates per batch, not per record.
func TestValidateAllocations(t *testing.T) {
	p := compile(t, orders())
	recs := decode(t, p, recordv1.Format_FORMAT_NDJSON, string(recordtest.OrdersNDJSON(1000)))
	allocs := testing.AllocsPerRun(5, func() { p.Validate(recs) })
	if perRecord := allocs / 1000; perRecord > 0.05 {
		t.Fatalf("Validate made %.3f allocations per record (%.0f per batch), want at most 0.05", perRecord, allocs)
	}
}

// A plan whose results are given back with Recycle validates every next
// batch as a plan that never recycled would, failures, duplicate keys
// and identifier values included, and allocates little per batch.
func TestValidateRecycle(t *testing.T) {
	c := orders(&contractv1.Check{Name: "one_per_customer_day", Rule: "unique(customer_id, created_at)"},
		&contractv1.Check{Name: "customer_match", Rule: "match_rate(customer_id, min: 0.9)", Policy: contractv1.Policy_POLICY_ALERT})
	fresh, reused := compile(t, c), compile(t, c)
	big := string(recordtest.OrdersNDJSON(400))
	small := strings.Join([]string{
		order(`order_id="ORD-0000000001"`, `customer_id=1`),
		order(`order_id="ORD-0000000001"`, `customer_id=2`),
		order(`-order_id`, `customer_id="x"`),
		order(`amount="12"`),
	}, "\n")
	for round := range 3 {
		for _, data := range []string{big, small, big + "\n" + small} {
			recs := decode(t, fresh, recordv1.Format_FORMAT_NDJSON, data)
			want := fresh.Validate(recs)
			got := reused.Validate(recs)
			if fmt.Sprint(got.Records, got.Checks, got.Identifiers, got.Blocked) != fmt.Sprint(want.Records, want.Checks, want.Identifiers, want.Blocked) {
				t.Fatalf("round %d, %d records: a recycling plan's result differs from a fresh one's", round, len(recs))
			}
			reused.Recycle(got)
		}
	}
	if raceEnabled {
		return
	}
	recs := decode(t, reused, recordv1.Format_FORMAT_NDJSON, big)
	without := allocatedBytes(func() { reused.Validate(recs) })
	with := allocatedBytes(func() { reused.Recycle(reused.Validate(recs)) })
	if with > without/4 {
		t.Errorf("%d bytes allocated a batch of 400 recycled, %d without; want at most a quarter", with, without)
	}
}

// allocatedBytes is the bytes fn allocates, on average over 20 runs.
func allocatedBytes(fn func()) uint64 {
	fn()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 20
}
