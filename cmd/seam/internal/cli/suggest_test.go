package cli

import "testing"

func TestNearest(t *testing.T) {
	t.Parallel()
	contract := []string{"check", "diff", "export", "get", "history", "import", "infer", "list", "register"}
	cases := []struct {
		typed      string
		candidates []string
		want       string
	}{
		// get is two edits from lst and comes first; list is one.
		{"lst", contract, "list"},
		{"lsit", contract, "list"},
		{"LIST", contract, "list"},
		{"regster", contract, "register"},
		{"reg", contract, "register"},
		{"hist", contract, "history"},
		{"imprt", contract, "import"},
		{"frobnicate", contract, ""},
		// two letters two edits away from up are not a typo of it
		{"ab", []string{"up"}, ""},
		{"u", []string{"up"}, "up"},
		{"data_dir", []string{"addr", "data-dir", "timeout"}, "data-dir"},
		{"", contract, ""},
	}
	for _, tc := range cases {
		if got := nearest(tc.typed, tc.candidates); got != tc.want {
			t.Errorf("nearest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"lst", "list", 1}, {"lst", "get", 2},
		{"lsit", "list", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3}, {"héllo", "hello", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}
