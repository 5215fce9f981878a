// Package seamtest runs Seam inside a test: an all-in-one node on free
// ports with admin and viewer tokens, the seam command run in-process
// against it, and the small fixtures the command's tests share (the
// reference contracts of core/examples as files, shop.orders records, and
// the models, contracts and consumers of the tests' own feeds in
// testdata).
package seamtest

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record/recordtest"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/auth/authtest"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/server/servertest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// Node is an all-in-one Seam running in the test process.
type Node struct {
	GRPCAddr, HTTPAddr string
	Admin, Viewer      string
	DataDir            string
	Spans              *tracetest.SpanRecorder
	Notes              *bytes.Buffer
	// Stop shuts the node down (once); the test's cleanup calls it too.
	Stop func()
	cfg  node.Config
}

// StartNode runs `seam up` in-process on free ports with an admin and a
// viewer token, and stops it when the test ends.
func StartNode(t *testing.T) *Node {
	t.Helper()
	return StartNodeWith(t, nil)
}

// StartNodeWith is StartNode with settings of `seam up` changed by
// configure (nil changes none), such as --openlineage-url.
func StartNodeWith(t *testing.T, configure func(*node.Config)) *Node {
	t.Helper()
	dir := t.TempDir()
	admin, adminEntry := authtest.Token(t, auth.Principal{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}})
	viewer, viewerEntry := authtest.Token(t, auth.Principal{Name: "viewer", Roles: []auth.Role{auth.RoleViewer}})
	svc, svcEntry := authtest.Token(t, auth.Principal{Name: "seam-services", Roles: []auth.Role{auth.RoleService}})
	if err := auth.WriteTokensFile(filepath.Join(dir, auth.TokensFileName), auth.TokensFile{Tokens: []auth.TokenEntry{adminEntry, viewerEntry, svcEntry}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, auth.ServiceTokenFileName), []byte(svc), 0o600); err != nil {
		t.Fatal(err)
	}

	n := &Node{Admin: admin, Viewer: viewer, DataDir: dir, Spans: tracetest.NewSpanRecorder(), Notes: &bytes.Buffer{}}
	cfg := node.Config{
		Services: node.ServiceNames, Bootstrap: true, DataDir: dir,
		GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		LogFormat: "text", LogLevel: "warn", ShutdownTimeout: 5 * time.Second,
	}
	if configure != nil {
		configure(&cfg)
	}
	n.cfg = cfg
	n.run(t)
	return n
}

// Restart stops the node and starts it again on the same data directory
// and store, as after a crash or an upgrade: what it answers afterwards
// comes from the store, not from memory. Its addresses change.
func (n *Node) Restart(t *testing.T) {
	t.Helper()
	n.Stop()
	n.run(t)
}

// run starts `seam up` with n's configuration and sets Stop.
func (n *Node) run(t *testing.T) {
	t.Helper()
	cfg := n.cfg
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, cfg, node.Hooks{
			SpanProcessors: []sdktrace.SpanProcessor{n.Spans},
			Ready: func(g, h string) {
				n.GRPCAddr, n.HTTPAddr = g, h
				close(ready)
			},
			Notes: n.Notes,
			Log:   io.Discard,
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("seam up stopped before serving: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("seam up did not start within 30s")
	}
	var once sync.Once
	n.Stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("seam up returned %v on shutdown, want nil", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("seam up did not stop within 30s of cancel")
			}
		})
	}
	t.Cleanup(n.Stop)
}

// Conn dials the node with token ("" for none).
func (n *Node) Conn(t *testing.T, token string) *grpc.ClientConn {
	t.Helper()
	c, err := dial.Conn(n.GRPCAddr, dial.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// REST sends one REST request and returns the status and decoded body (a
// body that is not a JSON object is under "text").
func (n *Node) REST(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	resp := n.HTTP(t, method, path, token, body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v\n%s", method, path, err, raw)
		}
	} else {
		out["text"] = string(raw)
	}
	return resp.StatusCode, out
}

// HTTP sends one request to the node's HTTP port, with token as a bearer
// token when given, and returns the response; the caller closes its body.
func (n *Node) HTTP(t *testing.T, method, path, token, body string) *http.Response {
	t.Helper()
	return servertest.Send(t, method, "http://"+n.HTTPAddr+path, token, body)
}

// Run runs the seam command in-process with args, no environment and
// empty standard input, and returns stdout, stderr and the exit code.
func Run(ctx context.Context, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := cli.Run(ctx, args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), code
}

// CLI runs the seam command against n as admin (flags given later win)
// and returns stdout, stderr and the exit code.
func (n *Node) CLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return Run(context.Background(), append([]string{"--addr", n.GRPCAddr, "--token", n.Admin}, args...)...)
}

