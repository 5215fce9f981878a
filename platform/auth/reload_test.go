package auth_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/auth"
)

// A token set loaded from a file follows the file: a token added is
// accepted and a token removed refused without a restart, and a file that
// no longer parses leaves the last good set in force.
func TestTokensFollowTheirFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), auth.TokensFileName)
	old, oldEntry, err := auth.NewToken("old", []auth.Role{auth.RoleViewer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.WriteTokensFile(path, auth.TokensFile{Tokens: []auth.TokenEntry{oldEntry}}); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Authenticate(old); !ok {
		t.Fatal("the token in the file is refused")
	}

	fresh, freshEntry, err := auth.NewToken("fresh", []auth.Role{auth.RolePipeline}, []string{"pay.*"})
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.WriteTokensFile(path, auth.TokensFile{Tokens: []auth.TokenEntry{freshEntry}}); err != nil {
		t.Fatal(err)
	}
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
