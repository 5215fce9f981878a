package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/auth/authtest"
	"github.com/seamdata/seam/platform/telemetry"
)

// startHTTP serves a Server with one fake service on loopback and returns
// its REST base URL.
func startHTTP(t *testing.T, tokens *auth.Tokens, access auth.Access, routes ...Route) string {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "whoami-test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Tokens: tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Telemetry: tel, ShutdownTimeout: 2 * time.Second, Routes: routes},
		Service{Name: "seam.test.v1.TestService", Register: func(grpc.ServiceRegistrar) {}, Access: access})
	if err != nil {
		t.Fatal(err)
	}
	return serveLoopback(t, srv)
}

func testTokens(t *testing.T) (*auth.Tokens, map[string]string) {
	t.Helper()
	return authtest.Tokens(t,
		auth.Principal{Name: "ada", Roles: []auth.Role{auth.RoleAdmin}},
		auth.Principal{Name: "otto", Roles: []auth.Role{auth.RoleOperator}},
		auth.Principal{Name: "vera", Roles: []auth.Role{auth.RoleViewer}})
}

func TestWhoAmI(t *testing.T) {
	t.Parallel()
	tokens, secrets := testTokens(t)
	base := startHTTP(t, tokens, auth.Access{
		"/seam.test.v1.TestService/Read":  {Roles: auth.AllRoles},
		"/seam.test.v1.TestService/Fix":   {Roles: []auth.Role{auth.RoleAdmin, auth.RoleOperator}},
		"/seam.test.v1.TestService/Admin": {},
	})
	for _, tc := range []struct {
		name        string
		auth        string
		wantStatus  int
		wantName    string
		wantMethods []string
	}{
		{"admin may call everything", "Bearer " + secrets["ada"], 200, "ada",
			[]string{"seam.test.v1.TestService/Admin", "seam.test.v1.TestService/Fix", "seam.test.v1.TestService/Read"}},
		{"operator", "Bearer " + secrets["otto"], 200, "otto", []string{"seam.test.v1.TestService/Fix", "seam.test.v1.TestService/Read"}},
		{"viewer reads only", "bearer " + secrets["vera"], 200, "vera", []string{"seam.test.v1.TestService/Read"}},
		{"no header", "", 401, "", nil},
		{"unknown token", "Bearer seam_nottoken", 401, "", nil},
		{"basic scheme", "Basic " + secrets["ada"], 401, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodGet, base+"/v1/whoami", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if tc.wantStatus != 200 {
				if c := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Bearer ") {
					t.Errorf("WWW-Authenticate %q, want a Bearer challenge", c)
				}
				var st struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(body, &st); err != nil || st.Code != 16 || st.Message == "" {
					t.Fatalf("error body %s: want the gateway's shape with code 16 (Unauthenticated)", body)
				}
				return
			}
			var who WhoAmI
			if err := json.Unmarshal(body, &who); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			if who.Name != tc.wantName {
				t.Errorf("name %q, want %q", who.Name, tc.wantName)
			}
			if !slices.Equal(who.Methods, tc.wantMethods) {
				t.Errorf("methods %v, want %v", who.Methods, tc.wantMethods)
			}
			if !slices.Equal(who.Services, []string{"seam.test.v1.TestService"}) {
				t.Errorf("services %v, want the one service served", who.Services)
			}
		})
	}
}

// TestConsoleMounted checks the runtime serves the console at /ui/ and
// sends / there, beside the REST routes.
func TestConsoleMounted(t *testing.T) {
	t.Parallel()
	tokens, secrets := testTokens(t)
	base := startHTTP(t, tokens, auth.Access{})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / = %d to %q, want 302 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = client.Get(base + "/ui/sources/shop.orders")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `<div id="app">`) {
		t.Errorf("GET /ui/sources/shop.orders = %d %.80q, want the console's page", resp.StatusCode, body)
	}
	// The console does not shadow the API: an unknown REST route is still
	// the gateway's 404 for a caller with a token, and a 401 for one
	// without (REST authenticates before it routes), never the page.
	for _, tc := range []struct {
		token string
		want  int
	}{{secrets["vera"], http.StatusNotFound}, {"", http.StatusUnauthorized}} {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/nothing-here", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || strings.Contains(string(body), "<html") {
			t.Errorf("GET /v1/nothing-here (token %t) = %d %.80q, want %d from the gateway", tc.token != "", resp.StatusCode, body, tc.want)
		}
	}
}
