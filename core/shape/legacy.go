package shape

import (
	"strconv"
	"strings"
)

// Before this package, the gate named shapes its own way (version 1 of
// the names): "digit string", "decimal string", "empty string" and "text"
// where this package says digits, decimal, empty and string; hex only with
// a letter and a digit; templates of letters and - _ . / : # up to 40
// bytes with every run of digits counted, padded or not ("name-99999" was
// "name-{digits:5}"). Shapes the gate learned under those names stay
// readable: V1Covers tells which current names a stored one stands for.

var v1Renamed = map[string]string{
	"digit string":   Digits,
	"decimal string": Decimal,
	"empty string":   Empty,
	"text":           String,
}

// FromV1 renames a version-1 shape name to the current name of the same
// shape. A template keeps its text: a run {digits:N} of version 1 may
// stand for {digits} or {digits:N} (see V1Covers).
func FromV1(old string) string {
	if n, ok := v1Renamed[old]; ok {
		return n
	}
	return old
}

// v1TemplateByte is a byte version 1 kept as a template's fixed text.
func v1TemplateByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || strings.IndexByte("-_./:#", c) >= 0
}

// V1Covers reports whether values version 1 named old may be named
// current now: the same shape under its current name, a template whose
// counted digit runs now read {digits} (not zero-padded) or keep their
// width (zero-padded), or for "text" what the current classifier tells
// apart from text (a hex word, a code of other characters).
func V1Covers(old, current string) bool {
	if FromV1(old) == current {
		return true
	}
	switch old {
	case "text":
		// Version 1 took for text what it had no name for: hex words
		// without a digit, signed numbers, addresses it read stricter,
		// and codes of other characters or longer than 40 bytes.
		if current == Hex || current == Decimal || current == Email {
			return true
		}
		lits, runs, ok := splitTemplate(current)
		if !ok {
			return false
		}
		n := 0
		for _, l := range lits {
			n += len(l)
			for i := 0; i < len(l); i++ {
				if !v1TemplateByte(l[i]) {
					return true
				}
			}
		}
		for _, r := range runs {
			n += max(1, runWidth(r))
		}
		return n > 40
	case "email":
		// Version 1 read "a@b." and addresses with tabs as e-mail.
		return current == String || IsTemplate(current) && strings.Contains(current, "@")
	}
	ol, oruns, ok1 := splitTemplate(old)
	if ok1 && current == Decimal {
		// "-7" and "1e5" were templates of version 1.
		var b strings.Builder
		for i, r := range oruns {
			b.WriteString(ol[i])
			b.WriteString(strings.Repeat("1", max(1, runWidth(r))))
		}
		b.WriteString(ol[len(ol)-1])
		return IsDecimal([]byte(b.String()))
	}
	cl, cruns, ok2 := splitTemplate(current)
	if !ok1 || !ok2 || len(oruns) != len(cruns) {
		return false
	}
	for i := range ol {
		if ol[i] != cl[i] {
			return false
		}
	}
	for i, r := range oruns {
		if cruns[i] != r && !(cruns[i] == "{digits}" && strings.HasPrefix(r, "{digits:")) {
			return false
		}
	}
	return true
}

// runWidth is the count of a placeholder such as {digits:8}, 0 without one.
func runWidth(ph string) int {
	_, count, ok := strings.Cut(strings.Trim(ph, "{}"), ":")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(count)
	return n
}

// splitTemplate cuts a template into its fixed text (one more part than
// placeholders) and its placeholders; false when name is no template.
func splitTemplate(name string) (lits, runs []string, ok bool) {
	if !IsTemplate(name) {
		return nil, nil, false
	}
	rest := name
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			return append(lits, rest), runs, true
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, nil, false
		}
		lits = append(lits, rest[:open])
		runs = append(runs, rest[open:open+end+1])
		rest = rest[open+end+1:]
	}
}
