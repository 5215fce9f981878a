package check_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/core/check"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"google.golang.org/protobuf/proto"
)

// bank is a bank feed whose account_ref is a pattern-checked string
// ("ACC-00012345") that a later version turns into a UUID.
func bank(af contractv1.AdditionalFields, checks ...*contractv1.Check) *contractv1.Contract {
	return &contractv1.Contract{Subject: "bank.transactions", AdditionalFields: af, Checks: checks, Fields: []*contractv1.Field{
		{Name: "txn_id", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true, Key: true},
		{Name: "account_ref", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true, Pattern: "^ACC-[0-9]{8}$",
			Identifier: &contractv1.Identifier{Namespace: "account", Format: "acc-ref"}},
		{Name: "amount_cents", Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true},
		{Name: "booked_at", Type: contractv1.FieldType_FIELD_TYPE_TIMESTAMP, Required: true},
		{Name: "value_date", Type: contractv1.FieldType_FIELD_TYPE_DATE},
	}}
}

func txn(id, account, booked string, extra string) string {
	return `{"txn_id":"` + id + `","account_ref":` + account + `,"amount_cents":1250,"booked_at":"` + booked + `"` + extra + `}`
}

// failuresOf lists the names of the checks each record failed.
func failuresOf(p *check.Plan, res *check.BatchResult) []string {
	var out []string
	for _, r := range res.Records {
		var names []string
		for _, f := range r.Failures {
			names = append(names, p.Checks()[f.Check].Name)
		}
		out = append(out, strings.Join(names, "+"))
	}
	return out
}

func TestAdditionalFields(t *testing.T) {
	t.Parallel()
	data := strings.Join([]string{
		txn("T1", `"ACC-00012345"`, "2026-03-01T10:00:00Z", ""),
		txn("T2", `"ACC-00012346"`, "2026-03-01T10:00:00Z", `,"memo":"rent","channel":"sepa"`),
	}, "\n")
	tests := []struct {
		name        string
		af          contractv1.AdditionalFields
		checks      []*contractv1.Check
		want        string // failures of T2
		blocked     bool
		quarantined bool
	}{
		{"unspecified allows", contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED, nil, "", false, false},
		{"allow", contractv1.AdditionalFields_ADDITIONAL_FIELDS_ALLOW, nil, "", false, false},
		{"quarantine", contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE, nil, "record.additional_fields", false, true},
		{"reject blocks the batch", contractv1.AdditionalFields_ADDITIONAL_FIELDS_REJECT, nil, "record.additional_fields", true, true},
		{"declared check with its own policy", contractv1.AdditionalFields_ADDITIONAL_FIELDS_REJECT,
			[]*contractv1.Check{{Name: "no_extras", Rule: "additional_fields()", Policy: contractv1.Policy_POLICY_ALERT}}, "no_extras", false, false},
		{"declared check without an attribute", contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED,
			[]*contractv1.Check{{Name: "no_extras", Rule: "additional_fields()"}}, "no_extras", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, bank(tt.af, tt.checks...))
			res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, data))
			got := failuresOf(p, res)
			if got[0] != "" || got[1] != tt.want {
				t.Fatalf("failures %q, want T1 clean and T2 %q", got, tt.want)
			}
			if res.Blocked != tt.blocked || res.Records[1].Quarantined != tt.quarantined {
				t.Fatalf("blocked %v quarantined %v, want %v and %v", res.Blocked, res.Records[1].Quarantined, tt.blocked, tt.quarantined)
			}
			if tt.want != "" {
				f := res.Records[1].Failures[0]
				if f.Code != recordv1.ErrorCode_ERROR_CODE_UNDECLARED_FIELD || !strings.Contains(f.Message, `"memo", "channel"`) {
					t.Fatalf("failure %+v, want UNDECLARED_FIELD naming memo and channel", f)
				}
			}
			if res.Unknown["memo"] != 1 {
				t.Fatalf("unknown counts %v, want memo counted once", res.Unknown)
			}
		})
	}
}

