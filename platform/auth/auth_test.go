package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/auth"
)

func TestOwns(t *testing.T) {
	t.Parallel()
	owner := &auth.Principal{Name: "checkout", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"shop.orders", "pay.*"}}
	admin := &auth.Principal{Name: "root", Roles: []auth.Role{auth.RoleAdmin}}
	viewer := &auth.Principal{Name: "v", Roles: []auth.Role{auth.RoleViewer}, Subjects: []string{"shop.orders"}}
	cases := []struct {
		p       *auth.Principal
		subject string
		want    bool
	}{
		{owner, "shop.orders", true},
		{owner, "shop.ordersx", false},
		{owner, "pay.refunds", true},
		{owner, "payroll", false},
		{admin, "anything", true},
		{viewer, "shop.orders", false},
		{nil, "shop.orders", false},
	}
	for _, c := range cases {
		if got := c.p.Owns(c.subject); got != c.want {
			t.Errorf("%v owns %q = %v, want %v", c.p, c.subject, got, c.want)
		}
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	viewerTok, viewer, _ := auth.NewToken("v", []auth.Role{auth.RoleViewer}, nil)
	adminTok, admin, _ := auth.NewToken("a", []auth.Role{auth.RoleAdmin}, nil)
	tokens, err := auth.NewTokens([]auth.TokenEntry{viewer, admin})
	if err != nil {
		t.Fatal(err)
	}
	a := auth.NewAuthorizer(tokens, auth.Access{"/s.v1.S/Read": {Roles: auth.AllRoles}, "/s.v1.S/Write": {Roles: []auth.Role{auth.RoleOperator}}})
	ctxWith := func(h string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", h))
	}
	cases := []struct {
		name, method string
		ctx          context.Context
		want         codes.Code
	}{
		{"health needs no token", "/grpc.health.v1.Health/Check", context.Background(), codes.OK},
		{"no token", "/s.v1.S/Read", context.Background(), codes.Unauthenticated},
		{"not bearer", "/s.v1.S/Read", ctxWith("Basic abc"), codes.Unauthenticated},
		{"unknown token", "/s.v1.S/Read", ctxWith("Bearer seam_nope"), codes.Unauthenticated},
		{"viewer reads", "/s.v1.S/Read", ctxWith("Bearer " + viewerTok), codes.OK},
		{"viewer writes", "/s.v1.S/Write", ctxWith("Bearer " + viewerTok), codes.PermissionDenied},
		{"method not in the table", "/s.v1.S/New", ctxWith("bearer " + viewerTok), codes.PermissionDenied},
		{"admin may call anything", "/s.v1.S/New", ctxWith("Bearer " + adminTok), codes.OK},
	}
	for _, c := range cases {
		ctx, err := a.Authorize(c.ctx, c.method)
		if got := status.Code(err); got != c.want {
			t.Errorf("%s: code %v (%v), want %v", c.name, got, err, c.want)
			continue
		}
		if err == nil && !strings.HasPrefix(c.method, "/grpc.") {
			if _, ok := auth.FromContext(ctx); !ok {
				t.Errorf("%s: no principal in the context", c.name)
			}
		}
	}
}

func TestTokensFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	boot, err := auth.EnsureLocalTokens(dir)
	if err != nil || !boot.Created || !strings.HasPrefix(boot.AdminToken, auth.TokenPrefix) {
		t.Fatalf("first EnsureLocalTokens = %+v, %v", boot, err)
	}
	again, err := auth.EnsureLocalTokens(dir)
	if err != nil || again.Created || again.ServiceToken != boot.ServiceToken {
		t.Fatalf("second EnsureLocalTokens = %+v, %v; want the existing service token, nothing created", again, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, auth.TokensFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), boot.AdminToken) {
		t.Error("tokens file holds the admin token in clear; it must hold only its hash")
	}
	tokens, err := auth.LoadTokens(filepath.Join(dir, auth.TokensFileName))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tokens.Authenticate(boot.AdminToken); !ok || !p.Has(auth.RoleAdmin) {
		t.Errorf("admin token authenticates as %v, %v", p, ok)
	}

	for name, entry := range map[string]auth.TokenEntry{
		"no name":      {Roles: []auth.Role{auth.RoleAdmin}, Hash: "sha256:" + strings.Repeat("a", 64)},
		"bad hash":     {Name: "x", Roles: []auth.Role{auth.RoleAdmin}, Hash: "md5:abc"},
		"unknown role": {Name: "x", Roles: []auth.Role{"root"}, Hash: "sha256:" + strings.Repeat("a", 64)},
		"no roles":     {Name: "x", Hash: "sha256:" + strings.Repeat("a", 64)},
	} {
		if _, err := auth.NewTokens([]auth.TokenEntry{entry}); err == nil {
			t.Errorf("%s: accepted, want an error", name)
		}
	}
}

