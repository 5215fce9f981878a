package token_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// A token created with seam token works at once against a running Seam
// with the roles it was given, and a revoked one stops working, with no
// restart.
func TestTokensApplyWithoutRestart(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := seamtest.Run(t.Context(), append(args, "--data-dir", n.DataDir)...)
		if code != want {
			t.Fatalf("seam %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	var created struct {
		Token string   `json:"token"`
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal([]byte(run(0, "token", "create", "dashboards", "--role", "viewer", "-o", "json")), &created); err != nil || !strings.HasPrefix(created.Token, "seam_") {
		t.Fatalf("token create -o json: %v, %+v", err, created)
	}
	call := func(token string, args ...string) (string, int) {
		out, errOut, code := seamtest.Run(t.Context(), append(args, "--addr", n.GRPCAddr, "--token", token)...)
		return out + errOut, code
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	eventually("the new viewer token reads", func() bool { _, code := call(created.Token, "contract", "list"); return code == exit.OK })
	if out, code := call(created.Token, "gate", "contain", "shop.orders", "--reason", "x"); code != exit.Usage || !strings.Contains(out, "permission denied") {
		t.Errorf("viewer token containing a source: exit %d, %s; want permission denied", code, out)
	}

	if out := run(0, "token", "list"); !strings.Contains(out, "dashboards") || !strings.Contains(out, "viewer") || strings.Contains(out, created.Token) {
		t.Errorf("token list:\n%s\nwant dashboards with its role, and never the token", out)
	}
	run(exit.Usage, "token", "create", "dashboards", "--role", "viewer")
	run(exit.Usage, "token", "create", "x", "--role", "wizard")
	run(exit.Usage, "token", "create", "x", "--role", "owner")

	run(0, "token", "revoke", "dashboards")
	eventually("the revoked token is refused", func() bool {
		out, code := call(created.Token, "contract", "list")
		return code == exit.Usage && strings.Contains(out, "--token")
	})
	run(exit.Usage, "token", "revoke", "dashboards")
}
