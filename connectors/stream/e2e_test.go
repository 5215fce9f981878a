package stream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// The end-to-end tests run the real `seam` binary: `seam up` for the
// services and `seam stream …` as the connector, a child process the test
// kills with SIGKILL again and again.

var (
	buildOnce sync.Once
	seamBin   string
	buildErr  error
)

func seamBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "seam-stream-e2e")
		if err != nil {
			buildErr = err
			return
		}
		seamBin = filepath.Join(dir, "seam")
		out, err := exec.Command("go", "build", "-o", seamBin, "github.com/seamdata/seam/cmd/seam").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build seam: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return seamBin
}

// seamNode is a `seam up` child process.
type seamNode struct {
	bin, addr, dataDir, token string
}

func startSeam(t testing.TB) *seamNode {
	t.Helper()
	n := &seamNode{bin: seamBinary(t), dataDir: t.TempDir()}
	cmd := exec.Command(n.bin, "up", "--data-dir", n.dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "", "--log-format", "json", "--log-level", "info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start seam up: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				GRPC string `json:"grpc"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "seam serving" {
				ready <- line.GRPC
			}
		}
	}()
	select {
	case n.addr = <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("seam up did not start within 60s")
	}
	tok, err := os.ReadFile(filepath.Join(n.dataDir, "admin.token"))
	if err != nil {
		t.Fatalf("read the admin token: %v", err)
	}
	n.token = strings.TrimSpace(string(tok))
	return n
}

// run runs a seam client command against the node.
func (n *seamNode) run(t testing.TB, args ...string) string {
	t.Helper()
	args = append(args, "--addr", n.addr, "--data-dir", n.dataDir)
	out, err := exec.Command(n.bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("seam %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (n *seamNode) gate(t *testing.T) (gatev1.GateServiceClient, context.Context) {
	t.Helper()
	conn, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return gatev1.NewGateServiceClient(conn), metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+n.token)
}

// received is how many records the gate has taken for subject, over
// every partition: each record once, however often it was redelivered.
func (n *seamNode) received(t *testing.T, subject string) int64 {
	t.Helper()
	gc, ctx := n.gate(t)
	resp, err := gc.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: subject})
	if err != nil {
		t.Fatalf("GetMonitor: %v", err)
	}
	total := int64(0)
	for _, p := range resp.GetPartitions() {
		total += p.GetReceived()
	}
	return total
}

// connectorProc is the connector child process, restarted after each kill.
type connectorProc struct {
	t    *testing.T
	args []string
	log  *os.File
	mu   sync.Mutex
	cmd  *exec.Cmd
	// exited is closed when cmd has been waited for.
	exited  chan struct{}
	stopped bool
	// kills counts SIGKILLs the test delivered; crashes those the
	// connector's fault injection sent itself.
	kills, crashes int
}

func startConnector(t *testing.T, n *seamNode, args ...string) *connectorProc {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "connector.log"))
	if err != nil {
		t.Fatal(err)
	}
	c := &connectorProc{t: t, log: log, args: append(append([]string{"stream"}, args...), "--addr", n.addr, "--data-dir", n.dataDir,
		"--progress", "1s", "--log-level", "info")}
	c.start()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() || os.Getenv("SEAM_TEST_CONNECTOR_LOG") != "" {
			b, _ := os.ReadFile(log.Name())
			if os.Getenv("SEAM_TEST_CONNECTOR_LOG") == "all" {
				t.Logf("connector log:\n%s", b)
			} else {
				t.Logf("connector log (last 6000 bytes):\n%s", tail(b, 6000))
			}
		}
	})
	return c
}

// logSize is how much the connector has logged so far.
func (c *connectorProc) logSize() int64 {
	c.t.Helper()
	fi, err := c.log.Stat()
	if err != nil {
		c.t.Fatal(err)
	}
	return fi.Size()
}

// waitLogged waits until the connector logs line after offset.
func (c *connectorProc) waitLogged(offset int64, line string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(c.log.Name())
		if err != nil {
			c.t.Fatal(err)
		}
		if int64(len(b)) > offset && bytes.Contains(b[offset:], []byte(line)) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the connector did not log %q within %s", line, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (c *connectorProc) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	cmd := exec.Command(seamBin, c.args...)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.Env = append(os.Environ(), "SEAM_STREAM_CRASH=planned=0.03,ingested=0.05,published=0.15,replayed=0.5")
	if err := cmd.Start(); err != nil {
		c.t.Errorf("start the connector: %v", err)
		return
	}
	c.cmd = cmd
	exited := make(chan struct{})
	c.exited = exited
	go func() {
		err := cmd.Wait()
		close(exited)
		c.mu.Lock()
		mine := c.cmd == cmd
		if mine {
			c.cmd = nil
		}
		c.mu.Unlock()
		if !mine {
			return
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			c.mu.Lock()
			c.crashes++
			c.mu.Unlock()
			fmt.Fprintf(c.log, "TEST: the connector killed itself at a crash point\n")
			c.start()
			return
		}
		fmt.Fprintf(c.log, "TEST: connector exited by itself: %v\n", err)
		c.t.Errorf("the connector exited by itself: %v", err)
	}()
}

