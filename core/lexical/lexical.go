// Package lexical reads the textual forms values arrive in, RFC 3339
// timestamps, UUIDs and the names of non-finite floats, for the whole
// core: the checks, the mapping and the id rules agree on what is a
// timestamp, a UUID or a NaN because they ask this package.
package lexical

import (
	"math"
	"time"
)

// ParseRFC3339 parses an RFC 3339 timestamp, section 5.6:
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), with T and Z in either case,
// a fraction of any length (read to the nanosecond), offsets within
// ±23:59 and a leap second (:60) where it can fall, at 23:59 UTC; the
// leap second is read as the first instant of the next minute. It does
// not allocate. Empty or malformed text or an impossible date report
// false.
func ParseRFC3339(b []byte) (time.Time, bool) {
	p, ok := rfc3339Parts(b)
	if !ok {
		return time.Time{}, false
	}
	t := time.Date(p.year, time.Month(p.month), p.day, p.hour, p.minute, p.sec, p.nsec, time.UTC)
	return t.Add(-time.Duration(p.offset) * time.Second), true
}

// ValidRFC3339 reports whether ParseRFC3339 accepts b, without building
// the time: what a type check asks of every timestamp it sees.
func ValidRFC3339(b []byte) bool {
	_, ok := rfc3339Parts(b)
	return ok
}

// rfc3339 holds the fields of a timestamp.
type rfc3339 struct {
	year, month, day, hour, minute, sec, nsec int
	offset                                    int // seconds east of UTC
}

// rfc3339Parts reads a timestamp, each field in its range and the day in
// its month.
func rfc3339Parts(b []byte) (p rfc3339, ok bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't') || b[13] != ':' || b[16] != ':' {
		return p, false
	}
	year, ok1 := Digits(b[0:4])
	month, ok2 := Digits(b[5:7])
	day, ok3 := Digits(b[8:10])
	hour, ok4 := Digits(b[11:13])
	minute, ok5 := Digits(b[14:16])
	sec, ok6 := Digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > DaysIn(time.Month(month), year) || hour > 23 || minute > 59 || sec > 60 {
		return p, false
	}
	p = rfc3339{year: year, month: month, day: day, hour: hour, minute: minute, sec: sec}
	rest := b[19:]
	if rest[0] == '.' {
		i := 1
		scale := 100000000
		for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
			p.nsec += int(rest[i]-'0') * scale
			scale /= 10
		}
		if i == 1 {
			return p, false
		}
		rest = rest[i:]
	}
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := Digits(rest[1:3])
		om, ok2 := Digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return p, false
		}
		p.offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			p.offset = -p.offset
		}
	default:
		return p, false
	}
	if sec == 60 {
		// A leap second is inserted at the end of a UTC day.
		utc := (hour*60+minute)*60 - p.offset
		if utc = ((utc % 86400) + 86400) % 86400; utc != 23*3600+59*60 {
			return p, false
		}
	}
	return p, true
}

// ParseDate reports whether b is a valid YYYY-MM-DD date.
func ParseDate(b []byte) bool {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return false
	}
	y, ok1 := Digits(b[:4])
	m, ok2 := Digits(b[5:7])
	d, ok3 := Digits(b[8:10])
	return ok1 && ok2 && ok3 && m >= 1 && m <= 12 && d >= 1 && d <= DaysIn(time.Month(m), y)
}

// Digits reads a run of decimal digits; an empty run is not a number.
func Digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}

// DaysIn returns the number of days of month m in year.
func DaysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// CheckUUID says where b departs from the 8-4-4-4-12 hex form of a UUID:
// bad is -1 when it has the form, len(b) when its length is not 36, and
// otherwise the offset of the first wrong byte. upper reports hex digits
// in upper case, which the form allows.
func CheckUUID(b []byte) (bad int, upper bool) {
	if len(b) != 36 {
		return len(b), false
	}
	for i, c := range b {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return i, upper
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return i, upper
		}
	}
	return -1, upper
}

// IsUUID reports whether b has the 8-4-4-4-12 hex form, in either case.
func IsUUID(b []byte) bool {
	bad, _ := CheckUUID(b)
	return bad < 0
}

// NonFiniteName is the JSON string that stands for a non-finite FLOAT or
// DOUBLE, as in protobuf's JSON mapping of double: "NaN", "Infinity" or
// "-Infinity"; "" for a finite f. JSON numbers cannot carry these values,
// and a source that has them (PostgreSQL's real and double precision)
// sends them as these strings, which the gate's type check accepts for
// FLOAT and DOUBLE fields and nothing else.
func NonFiniteName(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return ""
}

// ParseNonFinite reads one of NonFiniteName's strings, spelled exactly.
func ParseNonFinite(b []byte) (float64, bool) {
	switch string(b) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}
