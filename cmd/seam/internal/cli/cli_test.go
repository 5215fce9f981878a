package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// Every command exits as the root help documents: 0 yes, 1 judged and
// failed, 2 usage or connection, 3 invalid contract or input; and says
// why in one line.
func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	bad := seamtest.WriteFile(t, "bad.yaml", "subject: [unclosed")
	cases := []struct {
		name string
		args []string
		// offline commands run without --addr and --token
		offline bool
		want    int
		stderr  string
	}{
		{name: "unknown subject is a usage error", args: []string{"contract", "get", "no.such"}, want: exit.Usage},
		{name: "unknown flag", args: []string{"contract", "list", "--bogus"}, want: exit.Usage},
		{name: "bad output format", args: []string{"contract", "list", "-o", "yaml"}, want: exit.Usage},
		{name: "missing file", args: []string{"contract", "check"}, want: exit.Usage},
		{name: "invalid contract file", args: []string{"contract", "check", bad}, want: exit.Invalid, stderr: "bad.yaml:1"},
		{name: "invalid contract file by -f", args: []string{"contract", "register", "-f", bad}, want: exit.Invalid},
		{name: "bad event type", args: []string{"events", "list", "--type", "NOPE"}, want: exit.Usage},
		{name: "typo in a subcommand", args: []string{"contract", "regster"}, want: exit.Usage, stderr: `did you mean "register"`},
		{name: "typo in a nested subcommand", args: []string{"idmap", "namespace", "crate"}, want: exit.Usage, stderr: `did you mean "create"`},
		{name: "typo in a group", args: []string{"quarantin", "list"}, offline: true, want: exit.Usage, stderr: `did you mean "quarantine"`},
		{name: "typo nearer one command than an earlier one", args: []string{"contract", "lst"}, offline: true, want: exit.Usage, stderr: `did you mean "list"?`},
		{name: "swapped letters", args: []string{"contract", "lsit"}, offline: true, want: exit.Usage, stderr: `did you mean "list"?`},
		{name: "typo in a flag", args: []string{"contract", "list", "--adr", "127.0.0.1:1"}, offline: true, want: exit.Usage, stderr: "unknown flag: --adr; did you mean --addr?"},
		{name: "typo in a serve flag", args: []string{"up", "--data_dir", "x"}, offline: true, want: exit.Usage, stderr: "did you mean --data-dir?"},
		{name: "long flag with one dash", args: []string{"contract", "list", "-timeout", "1s"}, offline: true, want: exit.Usage, stderr: "did you mean --timeout?"},
		{name: "unknown flag far from any", args: []string{"version", "--frobnicate"}, offline: true, want: exit.Usage, stderr: "unknown flag: --frobnicate (see seam version --help)"},
		{name: "nonsense subcommand", args: []string{"gate", "frobnicate"}, offline: true, want: exit.Usage, stderr: "its commands are"},
		{name: "stray argument", args: []string{"contract", "history", "shop.orders", "extra"}, want: exit.Usage},
		{name: "stray argument to a list", args: []string{"canonical", "list", "x"}, want: exit.Usage},
		{name: "version", args: []string{"version"}, offline: true, want: exit.OK},
		{name: "gate serve without its peers", args: []string{"gate", "serve", "--grpc-addr", "127.0.0.1:0"}, offline: true, want: exit.Usage, stderr: "--registry-addr"},
		{name: "tls cert without key", args: []string{"up", "--grpc-addr", "127.0.0.1:0", "--tls-cert", "c.pem"}, offline: true, want: exit.Usage, stderr: "--tls-key"},
		{name: "bad log level", args: []string{"registry", "serve", "--grpc-addr", "127.0.0.1:0", "--log-level", "loud"}, offline: true, want: exit.Usage},
		{name: "serve takes no client flag", args: []string{"up", "--addr", "127.0.0.1:1"}, offline: true, want: exit.Usage, stderr: "unknown flag: --addr"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut string
			var code int
			if tc.offline {
				out, errOut, code = seamtest.Run(context.Background(), tc.args...)
			} else {
				out, errOut, code = n.CLI(t, tc.args...)
			}
			if code != tc.want || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("seam %s: exit %d, stderr %q; want %d and %q\nstdout: %s", strings.Join(tc.args, " "), code, errOut, tc.want, tc.stderr, out)
			}
			if code != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("seam %s: error is not one line:\n%s", strings.Join(tc.args, " "), errOut)
			}
		})
	}

	t.Run("no server is a connection error", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := seamtest.RunTo(context.Background(), []string{"contract", "list", "--addr", "127.0.0.1:1", "--token", "x", "--timeout", "2s"}, &out, &errOut)
		if code != exit.Usage || !strings.Contains(errOut.String(), "cannot reach Seam") {
			t.Errorf("exit %d, stderr %q; want 2 and a message saying Seam cannot be reached", code, errOut.String())
		}
	})
	t.Run("no token", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := seamtest.RunTo(context.Background(), []string{"contract", "list", "--addr", n.GRPCAddr, "--data-dir", t.TempDir()}, &out, &errOut)
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
		{"migrate", "--data-dir", t.TempDir(), "--create", "-o", "json"},
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

// A client given seam up's --data-dir reaches it without --addr, on
// whatever ports it took; --addr and SEAM_ADDR still win.
func TestClientFindsTheAddressOfSeamUp(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t) // on free ports, not 127.0.0.1:7070
	if _, errOut, code := seamtest.Run(t.Context(), "contract", "list", "--data-dir", n.DataDir, "--token", n.Admin); code != exit.OK {
		t.Errorf("contract list with only --data-dir: exit %d, %s; want 0", code, errOut)
	}
	_, errOut, code := seamtest.Run(t.Context(), "contract", "list", "--data-dir", n.DataDir, "--token", n.Admin, "--addr", "127.0.0.1:1", "--timeout", "2s")
	if code != exit.Usage || !strings.Contains(errOut, "cannot reach Seam at 127.0.0.1:1 (") {
		t.Errorf("--addr beside a data dir with addresses: exit %d, %s; want 2 and the --addr given", code, errOut)
	}
	root := cli.NewRoot(func(k string) string {
		return map[string]string{"SEAM_ADDR": "127.0.0.1:1", "SEAM_TIMEOUT": "2s"}[k]
	}, "")
	var out, errBuf bytes.Buffer
	root.SetArgs([]string{"contract", "list", "--data-dir", n.DataDir, "--token", n.Admin})
	root.SetOut(&out)
	root.SetErr(&errBuf)
	if err := root.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("SEAM_ADDR beside a data dir with addresses: %v; want it to call SEAM_ADDR", err)
	}

	stale := t.TempDir()
	if err := os.WriteFile(filepath.Join(stale, client.AddressesFileName), []byte(`{"grpc": "127.0.0.1:1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = seamtest.Run(t.Context(), "contract", "list", "--data-dir", stale, "--token", "x", "--timeout", "2s")
	if code != exit.Usage || !strings.Contains(errOut, "127.0.0.1:1 (written by seam up into "+filepath.Join(stale, client.AddressesFileName)+")") {
		t.Errorf("a data dir naming a Seam that is gone: exit %d, %s; want 2 naming the file the address came from", code, errOut)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, client.AddressesFileName), []byte(`{"grpc": `), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = seamtest.Run(t.Context(), "contract", "list", "--data-dir", broken, "--token", "x")
	if code != exit.Usage || !strings.Contains(errOut, filepath.Join(broken, client.AddressesFileName)) {
		t.Errorf("a broken addresses file: exit %d, %s; want 2 naming the file", code, errOut)
	}

	n.Stop()
	if _, err := os.Stat(filepath.Join(n.DataDir, client.AddressesFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("seam up left its addresses file after a clean stop (%v)", err)
	}
}
