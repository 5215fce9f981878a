package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"unknown subject is a usage error", []string{"contract", "get", "no.such"}, exit.Usage},
		{"unknown flag", []string{"contract", "list", "--bogus"}, exit.Usage},
		{"bad output format", []string{"contract", "list", "-o", "yaml"}, exit.Usage},
		{"missing file flag", []string{"contract", "check"}, exit.Usage},
		{"invalid contract file is a no", []string{"contract", "check", "-f", seamtest.WriteFile(t, "bad.yaml", "subject: [unclosed")}, exit.Failed},
		{"bad event type", []string{"events", "list", "--type", "NOPE"}, exit.Usage},
		{"version", []string{"version"}, exit.OK},
		{"gate serve without its peers", []string{"gate", "serve", "--grpc-addr", "127.0.0.1:0"}, exit.Usage},
		{"tls cert without key", []string{"up", "--grpc-addr", "127.0.0.1:0", "--tls-cert", "c.pem"}, exit.Usage},
		{"bad log level", []string{"registry", "serve", "--grpc-addr", "127.0.0.1:0", "--log-level", "loud"}, exit.Usage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := n.CLI(t, tc.args...)
			if code != tc.want {
				t.Errorf("seam %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.want, out, errOut)
			}
			if code != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("seam %s: error is not one line:\n%s", strings.Join(tc.args, " "), errOut)
			}
		})
	}

	t.Run("no server is a connection error", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := seamtest.RunTo(context.Background(), []string{"--addr", "127.0.0.1:1", "--token", "x", "--timeout", "2s", "contract", "list"}, &out, &errOut)
		if code != exit.Usage || !strings.Contains(errOut.String(), "cannot reach Seam") {
			t.Errorf("exit %d, stderr %q; want 2 and a message saying Seam cannot be reached", code, errOut.String())
		}
	})
	t.Run("no token", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := seamtest.RunTo(context.Background(), []string{"--addr", n.GRPCAddr, "--data-dir", t.TempDir(), "contract", "list"}, &out, &errOut)
		if code != exit.Usage || !strings.Contains(errOut.String(), "--token") {
			t.Errorf("exit %d, stderr %q; want 2 and a hint about --token", code, errOut.String())
		}
	})
	t.Run("environment sets flags", func(t *testing.T) {
		var out, errOut bytes.Buffer
		root := cli.NewRoot(func(k string) string {
			return map[string]string{"SEAM_ADDR": n.GRPCAddr, "SEAM_TOKEN": n.Admin, "SEAM_OUTPUT": "json"}[k]
		}, "")
		root.SetArgs([]string{"contract", "list"})
		root.SetOut(&out)
		root.SetErr(&errOut)
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("with SEAM_ADDR, SEAM_TOKEN and SEAM_OUTPUT set: %v", err)
		}
		if !strings.HasPrefix(strings.TrimSpace(out.String()), "{") {
			t.Errorf("SEAM_OUTPUT=json did not give JSON: %q", out.String())
		}
	})
}

// The commands that run without a server answer -o json too.
func TestOfflineCommandsJSON(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"version", "-o", "json"},
		{"migrate", "--data-dir", t.TempDir(), "-o", "json"},
		{"demo", "--scale", "0.002", "-o", "json"},
	} {
		var out, errOut bytes.Buffer
		if code := seamtest.RunTo(context.Background(), args, &out, &errOut); code != exit.OK {
			t.Fatalf("seam %v: exit %d (%s)", args, code, errOut.String())
		}
		m := map[string]any{}
		if err := json.Unmarshal(out.Bytes(), &m); err != nil || len(m) == 0 {
			t.Errorf("seam %v -o json: %v\n%s", args, err, out.String())
		}
		if args[0] == "demo" && (m["sent"] == nil || m["duplicates"] != float64(0)) {
			t.Errorf("seam demo -o json = %v, want the reconciliation with no duplicate", m)
		}
	}
}
