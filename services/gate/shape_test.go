package gate

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/shape"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
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

// Over a batch as a pipeline sends it (thousands of records), profile
// counts what naming every value's shape one by one counts: fields of a
// few values that alternate (which the profile looks up by value), of
// more distinct values than it remembers, of values that never repeat
// (which it stops looking up), and of more shapes than a field keeps
// (counted as "mixed" from the first one past the bound).
func TestProfileOfALargeBatchCountsAsNamingEachValue(t *testing.T) {
	plan, err := check.Compile(examples.ShopOrdersV1())
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for i := range 3000 {
		coupon := `null`
		if i%7 != 0 {
			coupon = strconv.Quote("C" + strconv.Itoa(i%100) + []string{"", "-x", "x", "-1"}[i%4])
		}
		data = fmt.Appendf(data, `{"order_id":%q,"customer_id":%d,"currency":%q,"status":%q,"email":"c%d@example.com","coupon":%s,"channel":%q}`+"\n",
			string(rune('A'+i%26))+"-"+strconv.Itoa(i), i, []string{"EUR", "USD", "GBP"}[i%3], []string{"paid", "refunded", "2025-03-01", "7"}[i%4], i, coupon,
			"ch"+strconv.Itoa(i%90))
	}
	b, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	seen := map[string]map[string]bool{}
	for _, r := range b.Records {
		for slot, v := range r.Values {
			if !v.Present() {
				continue
			}
			field := plan.Schema().Field(slot).Path
			name := shapeOf(v)
			if seen[field] == nil {
				seen[field] = map[string]bool{}
			}
			if !seen[field][name] && len(seen[field]) >= maxShapesPerField {
				name = "mixed"
			}
			seen[field][name] = true
			want[field+"\x00"+name]++
		}
	}
	if want["order_id\x00mixed"] == 0 {
		t.Fatal("the batch has no field of more shapes than a field keeps; the test checks nothing of the bound")
	}
	got := profile(plan, b, func(int) bool { return true })
	if len(got) != len(want) {
		t.Fatalf("%d field shapes profiled, want %d:\n%v\nwant %v", len(got), len(want), got, want)
	}
	for k, n := range want {
		if got[k].Count != n {
			t.Errorf("%q: counted %d, want %d", k, got[k].Count, n)
		}
	}
}

// A partition open across the upgrade counted values under version-1
// names; read back, they count under the current ones, merged with what
// was counted since.
func TestFiguresOfVersion1NamesReadUnderCurrentOnes(t *testing.T) {
	f := unitFigures{
		Values: map[string]shapeFigure{
			"note\x00digit string": {Field: "note", Shape: "digit string", Sample: `"12"`, Count: 3, Passed: 2},
			"note\x00digits":       {Field: "note", Shape: "digits", Sample: `"13"`, Count: 1, Passed: 1},
			"ref\x00VH-{digits:6}": {Field: "ref", Shape: "VH-{digits:6}", Count: 5, Passed: 5},
		},
		Shapes: map[string]shapeFigure{"odo\x00text": {Field: "odo", Shape: "text", Count: 7}},
	}
	f.renameV1()
	if got := f.Values["note\x00digits"]; len(f.Values) != 2 || got.Count != 4 || got.Passed != 3 || got.Shape != "digits" {
		t.Errorf("values after the rename = %v, want note's 4 digits (3 passed) and ref's template as it was", f.Values)
	}
	if got := f.Shapes["odo\x00string"]; len(f.Shapes) != 1 || got.Count != 7 {
		t.Errorf("failure shapes after the rename = %v, want odo's 7 as string", f.Shapes)
	}
}

// Every shape the gate counts is one a one_of check takes, and takes the
// value it was counted from: an alert names what a user can write.
func TestProfiledShapesAreOneOfShapes(t *testing.T) {
	plan, err := check.Compile(examples.ShopOrdersV1())
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"order_id":"ORD-99999","customer_id":"12345678","currency":"deadbeef","status":"paid","coupon":true}`,
		`{"order_id":"ORD-100000","customer_id":1.5,"currency":"","status":"7c9e6679-7425-40de-944b-e07fc1f90ae7"}`,
		`{"order_id":"VH-000042","customer_id":"-7.5","currency":"a@b.io","status":"2026-10-01"}`,
	}
	b, err := record.NewDecoder(plan.Schema(), record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, []byte(strings.Join(lines, "\n")), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range b.Records {
		for _, v := range r.Values {
			if !v.Present() {
				continue
			}
			name := shapeOf(v)
			arg := name
			if shape.IsTemplate(name) {
				arg = strconv.Quote(name)
			}
			c := examples.ShopOrdersV1()
			c.Checks = append(c.Checks, &contractv1.Check{Name: "shape", Rule: "one_of(order_id, " + arg + ")"})
			p, err := check.Compile(c)
			if err != nil {
				t.Errorf("value %q is counted as %q, which one_of does not take: %v", v.Bytes(), name, err)
				continue
			}
			for _, s := range p.Checks() {
				if s.Name == "shape" && !s.Shapes[0].Match(v) {
					t.Errorf("value %q is counted as %q, and one_of(%s) does not take it", v.Bytes(), name, arg)
				}
			}
		}
	}
}
