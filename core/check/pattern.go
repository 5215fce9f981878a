package check

import (
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// matcher matches a field pattern. Contract patterns are mostly anchored
// sequences of literals and character classes ("^ORD-[0-9]{10}$"), which a
// single greedy pass decides exactly when each repeated class is disjoint
// from what follows it; those skip the regexp engine, which costs several
// times more per value. Anything else uses regexp.
type matcher struct {
	re   *regexp.Regexp
	seq  []element // nil when re decides
	text string
}

// element is a character class repeated min to max times (max -1: unbounded).
type element struct {
	ascii    [128]bool
	ranges   []rune // inclusive pairs, as regexp/syntax gives them
	min, max int
}

func (e *element) has(r rune) bool {
	if r < 128 {
		return e.ascii[r]
	}
	for i := 0; i+1 < len(e.ranges); i += 2 {
		if r >= e.ranges[i] && r <= e.ranges[i+1] {
			return true
		}
	}
	return false
}

func newMatcher(pattern string) (*matcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	m := &matcher{re: re, text: pattern}
	if ast, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		m.seq = sequence(ast)
	}
	return m, nil
}

func (m *matcher) String() string { return m.text }

// sequence compiles ^(class{n,m})*$ patterns, or returns nil.
func sequence(re *syntax.Regexp) []element {
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 ||
		re.Sub[0].Op != syntax.OpBeginText || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		return nil
	}
	var seq []element
	for _, sub := range re.Sub[1 : len(re.Sub)-1] {
		min, max := 1, 1
		switch sub.Op {
		case syntax.OpRepeat:
			min, max = sub.Min, sub.Max
			sub = sub.Sub[0]
		case syntax.OpPlus:
			min, max = 1, -1
			sub = sub.Sub[0]
		case syntax.OpStar:
			min, max = 0, -1
			sub = sub.Sub[0]
		case syntax.OpQuest:
			min, max = 0, 1
			sub = sub.Sub[0]
		}
		if sub.Flags&syntax.FoldCase != 0 {
			return nil
		}
		switch sub.Op {
		case syntax.OpLiteral:
			if min != 1 || max != 1 {
				if len(sub.Rune) != 1 {
					return nil
				}
			}
			for _, r := range sub.Rune {
				seq = append(seq, class([]rune{r, r}, min, max))
			}
		case syntax.OpCharClass:
			seq = append(seq, class(sub.Rune, min, max))
		case syntax.OpAnyCharNotNL:
			seq = append(seq, class([]rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune}, min, max))
		default:
			return nil
		}
	}
	// Greedy is exact only if no variable element can take a character
	// that an element after it needs: it must be disjoint from the following
	// optional elements and the first mandatory one.
	for i := range seq {
		if seq[i].min == seq[i].max {
			continue
		}
		for j := i + 1; j < len(seq); j++ {
			if overlap(seq[i].ranges, seq[j].ranges) {
				return nil
			}
			if seq[j].min > 0 {
				break
			}
		}
	}
	return seq
}

func class(ranges []rune, min, max int) element {
	e := element{ranges: ranges, min: min, max: max}
	for r := rune(0); r < 128; r++ {
		for i := 0; i+1 < len(ranges); i += 2 {
			if r >= ranges[i] && r <= ranges[i+1] {
				e.ascii[r] = true
			}
		}
	}
	return e
}

func overlap(a, b []rune) bool {
	for i := 0; i+1 < len(a); i += 2 {
		for j := 0; j+1 < len(b); j += 2 {
			if a[i] <= b[j+1] && b[j] <= a[i+1] {
				return true
			}
		}
	}
	return false
}

// Match reports whether b matches the pattern.
func (m *matcher) Match(b []byte) bool {
	if m.seq == nil {
		return m.re.Match(b)
	}
	pos := 0
	for i := range m.seq {
		e := &m.seq[i]
		n := 0
		for (e.max < 0 || n < e.max) && pos < len(b) {
			r, size := rune(b[pos]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRune(b[pos:])
			}
			if !e.has(r) {
				break
			}
			pos += size
			n++
		}
		if n < e.min {
			return false
		}
	}
	return pos == len(b)
}
