package odcs

import "strings"

// javaTokens pairs JDK DateTimeFormatter pattern letters (ODCS's date
// formats) with Go layout elements, longest first.
var javaTokens = [][2]string{
	{"yyyy", "2006"}, {"uuuu", "2006"}, {"yy", "06"},
	{"MMMM", "January"}, {"MMM", "Jan"}, {"MM", "01"}, {"M", "1"},
	{"dd", "02"}, {"d", "2"},
	{"EEEE", "Monday"}, {"EEE", "Mon"},
	{"HH", "15"}, {"hh", "03"}, {"h", "3"},
	{"mm", "04"}, {"m", "4"},
	{"ss", "05"}, {"s", "5"},
	{"SSSSSSSSS", "000000000"}, {"SSSSSS", "000000"}, {"SSS", "000"},
	{"a", "PM"},
	{"XXX", "Z07:00"}, {"XX", "Z0700"}, {"X", "Z07"}, {"xxx", "-07:00"}, {"xx", "-0700"}, {"Z", "-0700"},
}

// layoutFromJava converts a JDK date pattern ("yyyy-MM-dd'T'HH:mm:ssXXX")
// to a Go time layout; ok is false for letters it does not know.
func layoutFromJava(p string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(p[i+1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(p[i+1 : i+1+end])
			i += end + 2
			continue
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			matched := false
			for _, t := range javaTokens {
				if strings.HasPrefix(p[i:], t[0]) {
					if strings.HasPrefix(t[1], "0000") && b.Len() > 0 && !strings.HasSuffix(b.String(), ".") {
						return "", false // Go fractions follow a dot
					}
					b.WriteString(t[1])
					i += len(t[0])
					matched = true
					break
				}
			}
			if !matched {
				return "", false
			}
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), true
}

// layoutToJava converts a Go time layout to a JDK date pattern; ok is false
// for layouts it cannot express. "RFC3339" is Go's RFC 3339 layout.
func layoutToJava(layout string) (string, bool) {
	if layout == "RFC3339" {
		layout = "2006-01-02T15:04:05Z07:00"
	}
	var b strings.Builder
	for i := 0; i < len(layout); {
		matched := false
		for _, t := range goTokens {
			if strings.HasPrefix(layout[i:], t[1]) {
				b.WriteString(t[0])
				i += len(t[1])
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		c := layout[i]
		switch {
		case c >= '0' && c <= '9':
			return "", false // a Go layout number this table does not know
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			b.WriteString("'" + string(c) + "'")
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String(), true
}

// goTokens is javaTokens ordered for matching Go layouts, longest first.
var goTokens = [][2]string{
	{"yyyy", "2006"}, {"MMMM", "January"}, {"EEEE", "Monday"},
	{"SSSSSSSSS", "000000000"}, {"SSSSSS", "000000"}, {"SSS", "000"},
	{"XXX", "Z07:00"}, {"XX", "Z0700"}, {"xxx", "-07:00"}, {"xx", "-0700"}, {"X", "Z07"},
	{"MMM", "Jan"}, {"EEE", "Mon"},
	{"yy", "06"}, {"MM", "01"}, {"dd", "02"}, {"HH", "15"}, {"hh", "03"}, {"mm", "04"}, {"ss", "05"},
	{"a", "PM"}, {"M", "1"}, {"d", "2"}, {"h", "3"}, {"m", "4"}, {"s", "5"},
}
