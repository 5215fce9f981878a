package gate

import (
	"strings"
	"testing"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// TestShapeOf: one changed source is one shape, and values that differ
// only in what they say (how many digits a decimal has) are not a change.
func TestShapeOf(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"100.00", "decimal"},
		{"99.99", "decimal"},
		{"-7.5", "decimal"},
		{"1.5e3", "decimal"},
		{"12345", "digits"},
		{"ACC-00012345", "ACC-{digits:8}"},
		{"name-99999", "name-{digits}"},
		{"name-100000", "name-{digits}"},
		{"1.2.3", "{digits}.{digits}.{digits}"},
		{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "uuid"},
		{"2026-10-01", "date"},
		{"a@b.io", "email"},
		{"deadbeef", "hex"},
		{"hello world", "string"},
		{"", "empty"},
	} {
		if got := shapeOf(record.StringValue([]byte(tc.value))); got != tc.want {
			t.Errorf("shapeOf(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
}

// profile counts every present scalar value by its shape, however values
// repeat or alternate from record to record (a value equal to its
// field's last one takes its shape without naming it).
func TestProfileCountsEveryValueByShape(t *testing.T) {
	plan, err := check.Compile(examples.ShopOrdersV1())
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"order_id":"ORD-1","customer_id":1,"currency":"EUR","status":"paid"}`,
		`{"order_id":"ORD-1","customer_id":1,"currency":"EUR","status":"paid"}`,
		`{"order_id":"00000000-0000-4000-8000-000000000001","customer_id":"1","currency":"EUR","status":"2025-03-01"}`,
		`{"order_id":"ORD-1","customer_id":1,"currency":"EUR","status":"paid"}`,
		`{"order_id":"ORD-22","customer_id":"1","currency":"1","status":"paid"}`,
		`{"order_id":"ORD-22","customer_id":"1","currency":"EUR","status":"paid","coupon":true}`,
		`{"order_id":"ORD-22","customer_id":1.5,"currency":"EUR","coupon":false}`,
	}
	b, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, []byte(strings.Join(lines, "\n")), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, r := range b.Records {
		for slot, v := range r.Values {
			if v.Present() {
				want[plan.Schema().Field(slot).Path+"\x00"+shapeOf(v)]++
			}
		}
	}
	got := profile(plan, b, func(int) bool { return true })
	if len(got) != len(want) {
		t.Fatalf("%d field shapes profiled, want %d: %v", len(got), len(want), got)
	}
	for k, n := range want {
		if got[k].Count != n || got[k].Passed != n {
			t.Errorf("%q: counted %d (%d passed), want %d", k, got[k].Count, got[k].Passed, n)
		}
	}
}
