package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/server/servertest"
)

// A route of the process runs only for a caller whose token the server
// knows, gets the in-process connection, takes precedence over the
// gateway's /v1/ and reads a body bounded by MaxMessageBytes.
func TestRoutes(t *testing.T) {
	t.Parallel()
	tokens, secrets := testTokens(t)
	echo := Route{Pattern: "POST /v1/things/{thing}/things:count", New: func(conn grpc.ClientConnInterface) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
				return
			}
			fmt.Fprintf(w, "%s %d %v", r.PathValue("thing"), n, conn != nil)
		})
	}}
	base := startHTTP(t, tokens, auth.Access{}, echo)
	post := func(token, body string) (int, string) {
		t.Helper()
		resp := servertest.Send(t, http.MethodPost, base+"/v1/things/a.b/things:count", token, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("", "x"); code != http.StatusUnauthorized || !strings.Contains(body, "bearer token") {
		t.Errorf("without a token: %d %s, want 401", code, body)
	}
	if code, body := post("seam_unknown", "x"); code != http.StatusUnauthorized {
		t.Errorf("with an unknown token: %d %s, want 401", code, body)
	}
	if code, body := post(secrets["vera"], "hello"); code != http.StatusOK || body != "a.b 5 true" {
		t.Errorf("with a viewer's token: %d %q, want 200 \"a.b 5 true\"", code, body)
	}
	if code, body := post(secrets["vera"], strings.Repeat("x", DefaultMaxMessageBytes+1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the message bound: %d %.80s, want it cut (413)", code, body)
	}
}
