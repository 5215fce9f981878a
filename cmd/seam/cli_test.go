package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the seam command in-process against n as admin (or with the
// extra flags given) and returns stdout, stderr and the exit code.
func (n *node) cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--addr", n.grpcAddr, "--token", n.admin}, args...)
	code := run(context.Background(), full, &out, &errOut)
	return out.String(), errOut.String(), code
}

// mustCLI runs a command that must exit with want.
func (n *node) mustCLI(t *testing.T, want int, args ...string) string {
	t.Helper()
	out, errOut, code := n.cli(t, args...)
	if code != want {
		t.Fatalf("seam %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out + errOut
}

// mustJSON runs a command with -o json and decodes its output.
func (n *node) mustJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := n.mustCLI(t, 0, append(args, "-o", "json")...)
	m := map[string]any{}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("seam %s -o json: output is not one JSON object: %v\n%s", strings.Join(args, " "), err, out)
	}
	return m
}

func testdata(name string) string {
	return filepath.Join("..", "..", "core", "examples", name)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The source document's case through the CLI: shop.orders v2 switches
// customer_id from INT64 to UUID. Without notice it is refused and names
// the breaking rules and the consumers joining on customer_id; with enough
// notice and a migration it is SCHEDULED.
func TestCLIContractLifecycle(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	v1, v2 := testdata("shop_orders_v1.yaml"), testdata("shop_orders_v2.yaml")

	n.mustCLI(t, 0, "canonical", "register", "-f", testdata("commerce_order.yaml"))
	if m := n.mustJSON(t, "canonical", "get", "commerce.order"); m["version"].(map[string]any)["name"] != "commerce.order" {
		t.Errorf("canonical get -o json = %v", m)
	}
	n.mustJSON(t, "canonical", "list")
	n.mustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")

	if out := n.mustCLI(t, 0, "contract", "check", "-f", v1); !strings.Contains(out, "shop.orders") {
		t.Errorf("check of a new subject says nothing of it:\n%s", out)
	}
	n.mustCLI(t, 0, "contract", "register", "-f", v1)

	ltv := writeFile(t, "ltv.yaml", `
name: features.customer_ltv
owner: team-ml
inputs:
  - {subject: shop.orders, fields: [customer_id, amount], usage: JOIN_KEY}
produces: [features.customer_ltv]
`)
	dash := writeFile(t, "dash.yaml", `
name: dash.daily_revenue
owner: team-bi
inputs:
  - {subject: shop.orders, fields: [amount, currency], usage: FEATURE}
  - {dataset: features.customer_ltv, usage: PASSTHROUGH}
`)
	n.mustCLI(t, 0, "consumer", "register", "-f", ltv)
	n.mustCLI(t, 0, "consumer", "register", "-f", dash)
	if m := n.mustJSON(t, "consumer", "list", "--subject", "shop.orders"); len(m["consumers"].([]any)) != 2 {
		t.Errorf("consumer list --subject shop.orders = %v, want 2 consumers", m)
	}

	// Breaking without notice: refused, exit 1, names the rules and the
	// consumer that joins on customer_id.
	out := n.mustCLI(t, 1, "contract", "check", "-f", v2)
	for _, want := range []string{"FIELD_TYPE_CHANGED", "IDENTIFIER_FORMAT_CHANGED", "features.customer_ltv", "REFUSED"} {
		if !strings.Contains(out, want) {
			t.Errorf("contract check of v2 without notice does not mention %s:\n%s", want, out)
		}
	}
	check := map[string]any{}
	jsonOut, _, code := n.cli(t, "contract", "check", "-f", v2, "-o", "json")
	if code != 1 || json.Unmarshal([]byte(jsonOut), &check) != nil || check["verdict"] != "VERDICT_REFUSED" {
		t.Errorf("contract check -o json: exit %d, verdict %v, want 1 and VERDICT_REFUSED\n%s", code, check["verdict"], jsonOut)
	}
	if out := n.mustCLI(t, 1, "contract", "register", "-f", v2); !strings.Contains(out, "notice") {
		t.Errorf("register of v2 without notice: error does not explain the notice:\n%s", out)
	}

	// With 15 days' notice (the subject owes 14) it is accepted as SCHEDULED.
	n.mustCLI(t, 0, "contract", "check", "-f", v2, "--effective", "+15d")
	reg := n.mustJSON(t, "contract", "register", "-f", v2, "--effective", "+15d")
	if st := reg["version"].(map[string]any)["status"]; st != "VERSION_STATUS_SCHEDULED" {
		t.Errorf("v2 with notice registered as %v, want VERSION_STATUS_SCHEDULED", st)
	}

	if m := n.mustJSON(t, "contract", "get", "shop.orders"); m["version"].(map[string]any)["version"].(float64) != 1 {
		t.Errorf("active version while v2 is scheduled = %v, want 1", m["version"].(map[string]any)["version"])
	}
	if out := n.mustCLI(t, 0, "contract", "list", "shop.orders"); !strings.Contains(out, "SCHEDULED") || !strings.Contains(out, "ACTIVE") {
		t.Errorf("contract list shows no ACTIVE v1 and SCHEDULED v2:\n%s", out)
	}
	n.mustJSON(t, "contract", "list")
	n.mustJSON(t, "contract", "history", "shop.orders")
	diff := n.mustJSON(t, "contract", "diff", "shop.orders", "1", "2")
	if diff["breaking"] != true {
		t.Errorf("contract diff 1 2: breaking = %v, want true", diff["breaking"])
	}

	radius := n.mustJSON(t, "blast-radius", "shop.orders", "--field", "customer_id")
	names := map[string]float64{}
	for _, c := range radius["consumers"].([]any) {
		c := c.(map[string]any)
		names[c["consumer"].(string)] = c["depth"].(float64)
	}
	if names["features.customer_ltv"] != 1 || names["dash.daily_revenue"] < 1 {
		t.Errorf("blast radius of customer_id = %v, want features.customer_ltv at depth 1 and dash.daily_revenue", names)
	}

	events := n.mustJSON(t, "events", "list", "--subject", "shop.orders")
	var types []string
	for _, e := range events["events"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	if !strings.Contains(strings.Join(types, " "), "EVENT_TYPE_CHANGE_ANNOUNCED") {
		t.Errorf("events of shop.orders = %v, want a CHANGE_ANNOUNCED", types)
	}
}

func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"unknown subject is a usage error", []string{"contract", "get", "no.such"}, exitUsage},
		{"unknown flag", []string{"contract", "list", "--bogus"}, exitUsage},
		{"bad output format", []string{"contract", "list", "-o", "yaml"}, exitUsage},
		{"missing file flag", []string{"contract", "check"}, exitUsage},
		{"invalid contract file is a no", []string{"contract", "check", "-f", writeFile(t, "bad.yaml", "subject: [unclosed")}, exitNo},
		{"bad event type", []string{"events", "list", "--type", "NOPE"}, exitUsage},
		{"version", []string{"version"}, exitOK},
		{"gate serve without its peers", []string{"gate", "serve", "--grpc-addr", "127.0.0.1:0"}, exitUsage},
		{"tls cert without key", []string{"up", "--grpc-addr", "127.0.0.1:0", "--tls-cert", "c.pem"}, exitUsage},
		{"bad log level", []string{"registry", "serve", "--grpc-addr", "127.0.0.1:0", "--log-level", "loud"}, exitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := n.cli(t, tc.args...)
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
		code := run(context.Background(), []string{"--addr", "127.0.0.1:1", "--token", "x", "--timeout", "2s", "contract", "list"}, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "cannot reach Seam") {
			t.Errorf("exit %d, stderr %q; want 2 and a message saying Seam cannot be reached", code, errOut.String())
		}
	})
	t.Run("no token", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"--addr", n.grpcAddr, "--data-dir", t.TempDir(), "contract", "list"}, &out, &errOut)
		if code != exitUsage || !strings.Contains(errOut.String(), "--token") {
			t.Errorf("exit %d, stderr %q; want 2 and a hint about --token", code, errOut.String())
		}
	})
	t.Run("environment sets flags", func(t *testing.T) {
		var out, errOut bytes.Buffer
		root := newRootCmd(func(k string) string {
			return map[string]string{"SEAM_ADDR": n.grpcAddr, "SEAM_TOKEN": n.admin, "SEAM_OUTPUT": "json"}[k]
		})
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

// seam adapter preview shows what a registered or a proposed mapping makes
// of sample records, and says no (exit 1) when a sample fails.
func TestCLIAdapterPreview(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	n.mustCLI(t, 0, "canonical", "register", "-f", testdata("commerce_order.yaml"))
	n.mustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")
	n.mustCLI(t, 0, "contract", "register", "-f", testdata("shop_orders_v1.yaml"))
	samples := writeFile(t, "samples.ndjson", orderLines(2)[0]+"\n"+`{"order_id":"ORD-0000000009","customer_id":5,"amount":"12x","currency":"EUR","status":"paid","created_at":"2026-03-01T10:00:00Z","items":1}`+"\n")

	out := n.mustCLI(t, exitNo, "adapter", "preview", "--subject", "shop.orders", samples)
	for _, want := range []string{"item_count", "items", "channel", "record 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview output lacks %q:\n%s", want, out)
		}
	}
	good := writeFile(t, "good.ndjson", orderLines(1)[0]+"\n")
	resp := n.mustJSON(t, "adapter", "preview", "-f", testdata("shop_orders_v1.yaml"), good)
	fields := resp["records"].([]any)[0].(map[string]any)["fields"].([]any)
	if len(fields) != 12 {
		t.Errorf("proposed preview shows %d fields, want the 12 of commerce.order", len(fields))
	}
	n.mustCLI(t, exitUsage, "adapter", "preview", good)
}

// seam migrate brings every store up to date, and again changes nothing.
func TestMigrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for range 2 {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"migrate", "--data-dir", dir}, &out, &errOut); code != exitOK {
			t.Fatalf("migrate: exit %d (%s)", code, errOut.String())
		}
		if got := strings.Count(out.String(), "schema up to date"); got != 3 {
			t.Errorf("migrate output %q, want three stores up to date", out.String())
		}
	}
	for _, f := range []string{"registry.db", "idmap.db", "gate.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("migrate left no %s: %v", f, err)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"migrate", "--store", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}, &out, &errOut); code != exitUsage {
		t.Errorf("migrate against an unreachable store: exit %d, want 2 (%s)", code, errOut.String())
	}
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
		if code := run(context.Background(), args, &out, &errOut); code != exitOK {
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
