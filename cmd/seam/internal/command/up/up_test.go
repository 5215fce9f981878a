package up_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam migrate brings every store up to date, and again changes nothing.
func TestMigrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for range 2 {
		var out, errOut bytes.Buffer
		if code := seamtest.RunTo(context.Background(), []string{"migrate", "--data-dir", dir}, &out, &errOut); code != exit.OK {
			t.Fatalf("migrate: exit %d (%s)", code, errOut.String())
		}
		if got := strings.Count(out.String(), "schema up to date"); got != 3 {
			t.Errorf("migrate output %q, want three stores up to date", out.String())
		}
	}
	for _, f := range []string{"registry.db", "idmap.db", "gate.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("migrate left no %s: %v", f, err)
		}
	}
	var out, errOut bytes.Buffer
	if code := seamtest.RunTo(context.Background(), []string{"migrate", "--store", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}, &out, &errOut); code != exit.Usage {
		t.Errorf("migrate against an unreachable store: exit %d, want 2 (%s)", code, errOut.String())
	}
}