// MustCLI runs a command that must exit with want, and returns its
// stdout and stderr together.
func (n *Node) MustCLI(t *testing.T, want int, args ...string) string {
	t.Helper()
	out, errOut, code := n.CLI(t, args...)
	if code != want {
		t.Fatalf("seam %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out + errOut
}

// MustJSON runs a command with -o json that must exit 0 and decodes its
// output, which must be one JSON object.
func (n *Node) MustJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := n.MustCLI(t, 0, append(args, "-o", "json")...)
	m := map[string]any{}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("seam %s -o json: output is not one JSON object: %v\n%s", strings.Join(args, " "), err, out)
	}
	return m
}

// Seal seals a partition as the admin and returns its sealed state.
func (n *Node) Seal(t *testing.T, subject, partition string) *gatev1.PartitionState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := gatev1.NewGateServiceClient(n.Conn(t, n.Admin)).SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: subject, Partition: partition})
	if err != nil {
		t.Fatalf("seal %s/%s: %v", subject, partition, err)
	}
	return resp.GetPartition()
}

// StartOrders is StartNode with shop.orders set up (SetupOrders): the
// node most command tests start from.
func StartOrders(t *testing.T) *Node {
	t.Helper()
	n := StartNode(t)
	n.SetupOrders(t)
	return n
}

// SetupOrders registers commerce.order, shop.orders v1 and the customer
// namespace through the CLI.
func (n *Node) SetupOrders(t *testing.T) {
	t.Helper()
	n.MustCLI(t, 0, "canonical", "register", "-f", ExampleFile(t, "commerce_order.yaml"))
	n.MustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")
	n.MustCLI(t, 0, "contract", "register", "-f", ExampleFile(t, "shop_orders_v1.yaml"))
}

// ExampleFile writes one of core/examples' reference files
// (shop_orders_v1.yaml, shop_orders_v2.yaml, commerce_order.yaml,
// pay_settlements_v1.yaml, payments_settlement.yaml) into a temporary
// directory and returns its path, for commands that read files.
func ExampleFile(t testing.TB, name string) string {
	t.Helper()
	data, ok := map[string][]byte{
		"shop_orders_v1.yaml":      examples.ShopOrdersV1YAML,
		"shop_orders_v2.yaml":      examples.ShopOrdersV2YAML,
		"commerce_order.yaml":      examples.CommerceOrderYAML,
		"pay_settlements_v1.yaml":  examples.PaySettlementsV1YAML,
		"payments_settlement.yaml": examples.PaymentsSettlementYAML,
	}[name]
	if !ok {
		t.Fatalf("core/examples has no %s", name)
	}
	return WriteFile(t, name, string(data))
}

// fixtures are the canonical models, contracts and consumers of the feeds
// the command's tests make up (fleet.shipments, bank.ledger,
// bank.transactions; the payouts consumer of core/examples'
// pay.settlements), each described in its file.
//
//go:embed testdata/*.yaml
var fixtures embed.FS

// Fixture returns the text of testdata/name, for a test that derives
// another version from it.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	data, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatalf("seamtest has no fixture %s: %v", name, err)
	}
	return string(data)
}

// FixtureFile writes testdata/name into a temporary directory and returns
// its path, for commands that read files.
func FixtureFile(t testing.TB, name string) string {
	t.Helper()
	return WriteFile(t, name, Fixture(t, name))
}

// WriteFile writes content to a new file name in a temporary directory.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteLines writes lines, each ended by a newline (NDJSON records, say),
// to a new file name in a temporary directory.
func WriteLines(t testing.TB, name string, lines []string) string {
	t.Helper()
	return WriteFile(t, name, strings.Join(lines, "\n")+"\n")
}

// OrderLines returns n valid shop.orders v1 records as NDJSON lines.
func OrderLines(n int) []string {
	lines := make([]string, n)
	for i := range n {
		lines[i] = string(recordtest.OrderJSON(nil, i))
	}
	return lines
}

// NDJSON decodes text as JSON objects, one a line, skipping blank lines:
// what a -o json stream, an --out file or a streamed REST answer holds.
// A line that is not a JSON object fails the test, naming what it came
// from.
func NDJSON(t testing.TB, what, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: line %d is not a JSON object: %v\n%s", what, i+1, err, l)
		}
		out = append(out, m)
	}
	return out
}

// JSONInt reads an integer from decoded JSON: a number, or a string as
// protojson writes 64-bit integers (absent, it is protojson's omitted 0).
// A string that is not an integer reads as -1, which no count equals.
func JSONInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	return 0
}

// RunTo runs the seam command in-process with args, writing to out and
// errOut, and returns the exit code.
func RunTo(ctx context.Context, args []string, out, errOut io.Writer) int {
	return cli.Run(ctx, args, cli.Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut})
}
