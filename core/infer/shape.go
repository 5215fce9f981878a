package infer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/shape"
)

// Value kinds as a profile counts them. CSV cells are typed by their text
// (an integer literal is an integer), JSON values by their JSON type.
const (
	kindString = iota
	kindInteger
	kindNumber
	kindBool
	kindObject
	kindArray
	numKinds
)

var kindNames = [numKinds]string{"string", "integer", "number", "boolean", "object", "array"}

// stringShape names the shape of one string as every part of Seam does
// (core/shape): a named shape, a template such as "ACC-{digits:8}" or
// "name-{digits}" when the string mixes fixed text with digits, or
// "string".
func stringShape(s string) string { return shape.OfText(s) }

func digitsOnly(s string) bool { return shape.IsDigits([]byte(s)) }

// maxTemplateLen bounds the strings a template is inferred from: longer
// text is prose, not a code.
const maxTemplateLen = shape.MaxTemplateLen

// skeleton is a string cut into literal text and runs of one class of
// characters: "ACC-00012345" is "ACC-" and a run of 8 digits. With letters
// as a class, "AB-1234" is a run of 2 letters, "-" and 4 digits.
type skeleton struct {
	lits []string // len(runs)+1 literal parts around the runs
	runs []run
}

type run struct {
	class string // "digits" or "alpha"
	n     int
	// padded is a run of digits that starts with a zero ("000123").
	padded bool
}

