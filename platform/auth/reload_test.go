package auth_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
)

// newToken makes a token and its file entry.
func newToken(t *testing.T, name string, roles []auth.Role, subjects []string) (string, auth.TokenEntry) {
	t.Helper()
	tok, entry, err := auth.NewToken(name, roles, subjects)
	if err != nil {
		t.Fatal(err)
	}
	return tok, entry
}

// writeTokens writes f as the tokens file at path.
func writeTokens(t *testing.T, path string, f auth.TokensFile) {
	t.Helper()
	if err := auth.WriteTokensFile(path, f); err != nil {
		t.Fatal(err)
	}
}

// A token set loaded from a file follows the file: a token added is
// accepted and a token removed refused without a restart, and a file that
// no longer parses leaves the last good set in force.
func TestTokensFollowTheirFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), auth.TokensFileName)
	old, oldEntry := newToken(t, "old", []auth.Role{auth.RoleViewer}, nil)
	writeTokens(t, path, auth.TokensFile{Tokens: []auth.TokenEntry{oldEntry}})
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Authenticate(old); !ok {
		t.Fatal("the token in the file is refused")
	}

	fresh, freshEntry := newToken(t, "fresh", []auth.Role{auth.RolePipeline}, []string{"pay.*"})
	writeTokens(t, path, auth.TokensFile{Tokens: []auth.TokenEntry{freshEntry}})
	deadline := time.Now().Add(10 * auth.ReloadInterval)
	for {
		p, added := tokens.Authenticate(fresh)
		_, kept := tokens.Authenticate(old)
		if added && !kept {
			if p.Name != "fresh" || len(p.Subjects) != 1 {
				t.Errorf("principal of the new token = %+v, want fresh with subjects [pay.*]", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after rewriting the file: new token accepted %v, removed token still accepted %v", added, kept)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * auth.ReloadInterval)
	if _, ok := tokens.Authenticate(fresh); !ok {
		t.Error("a broken tokens file revoked every token; want the last good set kept")
	}
	if tokens.ReloadError() == nil {
		t.Error("ReloadError is nil after the file broke")
	}
}

// A token added to or removed from the file is an audit line of the
// services reading it, with who did it and why as the file records them.
func TestTokenChangesAreAudited(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), auth.TokensFileName)
	admin, adminEntry := newToken(t, "admin", []auth.Role{auth.RoleAdmin}, nil)
	_, loaderEntry := newToken(t, "loader", []auth.Role{auth.RolePipeline}, nil)
	writeTokens(t, path, auth.TokensFile{Tokens: []auth.TokenEntry{adminEntry, loaderEntry}})
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf telemetrytest.LogBuffer
	auth.NewAuthorizer(tokens, auth.Access{}).WithAudit(slog.New(slog.NewJSONHandler(&buf, nil)))

	_, dashEntry := newToken(t, "dashboards", []auth.Role{auth.RoleViewer}, nil)
	dashEntry.CreatedBy, dashEntry.Reason = "alice", "the ops dashboards"
	writeTokens(t, path, auth.TokensFile{Tokens: []auth.TokenEntry{adminEntry, dashEntry},
		Revoked: []auth.RevokedToken{{Name: "loader", RevokedBy: "bob", Reason: "the loader moved"}}})
	want := []map[string]any{
		{"msg": "token created", "audit": true, "event": "token_created", "name": "dashboards", "by": "alice", "reason": "the ops dashboards"},
		{"msg": "token revoked", "audit": true, "event": "token_revoked", "name": "loader", "by": "bob", "reason": "the loader moved"},
	}
	deadline := time.Now().Add(10 * auth.ReloadInterval)
	for {
		tokens.Authenticate(admin) // a call makes the set look at its file
		lines := buf.Lines(t)
		found := 0
		for _, w := range want {
			for _, l := range lines {
				match := true
				for k, v := range w {
					if l[k] != v {
						match = false
					}
				}
				if match {
					found++
					break
				}
			}
		}
		if found == len(want) && len(lines) == len(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit lines after the file changed:\n%v\nwant exactly %v", lines, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