// A nested object closed with additional_fields(OBJECT) refuses members
// the contract does not declare there, and only there: the top level and
// the objects inside stay as open as they are declared.
func TestObjectAdditionalFields(t *testing.T) {
	t.Parallel()
	c := bank(contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED)
	c.Fields = append(c.Fields, &contractv1.Field{Name: "counterparty", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{
		{Name: "iban", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		{Name: "address", Type: contractv1.FieldType_FIELD_TYPE_OBJECT, Fields: []*contractv1.Field{
			{Name: "country", Type: contractv1.FieldType_FIELD_TYPE_STRING},
		}},
	}})
	data := strings.Join([]string{
		txn("T1", `"ACC-00000001"`, "2026-03-01T10:00:00Z", `,"counterparty":{"iban":"DE1","address":{"country":"DE"}}`),
		txn("T2", `"ACC-00000002"`, "2026-03-01T10:00:00Z", `,"counterparty":{"iban":"DE1","bic":"B","name":"N"}`),
		txn("T3", `"ACC-00000003"`, "2026-03-01T10:00:00Z", `,"counterparty":{"address":{"country":"DE","city":"Bonn"}}`),
		txn("T4", `"ACC-00000004"`, "2026-03-01T10:00:00Z", `,"memo":"top level stays open"`),
		txn("T5", `"ACC-00000005"`, "2026-03-01T10:00:00Z", `,"counterparty":null`),
		txn("T6", `"ACC-00000006"`, "2026-03-01T10:00:00Z", `,"counterparty":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"address":{"zip":"1"}}`),
	}, "\n")
	tests := []struct {
		name   string
		checks []*contractv1.Check
		want   []string
	}{
		{"open", nil, []string{"", "", "", "", "", ""}},
		{"counterparty closed", []*contractv1.Check{{Name: "cp_closed", Rule: "additional_fields(counterparty)"}},
			[]string{"", "cp_closed", "", "", "", "cp_closed"}},
		{"both levels closed", []*contractv1.Check{{Name: "cp_closed", Rule: "additional_fields(counterparty)"},
			{Name: "addr_closed", Rule: "additional_fields(counterparty.address)", Policy: contractv1.Policy_POLICY_ALERT}},
			[]string{"", "cp_closed", "addr_closed", "", "", "cp_closed+addr_closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := proto.Clone(c).(*contractv1.Contract)
			c.Checks = tt.checks
			p := compile(t, c)
			res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, data))
			if got := failuresOf(p, res); !slices.Equal(got, tt.want) {
				t.Fatalf("failures %q, want %q", got, tt.want)
			}
			if len(tt.checks) == 0 {
				return
			}
			f := res.Records[1].Failures[0]
			if f.Code != recordv1.ErrorCode_ERROR_CODE_UNDECLARED_FIELD || f.Field != "counterparty.bic" ||
				!strings.Contains(f.Message, `undeclared field "bic", "name" in counterparty`) {
				t.Fatalf("failure %+v, want UNDECLARED_FIELD at counterparty.bic naming bic and name", f)
			}
			if m := res.Records[5].Failures[0].Message; !strings.Contains(m, `"a", "b", "c", "d", "e" and 2 more in counterparty`) {
				t.Fatalf("message %q, want five names and 2 more", m)
			}
			if !res.Records[1].Quarantined || res.Blocked {
				t.Fatalf("quarantined %v blocked %v, want the record quarantined and the batch not blocked", res.Records[1].Quarantined, res.Blocked)
			}
		})
	}
	twice := proto.Clone(c).(*contractv1.Contract)
	twice.Checks = []*contractv1.Check{{Name: "a", Rule: "additional_fields(counterparty)"}, {Name: "b", Rule: "additional_fields(counterparty)"}}
	if _, err := check.Compile(twice); err == nil || !strings.Contains(err.Error(), "additional_fields(counterparty) is declared twice") {
		t.Fatalf("two checks closing one object: error = %v", err)
	}
}