// TestTeams: a token acts for the team it names, or for a team of its own
// name.
func TestTeams(t *testing.T) {
	t.Parallel()
	mlTok, ml, _ := auth.NewToken("ml-ci", []auth.Role{auth.RoleOwner}, nil)
	ml.Team = "team-ml"
	biTok, bi, _ := auth.NewToken("team-bi", []auth.Role{auth.RoleOwner}, nil)
	tokens, err := auth.NewTokens([]auth.TokenEntry{ml, bi})
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]string{mlTok: "team-ml", biTok: "team-bi"} {
		if p, ok := tokens.Authenticate(tok); !ok || p.Team != want {
			t.Errorf("token of %v acts for team %q, want %q", p, p.Team, want)
		}
	}
}

// TestLocalServiceTokenGetsTheServiceRole: a data directory an older Seam
// bootstrapped (its service token an operator and pipeline) is upgraded, so
// its services may still report registry events; a new one starts so.
func TestLocalServiceTokenGetsTheServiceRole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	svc, entry, err := auth.NewToken("seam-services", []auth.Role{auth.RoleService}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.WriteTokensFile(filepath.Join(dir, auth.TokensFileName), auth.TokensFile{Tokens: []auth.TokenEntry{entry}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, auth.ServiceTokenFileName), []byte(svc+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.EnsureLocalTokens(dir); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(filepath.Join(dir, auth.TokensFileName))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tokens.Authenticate(svc); !ok || !p.Has(auth.RoleService) {
		t.Errorf("the upgraded service token authenticates as %+v, want the service role", p)
	}
	fresh := t.TempDir()
	boot, err := auth.EnsureLocalTokens(fresh)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err = auth.LoadTokens(filepath.Join(fresh, auth.TokensFileName))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tokens.Authenticate(boot.ServiceToken); !ok || !p.Has(auth.RoleService) || p.Has(auth.RolePipeline) || p.Has(auth.RoleOperator) {
		t.Errorf("a new service token authenticates as %+v, want the service role alone", p)
	}
}

// The audit log names who was refused what: an unknown token and a role
// denial as warnings, each call a token made at debug level, never the
// token itself.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	viewerTok, viewer, _ := auth.NewToken("dashboards", []auth.Role{auth.RoleViewer}, nil)
	tokens, err := auth.NewTokens([]auth.TokenEntry{viewer})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := auth.NewAuthorizer(tokens, auth.Access{"/s.v1.S/Read": {Roles: auth.AllRoles}, "/s.v1.S/Write": {Roles: []auth.Role{auth.RoleOperator}}}).WithAudit(log)
	ctxWith := func(h string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", h))
	}
	_, _ = a.Authorize(ctxWith("Bearer seam_stolen"), "/s.v1.S/Read")
	_, _ = a.Authorize(ctxWith("Bearer "+viewerTok), "/s.v1.S/Write")
	_, _ = a.Authorize(ctxWith("Bearer "+viewerTok), "/s.v1.S/Read")
	// REST authenticates from the headers, naming the route and the peer.
	_, _ = a.Authenticate("Bearer seam_stolen", "GET /v1/subjects", "192.0.2.7:51000")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []struct{ level, event, principal, method string }{
		{"WARN", "token_refused", "", "/s.v1.S/Read"},
		{"WARN", "role_denied", "dashboards", "/s.v1.S/Write"},
		{"DEBUG", "token_used", "dashboards", "/s.v1.S/Read"},
		{"WARN", "token_refused", "", "GET /v1/subjects"},
	}
	if len(lines) != len(want) {
		t.Fatalf("audit log:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i, w := range want {
		l := lines[i]
		if l["level"] != w.level || l["event"] != w.event || l["method"] != w.method || l["audit"] != true || (w.principal != "" && l["principal"] != w.principal) {
			t.Errorf("audit line %d = %v, want level %s event %s principal %q method %s audit=true", i, l, w.level, w.event, w.principal, w.method)
		}
	}
	if len(lines) == len(want) && lines[3]["peer"] != "192.0.2.7:51000" {
		t.Errorf("the REST token_refused line = %v, want the peer 192.0.2.7:51000", lines[3])
	}
	if strings.Contains(buf.String(), viewerTok) || strings.Contains(buf.String(), "seam_stolen") {
		t.Errorf("the audit log contains a token:\n%s", buf.String())
	}
}
