package check

import (
	"regexp"
	"testing"
)

// TestMatcherAgreesWithRegexp compares the single-pass matcher with the
// regexp engine on inputs around each pattern's edges.
func TestMatcherAgreesWithRegexp(t *testing.T) {
	t.Parallel()
	patterns := []struct {
		pattern string
		fast    bool
	}{
		{`^ORD-[0-9]{10}$`, true},
		{`^[^@ ]+@[^@ ]+$`, true},
		{`^[A-Z]{2,3}-?\d+$`, true},
		{`^a.b$`, true},
		{`^é+x?$`, true},
		{`^[a-z]+[a-z0-9]$`, false}, // overlapping classes need backtracking
		{`ORD-[0-9]+`, false},       // unanchored
		{`^(?i)ord$`, false},        // case folding
		{`^(a|b)+$`, false},
	}
	inputs := []string{"", "ORD-0000000001", "ORD-000000001", "ORD-00000000012", "ord-0000000001", "a@b", "a@@b", "@b", "a b@c",
		"AB-12", "ABC12", "ABCD-1", "AB-", "a\nb", "axb", "aéb", "ééx", "x", "abc9", "abc", "ab", "ORD-1", "xORD-12y", "ORD", "abab", "é", "\xff"}
	for _, p := range patterns {
		m, err := newMatcher(p.pattern)
		if err != nil {
			t.Fatalf("newMatcher(%q): %v", p.pattern, err)
		}
		if got := m.seq != nil; got != p.fast {
			t.Errorf("%s: single pass = %v, want %v", p.pattern, got, p.fast)
		}
		re := regexp.MustCompile(p.pattern)
		for _, in := range inputs {
			if got, want := m.Match([]byte(in)), re.MatchString(in); got != want {
				t.Errorf("%s on %q: got %v, want %v (regexp)", p.pattern, in, got, want)
			}
		}
	}
}
