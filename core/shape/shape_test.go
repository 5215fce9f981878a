package shape

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/seamdata/seam/core/record"
)

func TestOfText(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"", Empty},
		{"7c9e6679-7425-40de-944b-e07fc1f90ae7", UUID},
		{"12345678", Digits},
		{"00012345", Digits},
		{"100.00", Decimal},
		{"-7", Decimal},
		{"1.5e3", Decimal},
		{"97783900e4", Hex},
		{"1e5", "{digits}e{digits}"},
		{"2026-10-01", Date},
		{"2026-10-01T08:00:00Z", Timestamp},
		{"a@b.io", Email},
		{"deadbeef", Hex},
		{"DEADBEEF01", Hex},
		{"cafe", String},
		{"hello world", String},
		{"ACC-00012345", "ACC-{digits:8}"},
		{"ACC-10012345", "ACC-{digits}"},
		{"VH-000042", "VH-{digits:6}"},
		{"name-99999", "name-{digits}"},
		{"name-100000", "name-{digits}"},
		{"name-0", "name-{digits}"},
		{"INV-2026-000123", "INV-{digits}-{digits:6}"},
		{"1.2.3", "{digits}.{digits}.{digits}"},
		{"€12", "€{digits}"},
		{"a{1}", String},
		{strings.Repeat("x", 64) + "1", String},
	} {
		if got := OfText(tc.value); got != tc.want {
			t.Errorf("OfText(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
	for v, want := range map[*record.Value]string{
		ptr(record.BoolValue(true)): Boolean,
		ptr(record.NullValue()):     "null",
	} {
		if got := Of(*v); got != want {
			t.Errorf("Of(%v) = %q, want %q", v.Kind(), got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// gen draws the values a source sends: codes, ids, hashes, numbers as
// text, and arbitrary text.
type gen struct{ r *rand.Rand }

func (g gen) word(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

// prefix is the fixed text of a code: letters and a separator.
func (g gen) prefix() string {
	return g.word("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 1+g.r.IntN(6)) + g.word("-_/:#.", 1)
}

func (g gen) uuid() string {
	h := g.word("0123456789abcdef", 32)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// hexWord is a hash-like string with at least one letter.
func (g gen) hexWord() string {
	s := []byte(g.word("0123456789abcdef", 8+g.r.IntN(56)))
	s[g.r.IntN(len(s))] = "abcdef"[g.r.IntN(6)]
	return string(s)
}

func (g gen) value() string {
	switch g.r.IntN(9) {
	case 0:
		return g.uuid()
	case 1:
		return g.hexWord()
	case 2:
		return fmt.Sprint(g.r.Int64())
	case 3:
		w := 2 + g.r.IntN(10)
		return g.prefix() + fmt.Sprintf("%0*d", w, g.r.IntN(pow10(w-1)))
	case 4:
		return g.prefix() + fmt.Sprint(1+g.r.IntN(1e9))
	case 5:
		return fmt.Sprintf("%.2f", g.r.Float64()*1e4)
	case 6:
		return g.word("abc 0123@.-{}é\t", g.r.IntN(20))
	case 7:
		return fmt.Sprintf("2026-%02d-%02d", 1+g.r.IntN(12), 1+g.r.IntN(28))
	}
	return g.word("xyz", 3) + "@" + g.word("xyz", 3) + ".io"
}

// ofTextIs reports whether OfText(s) is want, logging the difference when
// it is not, for the properties quick.Check runs.
func ofTextIs(t *testing.T, s, want string) bool {
	t.Helper()
	if got := OfText(s); got != want {
		t.Logf("OfText(%q) = %q, want %q", s, got, want)
		return false
	}
	return true
}

// holds checks each property on n random inputs.
func holds(t *testing.T, n int, properties ...any) {
	t.Helper()
	for _, f := range properties {
		if err := quick.Check(f, &quick.Config{MaxCount: n}); err != nil {
			t.Error(err)
		}
	}
}

func pow10(k int) int {
	n := 1
	for range k {
		n *= 10
	}
	return n
}

// Sequential names keep their shape across every power of ten: the
// digits of a number that is not zero-padded are {digits}, of any width.
func TestSequentialNamesKeepTheirShapeAcrossPowersOfTen(t *testing.T) {
	f := func(seed uint64, k8, span8 uint8) bool {
		g := gen{rand.New(rand.NewPCG(seed, 1))}
		k := 1 + int(k8)%17 // 10^1 … 10^17
		span := 1 + int(span8)
		prefix, suffix := g.prefix(), ""
		if seed%2 == 0 {
			suffix = g.word("-_", 1) + g.word("xyz", 2)
		}
		want := prefix + "{digits}" + suffix
		edge := int64(1)
		for range k {
			edge *= 10
		}
		for n := max(1, edge-int64(span)); n < edge+int64(span); n++ {
			s := fmt.Sprintf("%s%d%s", prefix, n, suffix)
			if !ofTextIs(t, s, want) {
				return false
			}
		}
		return true
	}
	holds(t, 300, f)
}

// A zero-padded code keeps its width, whatever number it holds.
func TestZeroPaddedCodesKeepTheirWidth(t *testing.T) {
	f := func(seed uint64, w8 uint8) bool {
		g := gen{rand.New(rand.NewPCG(seed, 2))}
		w := 2 + int(w8)%12
		prefix := g.prefix()
		want := fmt.Sprintf("%s{digits:%d}", prefix, w)
		for range 50 {
			s := prefix + fmt.Sprintf("%0*d", w, g.r.IntN(pow10(w-1)))
			if !ofTextIs(t, s, want) {
				return false
			}
		}
		return true
	}
	holds(t, 300, f)
}

func TestUUIDsHexAndDigits(t *testing.T) {
	f := func(seed uint64) bool {
		g := gen{rand.New(rand.NewPCG(seed, 3))}
		for s, want := range map[string]string{
			g.uuid():                           UUID,
			strings.ToUpper(g.uuid()):          UUID,
			g.hexWord():                        Hex,
			fmt.Sprint(g.r.Uint64()):           Digits,
			fmt.Sprintf("%020d", g.r.Uint64()): Digits,
		} {
			if !ofTextIs(t, s, want) {
				return false
			}
		}
		return true
	}
	holds(t, 500, f)
}

// Every value is in the set of the shape it is named: the name an alert
// gives is a shape a one_of check takes, and takes that value.
func TestEveryValueMatchesItsShape(t *testing.T) {
	matches := func(v record.Value) bool {
		name := Of(v)
		m, err := Matcher(name)
		if err != nil {
			t.Logf("Of(%q) = %q, which is no shape: %v", v.Bytes(), name, err)
			return false
		}
		if !m(v) {
			t.Logf("Of(%q) = %q, whose set does not hold it", v.Bytes(), name)
			return false
		}
		return true
	}
	generated := func(seed uint64) bool {
		g := gen{rand.New(rand.NewPCG(seed, 4))}
		for range 50 {
			s := g.value()
			if !matches(record.StringValue([]byte(s))) {
				return false
			}
		}
		return true
	}
	arbitrary := func(s string) bool { return matches(record.StringValue([]byte(s))) }
	holds(t, 1000, generated, arbitrary)
	if !matches(record.BoolValue(false)) || !matches(record.StringValue(nil)) {
		t.Error("a boolean or an empty string is not in the set of its shape")
	}
	names := Names()
	if !slices.IsSorted(names) || len(names) != len(sets) {
		t.Errorf("Names() = %v, want every named shape sorted", names)
	}
}

// What the gate learned under version-1 names stays known: the stored
// name of every value covers the value's current name, so an upgrade
// raises no unannounced change for values that did not change.
func TestV1NamesCoverTheCurrentNames(t *testing.T) {
	covers := func(s string) bool {
		old, cur := v1Text([]byte(s)), OfText(s)
		if !V1Covers(old, cur) {
			t.Logf("%q: version 1 named it %q, which does not cover %q", s, old, cur)
			return false
		}
		return true
	}
	generated := func(seed uint64) bool {
		g := gen{rand.New(rand.NewPCG(seed, 5))}
		for range 50 {
			if !covers(g.value()) {
				return false
			}
		}
		return true
	}
	holds(t, 2000, generated, covers)
	for _, s := range []string{"name-99999", "name-100000", "VH-000042", "deadbeef", "12345678", "", "100.00", "-7", "1e5", "+5", "hello"} {
		covers(s)
	}
	// What changed is still a change.
	for _, c := range []struct{ old, cur string }{
		{"VH-{digits:6}", "uuid"},
		{"VH-{digits:6}", "VH-{digits:7}"},
		{"DRV-{digits:4}", "email"},
		{"digit string", "uuid"},
		{"text", "name-{digits}"},
		{"name-{digits:5}", "other-{digits}"},
	} {
		if V1Covers(c.old, c.cur) {
			t.Errorf("V1Covers(%q, %q) = true, want a change", c.old, c.cur)
		}
	}
}

// BenchmarkAppendText names a mix of the values a gate sees (codes, ids,
// numbers as text, dates, addresses, free text), as the gate does for every
// value of every batch, against the naming of version 1.
func BenchmarkAppendText(b *testing.B) {
	values := [][]byte{[]byte("ORD-0000012345"), []byte("name-100000"), []byte("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
		[]byte("12345678"), []byte("100.00"), []byte("2026-10-01"), []byte("2026-10-01T08:00:00Z"), []byte("driver7@fleet.example"),
		[]byte("deadbeef01"), []byte("paid"), []byte("a note with spaces"), []byte("EUR")}
	for _, bc := range []struct {
		name string
		fn   func(buf, b []byte) []byte
	}{{"current", AppendText}, {"v1", v1AppendText}} {
		b.Run(bc.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				for _, v := range values {
					buf = bc.fn(buf[:0], v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(values)), "ns/value")
		})
	}
}

// A zero-padded code whose numbers outgrow their padding stays in its
// family; other text does not.
func TestFamily(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{OfText("E-0999999999"), OfText("E-1000000000"), true},
		{"ACC-{digits:8}", "ACC-{digits}", true},
		{"name-{digits}", "name-{digits}", true},
		{"VH-{digits:6}", "uuid", false},
		{"A{digits}", "A{digits}B", false},
		{"A{digits:2}-{digits}", "A{digits}-{digits:3}", true},
		{"digits", "digits", true},
	} {
		if got := Family(tt.a) == Family(tt.b); got != tt.same {
			t.Errorf("Family(%q) = %q, Family(%q) = %q: same %v, want %v", tt.a, Family(tt.a), tt.b, Family(tt.b), got, tt.same)
		}
	}
}
