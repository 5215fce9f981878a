package lexical_test

import (
	"testing"
	"time"

	"github.com/seamdata/seam/core/lexical"
)

func TestParseRFC3339(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"2025-03-01T10:00:00Z", true},
		{"2025-03-01T10:00:00.123456789+02:00", true},
		{"2025-03-01T10:00:00.1234567891Z", true}, // over 9 fraction digits: read to the nanosecond
		{"2024-02-29T23:59:59-07:30", true},
		{"", false},
		{"2025", false},
		{"2025-02-29T00:00:00Z", false},
		{"2025-03-01T24:00:00Z", false},
		{"2025-03-01 10:00:00Z", false},
		{"2025-03-01T10:00:00", false},
		{"customer-000123@example.com", false}, // as long as a timestamp, and not one
		{"2025-03-01T1:00:00.5Z", false},       // RFC 3339 hours have two digits; time.Parse is lenient
		// RFC 3339 section 5.6: T and Z in either case, offsets within
		// ±23:59, a leap second at 23:59 UTC (section 5.7).
		{"2025-03-01t10:00:00z", true},
		{"2025-03-01T10:00:00+23:59", true},
		{"2025-03-01T10:00:00-24:00", false},
		{"2025-03-01T10:00:00+10:60", false},
		{"1998-12-31T23:59:60Z", true},
		{"1998-12-31T15:59:60.123-08:00", true},
		{"1998-12-31T23:58:60Z", false},
		{"1998-12-31T22:59:60Z", false},
		{"1998-12-31T23:59:61Z", false},
		{"2025-03-01T10:00:00.Z", false},
	} {
		got, ok := lexical.ParseRFC3339([]byte(tc.in))
		if valid := lexical.ValidRFC3339([]byte(tc.in)); valid != ok {
			t.Errorf("ValidRFC3339(%q) = %v, ParseRFC3339 says %v", tc.in, valid, ok)
		}
		if ok != tc.ok {
			t.Errorf("ParseRFC3339(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if want, err := time.Parse(time.RFC3339Nano, tc.in); ok && err == nil && !got.Equal(want) {
			t.Errorf("ParseRFC3339(%q) = %v, time.Parse says %v, %v", tc.in, got, want, err)
		}
	}
}

// A string as long as a timestamp that is not one costs no allocation to
// refuse: every string a value's shape is named for is tried.
func TestParseRFC3339RefusesWithoutAllocating(t *testing.T) {
	email := []byte("customer-000123@example.com")
	if n := testing.AllocsPerRun(100, func() { lexical.ParseRFC3339(email) }); n != 0 {
		t.Errorf("refusing %q allocates %v times", email, n)
	}
}

func TestCheckUUID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		bad   int
		upper bool
	}{
		{"0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b01", -1, false},
		{"0B9E5C8E-3F0D-4A4E-9D43-1F3C2A6F6B01", -1, true},
		{"", 0, false},
		{"0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6b0", 35, false},
		{"0b9e5c8e_3f0d-4a4e-9d43-1f3c2a6f6b01", 8, false},
		{"0b9e5c8e-3f0d-4a4e-9d43-1f3c2a6f6bx1", 34, false},
	} {
		bad, upper := lexical.CheckUUID([]byte(tc.in))
		if bad != tc.bad || upper != tc.upper {
			t.Errorf("CheckUUID(%q) = %d, %v; want %d, %v", tc.in, bad, upper, tc.bad, tc.upper)
		}
	}
}

// FuzzParseRFC3339 checks the parser against time.Parse, which reads
// RFC 3339 with three differences from the RFC: it wants upper-case T
// and Z, refuses a leap second, and takes offsets past ±23:59. So: what
// the parser accepts, time.Parse accepts as the same instant once T and Z
// are upper-case, a leap second being the first instant of the next
// minute; the plainest form is never refused where time.Parse takes it
// (time.Parse also takes a comma before the fraction, a one-digit hour
// and offsets such as +00:60, which the RFC does not). ValidRFC3339
// accepts exactly what ParseRFC3339 does.
func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{"2025-03-01T10:00:00Z", "2025-03-01T10:00:00.123456789+02:00", "2024-02-29T23:59:59-07:30", "2025-02-29T00:00:00Z",
		"2025-03-01T24:00:00Z", "", "2025-03-01t10:00:00z", "2016-12-31T23:59:60Z", "2025-03-01T10:00:00+24:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := lexical.ParseRFC3339([]byte(s))
		if valid := lexical.ValidRFC3339([]byte(s)); valid != ok {
			t.Fatalf("ValidRFC3339(%q) = %v, ParseRFC3339 says %v", s, valid, ok)
		}
		norm := []byte(s)
		if len(norm) > 10 && norm[10] == 't' {
			norm[10] = 'T'
		}
		if n := len(norm); n > 0 && norm[n-1] == 'z' {
			norm[n-1] = 'Z'
		}
		leap := len(norm) >= 19 && string(norm[16:19]) == ":60"
		if leap {
			copy(norm[16:19], ":59")
		}
		want, err := time.Parse(time.RFC3339Nano, string(norm))
		if leap && err == nil {
			want = want.Add(time.Second).Truncate(time.Second)
		}
		if !ok {
			// The plainest form, dddd-dd-ddTdd:dd:ddZ, is never refused
			// where time.Parse takes it.
			plain := len(s) == 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == 'Z'
			for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
				plain = plain && s[i] >= '0' && s[i] <= '9'
			}
			if err == nil && plain && !leap {
				t.Fatalf("refused %q, time.Parse accepts it as %v", s, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("accepted %q, time.Parse refuses it (upper-cased, a leap second as :59): %v", s, err)
		}
		if !got.Equal(want) {
			t.Fatalf("%q: got %v, want %v", s, got, want)
		}
	})
}
