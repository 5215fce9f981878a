package interop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/interop"
)

// bomb is a 130-byte YAML alias bomb: six levels of ten references, a
// million nodes when expanded.
const bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
	"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"

func TestParseLimits(t *testing.T) {
	t.Parallel()
	manyKeys := func(n int, dup bool) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "k%d: 1\n", i)
		}
		if dup {
			b.WriteString("k1999: 2\n")
		}
		return b.String()
	}
	tests := []struct {
		name, doc, want string
	}{
		{"alias bomb", bomb, "aliases expand the document past"},
		{"aliases within the allowance", "rule: &r {name: not_null, mustBe: 0}\nquality: [*r, *r, *r, *r]\n", ""},
		{"deep nesting", strings.Repeat("[", 70) + strings.Repeat("]", 70), "nested deeper than 64 levels"},
		{"duplicate key among few", "a: 1\nb: 2\na: 3\n", `key "a" given twice`},
		{"duplicate key among many", manyKeys(2000, true), `key "k1999" given twice`},
		{"many distinct keys", manyKeys(2000, false), ""},
		{"merge key", "a: &a {x: 1}\nb: {<<: *a}\n", "merge keys"},
		// The line of a syntax error is the error's own, not in its message.
		{"malformed", "subject: a\n  owner: b\n", "doc.yaml:2: malformed YAML or JSON: mapping values are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := interop.Parse([]byte(tt.doc), "doc.yaml")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want the document parsed", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// BenchmarkParseAliasBomb shows what refusing an alias bomb costs: a
// fuzz target or a registry handler must not spend seconds on 130 bytes.
func BenchmarkParseAliasBomb(b *testing.B) {
	for b.Loop() {
		if _, err := interop.Parse([]byte(bomb), "bomb.yaml"); err == nil {
			b.Fatal("the bomb parsed")
		}
	}
}
