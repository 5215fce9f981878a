package classify_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/classify"
)

// TestRulesDocMatchesTable keeps docs/rules.md honest: its level table must
// list every rule with the levels the classifier applies, and every rule
// must have its own section with an example.
func TestRulesDocMatchesTable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Skipf("docs/rules.md is not beside this module (%v); the test runs in the repository only", err)
	}
	text := string(doc)
	row := regexp.MustCompile(`(?m)^\| ([A-Z_]+) \| (yes|no) \| (yes|no) \|$`)
	documented := map[string][2]bool{}
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		documented[m[1]] = [2]bool{m[2] == "yes", m[3] == "yes"}
	}
	for _, r := range classify.Rules() {
		d, ok := documented[r.ID]
		if !ok {
			t.Errorf("docs/rules.md level table lacks %s", r.ID)
			continue
		}
		if d != [2]bool{r.BreaksBackward, r.BreaksForward} {
			t.Errorf("docs/rules.md says %s breaks backward/forward %v, the classifier %v", r.ID, d, [2]bool{r.BreaksBackward, r.BreaksForward})
		}
		if !strings.Contains(text, "\n### "+r.ID+"\n") {
			t.Errorf("docs/rules.md has no section \"### %s\"", r.ID)
		}
		delete(documented, r.ID)
	}
	for id := range documented {
		t.Errorf("docs/rules.md documents %s, which the classifier does not have", id)
	}
}
