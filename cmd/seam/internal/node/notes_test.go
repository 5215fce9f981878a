package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The first-start notes say which seam commands find the admin token: run
// from the directory that holds ./seam-data, or given the path of another.
func TestWhoFinds(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := whoFinds("./seam-data"); !strings.Contains(got, "run in "+wd+" ") {
		t.Errorf("whoFinds(./seam-data) = %q, want it to name %s", got, wd)
	}
	if got := whoFinds("seam-data"); !strings.Contains(got, "run in "+wd+" ") {
		t.Errorf("whoFinds(seam-data) = %q, want it to name %s", got, wd)
	}
	if got := whoFinds("/var/lib/seam"); !strings.Contains(got, "--data-dir /var/lib/seam ") {
		t.Errorf("whoFinds(/var/lib/seam) = %q, want it to name --data-dir /var/lib/seam", got)
	}
	rel := filepath.Join("other", "data")
	if got := whoFinds(rel); !strings.Contains(got, "--data-dir "+filepath.Join(wd, rel)+" ") {
		t.Errorf("whoFinds(%s) = %q, want the absolute path", rel, got)
	}
}
