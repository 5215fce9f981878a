package token_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/clocktest"
)

// A token created with seam token works at once against a running Seam
// with the roles it was given, and a revoked one stops working, with no
// restart.
func TestTokensApplyWithoutRestart(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	var created struct {
		Token string   `json:"token"`
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal([]byte(runLocal(t, n, 0, "token", "create", "dashboards", "--role", "viewer", "--reason", "ops dashboards", "-o", "json")), &created); err != nil || !strings.HasPrefix(created.Token, "seam_") {
		t.Fatalf("token create -o json: %v, %+v", err, created)
	}
	call := func(token string, args ...string) (string, int) {
		out, errOut, code := seamtest.Run(t.Context(), append(args, "--addr", n.GRPCAddr, "--token", token)...)
		return out + errOut, code
	}
	clocktest.Eventually(t, "the new viewer token reads", func() bool { _, code := call(created.Token, "contract", "list"); return code == exit.OK })
	if out, code := call(created.Token, "gate", "contain", "shop.orders", "--reason", "x"); code != exit.Usage || !strings.Contains(out, "permission denied") {
		t.Errorf("viewer token containing a source: exit %d, %s; want permission denied", code, out)
	}

	if tf, err := auth.ReadTokensFile(filepath.Join(n.DataDir, auth.TokensFileName)); err != nil {
		t.Fatal(err)
	} else if i := slices.IndexFunc(tf.Tokens, func(e auth.TokenEntry) bool { return e.Name == "dashboards" }); i < 0 ||
		tf.Tokens[i].Reason != "ops dashboards" || tf.Tokens[i].CreatedBy == "" || tf.Tokens[i].CreatedAt == "" {
		t.Errorf("tokens file = %+v, want dashboards with who created it, when and why", tf.Tokens)
	}
	if out := runLocal(t, n, 0, "token", "list"); !strings.Contains(out, "dashboards") || !strings.Contains(out, "viewer") || strings.Contains(out, created.Token) {
		t.Errorf("token list:\n%s\nwant dashboards with its role, and never the token", out)
	}
	runLocal(t, n, exit.Usage, "token", "create", "dashboards", "--role", "viewer")
	runLocal(t, n, exit.Usage, "token", "create", "x", "--role", "wizard")
	runLocal(t, n, exit.Usage, "token", "create", "x", "--role", "owner")

	runLocal(t, n, 0, "token", "revoke", "dashboards", "--reason", "dashboards retired")
	// The file keeps who made and revoked the token and why, for the
	// services' audit lines (token_created, token_revoked).
	tf, err := auth.ReadTokensFile(filepath.Join(n.DataDir, auth.TokensFileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(tf.Revoked) != 1 || tf.Revoked[0].Name != "dashboards" || tf.Revoked[0].Reason != "dashboards retired" || tf.Revoked[0].RevokedBy == "" || tf.Revoked[0].RevokedAt == "" {
		t.Errorf("revocations in the file = %+v, want dashboards revoked with who, when and why", tf.Revoked)
	}
	clocktest.Eventually(t, "the revoked token is refused", func() bool {
		out, code := call(created.Token, "contract", "list")
		return code == exit.Usage && strings.Contains(out, "--token")
	})
	runLocal(t, n, exit.Usage, "token", "revoke", "dashboards")
}

// A token created with --expires works until then, is listed with its
// expiry, and is refused once expired, saying so.
func TestTokensExpire(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	var created struct {
		Token   string `json:"token"`
		Expires string `json:"expires"`
	}
	if err := json.Unmarshal([]byte(runLocal(t, n, 0, "token", "create", "contractor", "--role", "viewer", "--expires", "3s", "-o", "json")), &created); err != nil || created.Expires == "" {
		t.Fatalf("token create --expires 3s -o json: %v, %+v; want the expiry shown", err, created)
	}
	until, err := time.Parse(time.RFC3339, created.Expires)
	if err != nil || time.Until(until) > 4*time.Second {
		t.Fatalf("expires %q, want about 3s from now", created.Expires)
	}
	runLocal(t, n, 0, "token", "create", "month", "--role", "viewer", "--expires", "30d")
	list := runLocal(t, n, 0, "token", "list")
	if !strings.Contains(list, "EXPIRES") || !strings.Contains(list, created.Expires) || !strings.Contains(list, time.Now().UTC().AddDate(0, 0, 30).Format("2006-01-02")) {
		t.Errorf("token list:\n%s\nwant an EXPIRES column with %s and a date 30 days out", list, created.Expires)
	}
	runLocal(t, n, exit.Usage, "token", "create", "x", "--role", "viewer", "--expires", "soon")
	call := func() (string, int) {
		out, errOut, code := seamtest.Run(t.Context(), "contract", "list", "--addr", n.GRPCAddr, "--token", created.Token)
		return out + errOut, code
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, code := call()
		if code == exit.Usage && strings.Contains(out, "expired") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after it expired the token still gets exit %d: %s", code, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if list := runLocal(t, n, 0, "token", "list"); !strings.Contains(list, "(expired)") {
		t.Errorf("token list after expiry:\n%s\nwant the token marked (expired)", list)
	}
}

// runLocal runs seam on the node's data directory, as its operator does,
// and fails the test unless it exits want.
func runLocal(t *testing.T, n *seamtest.Node, want int, args ...string) string {
	t.Helper()
	out, errOut, code := seamtest.Run(t.Context(), append(args, "--data-dir", n.DataDir)...)
	if code != want {
		t.Fatalf("seam %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}
