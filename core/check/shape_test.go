package check_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/quick"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/shape"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// accountRefs draws the values a source sends as its account reference:
// sequential names across a power of ten, zero-padded codes, UUIDs, hex,
// digits, decimals, numbers, booleans and arbitrary text, as JSON.
func accountRefs(r *rand.Rand, text string) []string {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	edge := 1
	for range 1 + r.IntN(9) {
		edge *= 10
	}
	hex := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789abcdef"[r.IntN(16)]
		}
		return string(b)
	}
	u := hex(32)
	return []string{
		q(fmt.Sprintf("name-%d", edge-1)), q(fmt.Sprintf("name-%d", edge)),
		q(fmt.Sprintf("ACC-%08d", r.IntN(1e7))), q(fmt.Sprintf("VH-%06d", r.IntN(1e5))),
		q(u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]),
		q(hex(8) + "f"), q(strconv.Itoa(r.Int())), q(fmt.Sprintf("%.2f", r.Float64()*1e3)),
		strconv.Itoa(r.Int()), fmt.Sprintf("%g", r.Float64()), "true", q(text), q(""),
		q("x" + strconv.Itoa(r.IntN(100)) + "@example.io"), q("2026-03-01"), q("2026-03-01T10:00:00Z"),
	}
}

// A one_of check takes every shape the classifier names, by that name, and
// the value it was named from: what an alert calls a shape is a shape a
// user can write.
func TestOneOfTakesEveryShapeTheClassifierNames(t *testing.T) {
	plans := map[string]*check.Plan{}
	f := func(seed uint64, text string) bool {
		r := rand.New(rand.NewPCG(seed, 7))
		for _, ref := range accountRefs(r, text) {
			p0 := compile(t, bank(0))
			recs := decode(t, p0, recordv1.Format_FORMAT_NDJSON, txn("T", ref, "2026-03-01T10:00:00Z", ""))
			slot, _ := p0.Schema().Lookup("account_ref")
			name := shape.Of(recs[0].Values[slot])
			arg := name
			if shape.IsTemplate(name) {
				arg = strconv.Quote(name)
			}
			p, ok := plans[name]
			if !ok {
				var err error
				p, err = check.Compile(bank(0, &contractv1.Check{Name: "shape", Rule: "one_of(account_ref, " + arg + ")"}))
				if err != nil {
					t.Logf("%s is named %q, which one_of does not take: %v", ref, name, err)
					return false
				}
				plans[name] = p
			}
			res := p.Validate(decode(t, p, recordv1.Format_FORMAT_NDJSON, txn("T", ref, "2026-03-01T10:00:00Z", "")))
			if got := strings.Join(failuresOf(p, res), ","); got != "" {
				t.Logf("account_ref %s is named %q, and one_of(account_ref, %s) fails it: %s", ref, name, arg, got)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"name-{digits}", "ACC-{digits:8}", "uuid", "hex", "digits", "decimal", "number", "boolean", "email", "date", "timestamp", "empty", "string"} {
		if plans[name] == nil {
			t.Errorf("no generated value was named %s", name)
		}
	}
}