func TestInPartition(t *testing.T) {
	t.Parallel()
	rule := func(r string) *contractv1.Contract {
		return bank(0, &contractv1.Check{Name: "booked_in_day", Rule: r})
	}
	data := strings.Join([]string{
		txn("T1", `"ACC-00000001"`, "2026-03-01T00:00:00Z", ""),
		txn("T2", `"ACC-00000002"`, "2026-03-01T23:59:59.999Z", ""),
		txn("T3", `"ACC-00000003"`, "2026-03-02T00:00:00Z", ""),
		txn("T4", `"ACC-00000004"`, "2026-02-28T23:30:00Z", ""),
		txn("T5", `"ACC-00000005"`, "2026-03-01T01:30:00+02:00", ""), // 23:30 UTC the day before
	}, "\n")
	tests := []struct {
		rule, partition string
		want            []bool // fails, per record
	}{
		{"in_partition(booked_at)", "2026-03-01", []bool{false, false, true, true, true}},
		{"in_partition(booked_at, tolerance: 1h)", "2026-03-01", []bool{false, false, false, false, false}},
		{`in_partition(booked_at, zone: "Europe/Berlin")`, "2026-03-01", []bool{false, true, true, false, false}},
		{"in_partition(booked_at)", "2026-03", []bool{false, false, false, true, true}},
		{"in_partition(booked_at)", "2026-03-01T00", []bool{false, true, true, true, true}},
		{"in_partition(booked_at)", "", []bool{false, false, false, false, false}}, // no partition: not judged
		{"in_partition(booked_at)", "batch-7", []bool{true, true, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"@"+tt.partition, func(t *testing.T) {
			t.Parallel()
			p := compile(t, rule(tt.rule))
			res := p.ValidatePartition(decode(t, p, recordv1.Format_FORMAT_NDJSON, data), tt.partition)
			for i, r := range res.Records {
				if got := len(r.Failures) > 0; got != tt.want[i] {
					t.Errorf("record %d fails = %v (%+v), want %v", i+1, got, r.Failures, tt.want[i])
				}
				for _, f := range r.Failures {
					if f.Code != recordv1.ErrorCode_ERROR_CODE_OUTSIDE_PARTITION || !strings.Contains(f.Message, "booked_at") {
						t.Errorf("record %d failure %+v, want OUTSIDE_PARTITION naming booked_at", i+1, f)
					}
				}
			}
		})
	}
	p := compile(t, rule("in_partition(booked_at)"))
	res := p.ValidatePartition(decode(t, p, recordv1.Format_FORMAT_NDJSON, txn("T", `"ACC-00000001"`, "2026-03-01T10:00:00Z", "")), "batch-7")
	if msg := res.Records[0].Failures[0].Message; !strings.Contains(msg, `partition "batch-7" is not named by its date`) {
		t.Fatalf("message %q, want it to say the partition is not a date", msg)
	}
	dates := compile(t, bank(0, &contractv1.Check{Name: "d", Rule: "in_partition(value_date)"}))
	res = dates.ValidatePartition(decode(t, dates, recordv1.Format_FORMAT_NDJSON, strings.Join([]string{
		txn("T1", `"ACC-00000001"`, "2026-03-01T10:00:00Z", `,"value_date":"2026-03-01"`),
		txn("T2", `"ACC-00000002"`, "2026-03-01T10:00:00Z", `,"value_date":"2026-03-02"`),
		txn("T3", `"ACC-00000003"`, "2026-03-01T10:00:00Z", ""),
	}, "\n")), "2026-03-01")
	if got := failuresOf(dates, res); strings.Join(got, ",") != ",d," {
		t.Fatalf("DATE in_partition failures %q, want only T2 (an absent optional date is not judged)", got)
	}
}

func TestPartitionWindow(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	tests := []struct {
		partition  string
		loc        *time.Location
		start, end string
	}{
		{"2026-03-01", nil, "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"},
		{"2026-03-29", berlin, "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}, // the day clocks go forward: 23 hours
		{"2026-03-01T09", nil, "2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z"},
		{"2026-03-01-09", nil, "2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z"},
		{"2026-02", nil, "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
	}
	for _, tt := range tests {
		start, end, err := check.PartitionWindow(tt.partition, tt.loc)
		if err != nil {
			t.Fatalf("PartitionWindow(%q): %v", tt.partition, err)
		}
		if got := start.UTC().Format(time.RFC3339) + " " + end.UTC().Format(time.RFC3339); got != tt.start+" "+tt.end {
			t.Errorf("PartitionWindow(%q) = %s, want %s %s", tt.partition, got, tt.start, tt.end)
		}
	}
	for _, bad := range []string{"", "2026-13-01", "2026-03-01T25", "today"} {
		if _, _, err := check.PartitionWindow(bad, nil); err == nil {
			t.Errorf("PartitionWindow(%q) succeeded, want an error", bad)
		}
	}
}

func TestOneOf(t *testing.T) {
	t.Parallel()
	data := strings.Join([]string{
		txn("T1", `"ACC-00012345"`, "2026-03-01T10:00:00Z", ""),
		txn("T2", `"7c9e6679-7425-40de-944b-e07fc1f90ae7"`, "2026-03-01T10:00:00Z", ""),
		txn("T3", `"acc-12"`, "2026-03-01T10:00:00Z", ""),
		txn("T4", `12345`, "2026-03-01T10:00:00Z", ""),
	}, "\n")
	tests := []struct {
		rule string
		want string // failing check per record, comma-joined
	}{
		{"", ",account_ref.pattern,account_ref.pattern,account_ref.type"},
		{"one_of(account_ref, declared, uuid)", ",,shape,shape"},
		{`one_of(account_ref, "ACC-{digits:8}", uuid)`, ",,shape,shape"},
		{"one_of(account_ref, uuid)", "shape,,shape,shape"},
		{"one_of(account_ref, declared, integer)", ",shape,shape,"},
		{"one_of(account_ref, string)", ",,,shape"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			c := bank(0)
			if tt.rule != "" {
				c.Checks = []*contractv1.Check{{Name: "shape", Rule: tt.rule}}
			}
			p := compile(t, c)
			res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, data))
			if got := strings.Join(failuresOf(p, res), ","); got != tt.want {
				t.Fatalf("failures %q, want %q", got, tt.want)
			}
		})
	}
	p := compile(t, bank(0, &contractv1.Check{Name: "shape", Rule: "one_of(account_ref, declared, uuid)"}))
	res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, txn("T", `"acc-12"`, "2026-03-01T10:00:00Z", "")))
	f := res.Records[0].Failures[0]
	if f.Code != recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH || !strings.Contains(f.Message, `string "acc-12" is none of the shapes the declared STRING matching ^ACC-[0-9]{8}$ or uuid`) {
		t.Fatalf("failure %+v, want TYPE_MISMATCH listing both shapes", f)
	}
}

func TestCompileTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct{ tmpl, want string }{
		{"ACC-{digits:8}", `^ACC-[0-9]{8}$`},
		{"{hex:4}-{alpha}", `^[0-9a-fA-F]{4}-[A-Za-z]+$`},
		{"a.b{any}", `^a\.b.*$`},
		{"{alnum:2}", `^[A-Za-z0-9]{2}$`},
	}
	for _, tt := range tests {
		got, err := check.CompileTemplate(tt.tmpl)
		if err != nil || got != tt.want {
			t.Errorf("CompileTemplate(%q) = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ACC-{digits:0}", "ACC-{digit:8}", "ACC-{digits", "ACC}", "{any:3}"} {
		if _, err := check.CompileTemplate(bad); err == nil {
			t.Errorf("CompileTemplate(%q) succeeded, want an error", bad)
		}
	}
}

// bankWith is the bank contract with checks, as wantCompileErrors takes it.
func bankWith(checks ...*contractv1.Check) *contractv1.Contract { return bank(0, checks...) }

func TestRecordRuleCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []compileError{
		{"in_partition(account_ref)", `in_partition needs a TIMESTAMP or DATE field; "account_ref" is STRING`},
		{`in_partition(booked_at, zone: "Mars/Olympus")`, `zone takes a known IANA time zone`},
		{"in_partition(booked_at, tolerance: 2)", "tolerance takes a duration"},
		{"in_partition(booked_at, tolerance: 2w)", "tolerance takes a duration"},
		{"one_of(account_ref)", "one_of takes a field and at least one shape"},
		{"one_of(account_ref, guid)", `unknown shape "guid"; use one of declared, array, boolean, date, decimal, digits`},
		{`one_of(account_ref, "ACC-{digits}", "ACC-{digits}")`, "listed twice"},
		{`one_of(account_ref, "ACC-{num:8}")`, "unknown placeholder {num:8}"},
		{"one_of(account_ref, 7)", "expected a shape"},
		{"additional_fields(account_ref)", `additional_fields takes an OBJECT or JSON field; "account_ref" is STRING`},
		{"additional_fields(txn_id, account_ref)", "additional_fields takes 0 to 1 fields, got 2"},
		{"additional_fields(counterparty)", `field "counterparty" is not declared`},
	}
	wantCompileErrors(t, bankWith, tests)
	_, err := check.Compile(bank(0, &contractv1.Check{Name: "a", Rule: "one_of(account_ref, uuid)"}, &contractv1.Check{Name: "b", Rule: "one_of(account_ref, declared)"}))
	if err == nil || !strings.Contains(err.Error(), `field "account_ref" already has a one_of check (a)`) {
		t.Fatalf("two one_of checks on one field: error = %v", err)
	}
}

