package authtest_test

import (
	"slices"
	"testing"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/auth/authtest"
)

// Each minted token authenticates as its principal, with its roles and
// subjects.
func TestTokens(t *testing.T) {
	t.Parallel()
	set, tokens := authtest.Tokens(t,
		auth.Principal{Name: "ada", Roles: []auth.Role{auth.RoleAdmin}},
		auth.Principal{Name: "bo", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"b.*"}})
	if len(tokens) != 2 {
		t.Fatalf("tokens = %v, want one for ada and one for bo", tokens)
	}
	p, ok := set.Authenticate(tokens["bo"])
	if !ok || p.Name != "bo" || !slices.Equal(p.Roles, []auth.Role{auth.RoleOwner}) || !slices.Equal(p.Subjects, []string{"b.*"}) {
		t.Errorf("bo's token authenticates as %+v, %v; want bo, owner of b.*", p, ok)
	}
	if p, ok := set.Authenticate(tokens["ada"]); !ok || p.Name != "ada" {
		t.Errorf("ada's token authenticates as %+v, %v; want ada", p, ok)
	}
}