// kill delivers SIGKILL and starts a new connector at once.
func (c *connectorProc) kill() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd != nil {
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			c.mu.Lock()
			c.kills++
			c.mu.Unlock()
		}
		<-exited
		fmt.Fprintf(c.log, "TEST: SIGKILL\n")
	}
	c.start()
}

func (c *connectorProc) stop() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd, c.stopped = nil, true
	c.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// killer kills the connector at random moments until stop is called.
func (c *connectorProc) killer() (stop func() int) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(800+rand.IntN(1700)) * time.Millisecond):
				c.kill()
			}
		}
	}()
	return func() int {
		close(done)
		<-finished
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.kills + c.crashes
	}
}

// payment is one source record of the bank.payments feed.
type payment struct {
	seq     int
	account int
	uuid    bool
	at      time.Time
}

var base = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func payments(from, to int, uuid bool) []payment {
	var out []payment
	for i := from; i < to; i++ {
		out = append(out, payment{seq: i, account: i%37 + 1, uuid: uuid, at: base.Add(time.Duration(i) * time.Second)})
	}
	return out
}

func accountUUID(a int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", a) }

func (p payment) id() string { return fmt.Sprintf("PAY-%08d", p.seq) }

func (p payment) key() string { return fmt.Sprint(p.account) }

func (p payment) value() []byte {
	acct := fmt.Sprint(p.account)
	if p.uuid {
		acct = `"` + accountUUID(p.account) + `"`
	}
	return fmt.Appendf(nil, `{"payment_id":%q,"account_id":%s,"amount":%d.5,"booked_at":%q,"seq":%d}`,
		p.id(), acct, 10+p.seq%90, p.at.Format(time.RFC3339), p.seq)
}

// outRecord is one output message, decoded.
type outRecord struct {
	PaymentID string `json:"payment_id"`
	AccountID int64  `json:"account_id"`
	Seq       int64  `json:"seq"`
	seamSeq   string
	partition int32
}

// broker is a test broker: where the source is produced and the output read.
type broker interface {
	produce(t testing.TB, ps []payment)
	// produceRaw sends messages as they are, for bad input.
	produceRaw(t testing.TB, values [][]byte)
	output(t testing.TB) []outRecord
	// args are the connector's broker flags.
	args() []string
}

// startFinanceSeam starts a Seam node with the account namespace, the
// finance payment model and the contract in contractFile registered.
func startFinanceSeam(t *testing.T, contractFile string) *seamNode {
	t.Helper()
	n := startSeam(t)
	n.run(t, "idmap", "namespace", "create", "account", "--format", "legacy-int:int", "--format", "uuid:uuid")
	n.run(t, "canonical", "register", "-f", "testdata/finance_payment.yaml")
	n.run(t, "contract", "register", "-f", contractFile)
	return n
}

// scenario runs the identifier-change story through a connector killed
// with SIGKILL every second or two, and checks the output.
func scenario(t *testing.T, b broker, name string) {
	n := startFinanceSeam(t, "testdata/bank_payments_v1.yaml")

	conn := startConnector(t, n, append(b.args(), "--name", name, "--subject", "bank.payments", "--event-time", "booked_at",
		"--granularity", "minute", "--lateness", "15m", "--idle", "2s", "--batch-records", "100", "--batch-wait", "100ms")...)
	stopKiller := conn.killer()

	produce := func(ps []payment) {
		for len(ps) > 0 {
			k := min(250, len(ps))
			b.produce(t, ps[:k])
			ps = ps[k:]
			time.Sleep(150 * time.Millisecond)
		}
	}
	waitReceived := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(120 * time.Second)
		for {
			got := n.received(t, "bank.payments")
			if got == want {
				return
			}
			if got > want {
				t.Fatalf("the gate received %d records, more than the %d sent: a redelivery was written twice", got, want)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gate received %d records after 120s, want %d", got, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Integer account ids with three broken messages among them (each
	// must reach the gate's quarantine, not vanish), then unannounced
	// UUIDs (quarantined by v1).
	produce(payments(0, 1000, false))
	b.produceRaw(t, [][]byte{[]byte("not json at all"), []byte("{\"payment_id\":\n  broken"), {}})
	produce(payments(1000, 2000, false))
	produce(payments(2000, 2500, true))
	waitReceived(2503)

	// Containment: the records keep flowing into quarantine, nothing more
	// is published, though the watermark seals the partitions staged
	// before it. The connector reads containment at most once a second
	// (and at each restart), and until then may still publish partitions
	// sealed before it; once it has read it, nothing but the chunk in
	// flight is published.
	logged := conn.logSize()
	n.run(t, "gate", "contain", "bank.payments", "--reason", "INC-21: account ids arrive as UUIDs")
	conn.waitLogged(logged, "the source is contained: publishing paused", 60*time.Second)
	before := len(b.output(t))
	produce(payments(2500, 3000, true))
	waitReceived(3003)
	time.Sleep(3 * time.Second)
	during := len(b.output(t))
	if during-before > 100 {
		t.Fatalf("output grew from %d to %d records while contained, more than one batch (100)", before, during)
	}
	if during >= 2000 {
		t.Fatalf("output holds %d records while contained, want fewer than the 2000 accepted: the staged tail was published", during)
	}

	// The fix: the id table, v2 with a migration that can now run,
	// release, then a replay of the affected window. v2 records flow again.
	pairs := "uuid,legacy_int\n"
	for a := 1; a <= 37; a++ {
		pairs += fmt.Sprintf("%s,%d\n", accountUUID(a), a)
	}
	csv := filepath.Join(t.TempDir(), "accounts.csv")
	if err := os.WriteFile(csv, []byte(pairs), 0o600); err != nil {
		t.Fatal(err)
	}
	n.run(t, "idmap", "import", "account", csv, "--from", "uuid", "--to", "legacy-int")
	n.run(t, "contract", "register", "-f", "testdata/bank_payments_v2.yaml", "--override-reason", "INC-21: the bank already sends UUIDs")
	n.run(t, "gate", "release", "bank.payments", "--reason", "v2 maps account UUIDs back")
	// The gate asks the registry for a subject's versions at most once a
	// second (its default ContractRefresh; docs/partitions.md): records
	// sent within that second may still be judged, and quarantined, by
	// v1, and the replay would release them too. A pipeline waits for
	// the second to pass after registering; so does this test.
	time.Sleep(1500 * time.Millisecond)
	produce(payments(3000, 3500, true))
	if got := replay(t, n); got != 1000 {
		t.Fatalf("replay released %d records, want 1000", got)
	}
	// One record a day later moves the watermark past everything else.
	flush := payment{seq: 99999999, account: 1, uuid: true, at: base.Add(24 * time.Hour)}
	b.produce(t, []payment{flush})
	waitReceived(3504)

	want := map[string]bool{}
	for i := range 3500 {
		want[fmt.Sprintf("PAY-%08d", i)] = true
	}
	var out []outRecord
	deadline := time.Now().Add(180 * time.Second)
	for {
		out = b.output(t)
		if len(out) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	kills := stopKiller()
	if kills < 3 {
		t.Fatalf("the connector was killed %d times, want at least 3 for this test to mean anything", kills)
	}
	t.Logf("connector killed with SIGKILL %d times (%d by the test, %d at crash points); output holds %d records", kills, conn.kills, conn.crashes, len(out))

	// A second replay releases nothing, and nothing more is published.
	if got := replay(t, n); got != 0 {
		t.Fatalf("a second replay released %d records, want 0", got)
	}
	time.Sleep(5 * time.Second)
	out = b.output(t)
	checkOutput(t, out, want)
	if got := n.received(t, "bank.payments"); got != 3504 {
		t.Fatalf("the gate received %d records, want exactly 3504", got)
	}
}

// replay replays the day's quarantine as an operator would and returns
// how many records it released.
func replay(t *testing.T, n *seamNode) int {
	t.Helper()
	out := n.run(t, "quarantine", "replay", "bank.payments", "--from", "2026-03-01T00:00", "--to", "2026-03-01T23:59", "--summary-only", "-o", "json")
	var sum struct {
		Released int `json:"released"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("replay answered %s: %v", out, err)
	}
	return sum.Released
}

// checkOutput asserts every wanted record exactly once, nothing else,
// sequence numbers without gaps per output partition, and the live
// records of each account in source order.
func checkOutput(t *testing.T, out []outRecord, want map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range out {
		seen[r.PaymentID]++
	}
	var dup, missing, extra []string
	for id, k := range seen {
		if k > 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", id, k))
		}
		if !want[id] {
			extra = append(extra, id)
		}
	}
	for id := range want {
		if seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(dup)+len(missing)+len(extra) > 0 {
		t.Fatalf("output has %d records: %d duplicated %v, %d missing %v, %d unexpected %v", len(out), len(dup), first(dup), len(missing), first(missing), len(extra), first(extra))
	}
	next := map[int32]int{}
	last := map[int64]int64{}
	for _, r := range out {
		next[r.partition]++
		if r.seamSeq != fmt.Sprint(next[r.partition]) {
			t.Fatalf("output partition %d: Seam-Seq %s where %d was due", r.partition, r.seamSeq, next[r.partition])
		}
		if r.Seq >= 2000 && r.Seq < 3000 {
			continue // released by the replay, after the accounts' later records
		}
		if r.Seq <= last[r.AccountID] && last[r.AccountID] != 0 {
			t.Fatalf("account %d: record seq %d published after seq %d", r.AccountID, r.Seq, last[r.AccountID])
		}
		last[r.AccountID] = r.Seq
	}
}

func first(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