// matchRate is a partition of 10,000 account references of which share
// resolved.
func matchRate(share float64) check.Stats {
	return stats(10_000, "account_ref", check.FieldStats{Count: 10_000, IDs: 10_000, Matched: int64(math.Round(share * 10_000))})
}

func TestThresholdSyntax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rule    string
		current check.Stats
		base    []check.Stats
		bound   string // crossed bound, "" for a pass
		msg     string
	}{
		{"5 points below baseline alerts", "match_rate(account_ref, max_point_change: 5, direction: drop, baseline: 7)",
			matchRate(0.90), week(matchRate(0.96)), "max_point_change", "match_rate of account_ref is 90%, 6 points below the baseline of 96%, over the allowed 5 points of drop (baseline: 7 partitions)"},
		{"4 points below passes", "match_rate(account_ref, max_point_change: 5pt, direction: drop, baseline: 7)", matchRate(0.92), week(matchRate(0.96)), "", ""},
		{"a rise is not a drop", "match_rate(account_ref, max_point_change: 5, direction: drop, baseline: 7)", matchRate(1), week(matchRate(0.90)), "", ""},
		{"a rise counts both ways", "match_rate(account_ref, max_point_change: 5, baseline: 7)", matchRate(1), week(matchRate(0.90)), "max_point_change", "10 points above"},
		{"rise only", "match_rate(account_ref, max_relative_change: 10%, direction: rise, baseline: 7)", matchRate(0.5), week(matchRate(0.9)), "", ""},
		{"absolute minimum in percent", "match_rate(account_ref, min: 90%)", matchRate(0.62), nil, "min", "match_rate of account_ref is 62%, below the minimum 90%"},
		{"absolute maximum", "match_rate(account_ref, max: 0.99)", matchRate(1), nil, "max", "above the maximum 99%"},
		{"relative drop as a percentage", "match_rate(account_ref, max_relative_change: 15%, direction: drop, baseline: 3)",
			matchRate(0.5), week(matchRate(0.9)), "max_relative_change", "a relative change of 0.444 over the allowed 0.15 of drop (baseline: 3 partitions)"},
		{"no baseline, no relative alert", "match_rate(account_ref, max_point_change: 5, baseline: 7)", matchRate(0.1), nil, "", ""},
		{"baseline of fewer partitions than asked says so", "match_rate(account_ref, max_point_change: 5, baseline: 7)", matchRate(0.5), week(matchRate(0.9))[:2], "max_point_change", "(baseline: 2 partitions)"},
		{"min_rows skips a small partition", "match_rate(account_ref, min: 0.9, min_rows: 100)",
			stats(3, "account_ref", check.FieldStats{Count: 3, IDs: 3, Matched: 0}), nil, "", ""},
		{"min_rows keeps small partitions out of the baseline", "match_rate(account_ref, max_point_change: 5, baseline: 7, min_rows: 100)",
			matchRate(0.95), append(week(matchRate(0.96)), stats(3, "account_ref", check.FieldStats{Count: 3, IDs: 3})), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, bank(0, &contractv1.Check{Name: "acct_match", Rule: tt.rule}))
			alerts := p.Monitor(tt.current, check.SameTrail(p, tt.base))
			if tt.bound == "" {
				if len(alerts) > 0 {
					t.Fatalf("alerts %+v, want none", alerts)
				}
				return
			}
			if len(alerts) != 1 || alerts[0].Bound != tt.bound || !strings.Contains(alerts[0].Message, tt.msg) {
				t.Fatalf("alerts %+v, want one on %s saying %q", alerts, tt.bound, tt.msg)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	p := compile(t, bank(0,
		&contractv1.Check{Name: "volume", Rule: "row_count(min: 1000, max_relative_change: 0.5, direction: drop, baseline: 7)"},
		&contractv1.Check{Name: "amount_mean", Rule: "mean_drift(amount_cents, min: 100, max: 50000)"},
	))
	volume := p.Checks()[checkIndex(t, p, "volume")]
	j := volume.Judge(400, check.Baseline{Value: 1000, Partitions: 5, Label: "2026-03-01..2026-03-05"})
	if !j.Breached() || j.Bound != "min" {
		t.Fatalf("Judge(400) = %+v, want the min bound crossed first", j)
	}
	j = volume.Judge(1200, check.Baseline{Value: 3000, Partitions: 5, Label: "2026-03-01..2026-03-05"})
	if j.Bound != "max_relative_change" || math.Abs(j.RelativeChange-0.6) > 1e-12 || math.Abs(j.PointChange+180000) > 1e-6 ||
		!strings.Contains(j.Message, "(baseline: 5 partitions, 2026-03-01..2026-03-05)") {
		t.Fatalf("Judge(1200 vs 3000) = %+v, want a relative drop of 0.6 naming the baseline partitions", j)
	}
	if j := volume.Judge(5000, check.Baseline{Value: 1000, Partitions: 5}); j.Breached() {
		t.Fatalf("Judge(5000 vs 1000) = %+v, want a rise to pass a drop-only bound", j)
	}
	if j := volume.Judge(1200, check.NoBaseline); j.Breached() || !math.IsNaN(j.RelativeChange) {
		t.Fatalf("Judge without a baseline = %+v, want a pass with no relative change", j)
	}
	mean := p.Checks()[checkIndex(t, p, "amount_mean")]
	if j := mean.Judge(60000, check.NoBaseline); j.Bound != "max" || !strings.Contains(j.Message, "mean of amount_cents is 6e+04, above the maximum 5e+04") {
		t.Fatalf("mean Judge = %+v, want the absolute max crossed", j)
	}
	if got := mean.Metric(); got != "mean" {
		t.Fatalf("Metric() = %q, want mean", got)
	}
}

func TestThresholdCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []compileError{
		{"match_rate(account_ref, min: 1.2)", "min takes a rate between 0 and 1"},
		{"match_rate(account_ref, min: 120%)", "min takes a rate between 0 and 1"},
		{"match_rate(account_ref, max_point_change: 5)", "max_point_change needs a baseline"},
		{"match_rate(account_ref, min: 0.9, direction: drop)", "direction applies to max_relative_change or max_point_change"},
		{"match_rate(account_ref, max_point_change: 5, direction: down, baseline: 7)", "direction takes drop, rise or both, not down"},
		{"match_rate(account_ref, max_point_change: 5x, baseline: 7)", "max_point_change takes percentage points"},
		{"mean_drift(amount_cents, max_point_change: 5, baseline: 7)", `mean_drift does not take "max_point_change"`},
		{"row_count(min: 10.5)", "min takes a whole number"},
		{"row_count(min: 10, max: 5)", "min 10 is above max 5"},
		{"row_count(min: 10, min_rows: -1)", "min_rows takes a whole number of zero or more"},
		{"match_rate(account_ref, max_relative_change: -0.1, baseline: 7)", "a relative change of zero or more"},
		{"match_rate(account_ref, min: 0.9, baseline: 0)", "baseline takes a whole number"},
		{"mean_drift(amount_cents, min: 5%)", "min takes a plain number"},
		{"match_rate(account_ref, min: drop)", "min takes a rate"},
	}
	wantCompileErrors(t, bankWith, tests)
}
