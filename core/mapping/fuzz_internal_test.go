package mapping

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

// FuzzParseDecimal checks the exact decimal reader against strconv: what
// it accepts is a number strconv reads to the same float64, and its plain
// text reads back to the same value.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0", "12.34", "1e3", "1.5E-7", "12345678901234567890123", "0.000001", "-9223372036854775808", "007", "1.", ".5", "1e", "--1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok, big := parseDecimal([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		var ne *strconv.NumError
		if err != nil && !(errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange)) {
			t.Fatalf("parseDecimal accepted %q, strconv refuses it: %v", s, err)
		}
		if big {
			// Only the leading digits are kept; callers use strconv.
			return
		}
		if d.exp > 300 || d.exp < -300 {
			return
		}
		if got := d.float(); got != want && !(math.IsInf(want, 0) || want == 0) {
			t.Fatalf("%q: got %v, want %v", s, got, want)
		}
		text := string(d.appendText(nil))
		back, ok, _ := parseDecimal([]byte(text))
		if !ok || back.float() != d.float() {
			t.Fatalf("%q: plain text %q reads back as %v (ok %v), want %v", s, text, back.float(), ok, d.float())
		}
	})
}