// skeletonOf cuts s into a skeleton. Digit runs always become runs; with
// letters, letter runs do too. It fails for text that is no code: too
// long, without any run and any literal or letter run, or holding braces,
// spaces or control characters (a template cannot say them plainly).
func skeletonOf(s string, letters bool) (skeleton, bool) {
	if s == "" || len(s) > maxTemplateLen || !utf8.ValidString(s) {
		return skeleton{}, false
	}
	var sk skeleton
	var lit strings.Builder
	hasDigits := false
	for i := 0; i < len(s); {
		c := s[i]
		class := ""
		switch {
		case c >= '0' && c <= '9':
			class = "digits"
		case letters && (c|0x20 >= 'a' && c|0x20 <= 'z'):
			class = "alpha"
		case c == '{' || c == '}' || c <= ' ' || c == 0x7f:
			return skeleton{}, false
		}
		if class == "" {
			lit.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(s) && sameClass(s[j], class) {
			j++
		}
		if class == "digits" {
			hasDigits = true
		}
		sk.lits = append(sk.lits, lit.String())
		lit.Reset()
		sk.runs = append(sk.runs, run{class, j - i, class == "digits" && c == '0' && j-i > 1})
		i = j
	}
	sk.lits = append(sk.lits, lit.String())
	if !hasDigits {
		return skeleton{}, false
	}
	// A bare number is "digits", not a template: a template needs fixed text
	// (or, with letters, a letter run) to say anything beyond that.
	fixed := false
	for _, l := range sk.lits {
		fixed = fixed || l != ""
	}
	for _, r := range sk.runs {
		fixed = fixed || r.class == "alpha"
	}
	return sk, fixed
}

func sameClass(c byte, class string) bool {
	if class == "digits" {
		return c >= '0' && c <= '9'
	}
	return c|0x20 >= 'a' && c|0x20 <= 'z'
}

// key identifies skeletons that differ at most in run lengths.
func (sk skeleton) key() string {
	var b strings.Builder
	for i, r := range sk.runs {
		b.WriteString(sk.lits[i])
		b.WriteString("{" + r.class + "}")
	}
	b.WriteString(sk.lits[len(sk.lits)-1])
	return b.String()
}

// template renders the skeleton as a check template (check.CompileTemplate
// syntax). widths gives each run's length, or -1 for "one or more"; nil
// takes the skeleton's own lengths.
func (sk skeleton) template(widths []int) string {
	var b strings.Builder
	for i, r := range sk.runs {
		b.WriteString(sk.lits[i])
		w := r.n
		if widths != nil {
			w = widths[i]
		}
		if w < 0 {
			fmt.Fprintf(&b, "{%s}", r.class)
		} else {
			fmt.Fprintf(&b, "{%s:%d}", r.class, w)
		}
	}
	b.WriteString(sk.lits[len(sk.lits)-1])
	return b.String()
}

// templateGroup gathers the strings of one skeleton key and the lengths of
// each run seen.
type templateGroup struct {
	sk     skeleton
	count  int
	widths []int  // per run: the common length, or -1 once lengths differ
	padded []bool // per run: some string had it zero-padded
}

func (g *templateGroup) add(sk skeleton) {
	if g.count == 0 {
		g.sk = sk
		g.widths = make([]int, len(sk.runs))
		g.padded = make([]bool, len(sk.runs))
		for i, r := range sk.runs {
			g.widths[i] = r.n
		}
	}
	g.count++
	for i, r := range sk.runs {
		if g.widths[i] != r.n {
			g.widths[i] = -1
		}
		g.padded[i] = g.padded[i] || r.padded
	}
}

// templateWidths are the run widths a group's template says: a run of
// letters keeps a common length; a run of digits keeps it only when it is
// zero-padded (some string has it start with a zero), since a number that
// is not padded grows a digit at each power of ten ("name-99999",
// "name-100000" are "name-{digits}").
func (g *templateGroup) templateWidths() []int {
	w := slices.Clone(g.widths)
	for i, r := range g.sk.runs {
		if r.class == "digits" && !g.padded[i] {
			w[i] = -1
		}
	}
	return w
}

// templateInference infers a template from strings: their common
// skeleton, with letters as literal text ("ACC-{digits:8}") and with
// letters as runs ("{alpha:2}-{digits:4}").
type templateInference struct {
	exact, classed map[string]*templateGroup
}

func newTemplateInference() *templateInference {
	return &templateInference{exact: map[string]*templateGroup{}, classed: map[string]*templateGroup{}}
}

// maxTemplateGroups bounds the distinct skeletons kept per field, so a
// field of free text cannot grow the map without end.
const maxTemplateGroups = 64

func (t *templateInference) add(s string) {
	addTo := func(m map[string]*templateGroup, letters bool) {
		sk, ok := skeletonOf(s, letters)
		if !ok {
			return
		}
		k := sk.key()
		g := m[k]
		if g == nil {
			if len(m) >= maxTemplateGroups {
				return
			}
			g = &templateGroup{}
			m[k] = g
		}
		g.add(sk)
	}
	addTo(t.exact, false)
	addTo(t.classed, true)
}

// best returns the template covering the most strings and how many it
// covers ("" when no skeleton covers any): the exact skeleton when
// it covers as many strings as the classed one, since literal text says
// more than a letter class.
func (t *templateInference) best() (string, int) {
	pick := func(m map[string]*templateGroup) (string, int) {
		var best *templateGroup
		bestKey := ""
		for k, g := range m {
			if best == nil || g.count > best.count || g.count == best.count && k < bestKey {
				best, bestKey = g, k
			}
		}
		if best == nil {
			return "", 0
		}
		return best.sk.template(best.templateWidths()), best.count
	}
	et, en := pick(t.exact)
	ct, cn := pick(t.classed)
	if cn > en {
		return ct, cn
	}
	return et, en
}

// templatePattern compiles a template into the anchored RE2 pattern a
// contract field and an idmap STRING format use.
func templatePattern(tmpl string) (string, error) {
	return check.CompileTemplate(tmpl)
}

// uuidPattern is the pattern of a STRING field holding UUIDs in either case.
const uuidPattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

// jsonNumber reports whether text is a JSON number literal and whether it
// is an integer that fits int64: how a CSV cell of a number column is read.
func jsonNumber(text string) (isNumber, isInt bool) {
	s := text
	if s == "" {
		return false, false
	}
	if s[0] == '-' {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || (s[0] == '0' && i > 1) {
		return false, false
	}
	intPart := i
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k == j {
			return false, false
		}
		i = k
	}
	if i != len(s) {
		return false, false
	}
	if intPart != len(s) {
		return true, false
	}
	_, err := strconv.ParseInt(text, 10, 64)
	return true, err == nil
}

// decimalText reports whether s is -?digits(.digits)?, a DECIMAL sent as text.
func decimalText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	return digitsOnly(whole) && (!dot || digitsOnly(frac))
}
