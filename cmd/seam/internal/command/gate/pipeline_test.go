package gate_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// The walkthrough's pipeline script (docs/examples/publish-partition.sh), run
// as a pipeline runs it, with the seam command built from this tree: a
// good day is published, a blocked day is dropped (and its earlier copy
// removed), the corrected day sent with REPLACE=1 is published, counted
// once.
func TestPublishPartitionScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	// go test runs in the package's directory; the path holds with
	// -trimpath, where runtime.Caller no longer names a file on disk.
	script := filepath.Join("..", "..", "..", "..", "..", "docs", "examples", "publish-partition.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "seam")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/seamdata/seam/cmd/seam").CombinedOutput(); err != nil {
		t.Fatalf("go build seam: %v\n%s", err, out)
	}
	n := seamtest.StartOrders(t)
	publish := t.TempDir()
	run := func(replace bool, partition, file string) (string, int) {
		cmd := exec.Command("sh", script, "shop.orders", partition, file, publish)
		cmd.Env = append(os.Environ(), "SEAM="+bin, "SEAM_ADDR="+n.GRPCAddr, "SEAM_TOKEN="+n.Admin, "REPLACE=")
		if replace {
			cmd.Env = append(cmd.Env, "REPLACE=1")
		}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}

	good := seamtest.WriteLines(t, "good.ndjson", seamtest.OrderLines(40))
	if out, code := run(false, "2026-03-01", good); code != 0 || !strings.Contains(out, "published shop.orders 2026-03-01: 40 records") {
		t.Fatalf("a good day: exit %d\n%s", code, out)
	}
	if got := len(ndjsonLines(t, filepath.Join(publish, "2026-03-01.ndjson"))); got != 40 {
		t.Errorf("published %d records of the good day, want 40", got)
	}

	lines := seamtest.OrderLines(40)
	lines[7] = strings.Replace(lines[7], fmt.Sprintf(`"customer_id":%d,`, 100007), ``, 1)
	bad := seamtest.WriteLines(t, "bad.ndjson", lines)
	stale := filepath.Join(publish, "2026-03-02.ndjson")
	if err := os.WriteFile(stale, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := run(false, "2026-03-02", bad)
	if code != 1 || !strings.Contains(out, "dropped shop.orders 2026-03-02: BLOCKED") || !strings.Contains(out, "customer_present") {
		t.Fatalf("a blocked day: exit %d\n%s\nwant 1, dropped, naming the check", code, out)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the blocked day left %s published (%v)", stale, err)
	}

	out, code = run(true, "2026-03-02", good)
	if code != 0 || !strings.Contains(out, "published shop.orders 2026-03-02: 40 records") {
		t.Fatalf("the corrected day with REPLACE=1: exit %d\n%s", code, out)
	}
	show := n.MustJSON(t, "gate", "partition", "shop.orders", "2026-03-02")
	p := show["partition"].(map[string]any)
	if seamtest.JSONInt(p["counts"].(map[string]any)["accepted"]) != 40 || seamtest.JSONInt(p["attempt"]) != 2 {
		t.Errorf("the replaced day = %v, want 40 accepted once, attempt 2", p)
	}

	if _, code := run(false, "2026-03-03", filepath.Join(t.TempDir(), "missing.ndjson")); code != 2 {
		t.Errorf("a missing file: exit %d, want 2", code)
	}
}
