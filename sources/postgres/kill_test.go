package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/dial"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/sources/postgres"
)

// childEnv, when set, makes the test binary run one source (described by
// the variable's JSON) instead of the tests, until it is signalled: a
// process the test can kill -9.
const childEnv = "SEAM_CDC_TEST_CHILD"

// childSpec is what a child process runs.
type childSpec struct {
	Name, Source, Target, Addr, Token string
	Tables                            []string
	Workers, ChunkRows, BatchRecords  int
}

// runChild runs the source of the spec in $SEAM_CDC_TEST_CHILD until
// SIGTERM, and returns the process's exit code.
func runChild(raw string) int {
	var c childSpec
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	conn, err := dial.Conn(c.Addr, dial.Options{Token: c.Token})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial seam:", err)
		return 2
	}
	defer conn.Close()
	src, err := postgres.New(postgres.Config{
		Name: c.Name, SourceURL: c.Source, TargetURL: c.Target, Tables: c.Tables,
		Gate: gatev1.NewGateServiceClient(conn), Registry: registryv1.NewRegistryServiceClient(conn),
		SnapshotWorkers: c.Workers, ChunkRows: c.ChunkRows, BatchRecords: c.BatchRecords,
		PollInterval: 100 * time.Millisecond, StatusInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := src.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is a source running in a process of its own.
type child struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	exited chan error
}

func startChild(t *testing.T, spec childSpec) *child {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), exited: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		// Killed or already gone: how it ended was judged where it
		// mattered, and the cleanup only waits for it.
		err := <-c.exited
		_ = err
	})
	return c
}

// gone waits until no connection of a killed source is left at the
// source or the target: the server ends a dead client's backends (its
// walsenders, its advisory lock) once it sees the socket closed.
func gone(t *testing.T, e *env, slot, app string) {
	t.Helper()
	eventually(t, "the killed source's connections gone", 30*time.Second, func() (bool, string) {
		var src, tgt int
		if err := e.src.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", slot).Scan(&src); err != nil {
			t.Fatal(err)
		}
		if err := e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&tgt); err != nil {
			t.Fatal(err)
		}
		return src == 0 && tgt == 0, fmt.Sprintf("%d backends at the source, %d at the target", src, tgt)
	})
}

// A source process killed with SIGKILL again and again in the middle of
// its snapshot, while the source database takes inserts, updates, deletes
// and key changes, ends with the replica equal to the source, every
// change and every snapshot row in the change stream once, and the
// status and the gate's snapshot partitions counting exactly the rows the
// snapshot published.
func TestKill9MidSnapshotKeepsCountsExact(t *testing.T) {
	t.Parallel()
	sm := startSeam(t)
	e := newEnv(t, sm)
	loadPayments(e, 6000)
	const name, app = "kill9", "seam_kill9_test"
	sep := "?"
	if strings.Contains(e.target, "?") {
		sep = "&"
	}
	spec := childSpec{Name: name, Source: e.source, Target: e.target + sep + "application_name=" + app, Addr: sm.addr, Token: sm.admin,
		Tables: []string{"payments", "accounts"}, Workers: 2, ChunkRows: 500, BatchRecords: 100}
	w := startWriter(e, 6000, 5)
	ctx := context.Background()
	status := func() (*postgres.Status, bool) {
		st, err := postgres.ReadStatus(ctx, e.tgt, nil, name)
		return st, err == nil
	}
	rowsDone := func(st *postgres.Status) int64 {
		var n int64
		for _, ts := range st.Tables {
			n += ts.RowsDone
		}
		return n
	}
	rng := rand.New(rand.NewPCG(32, 9))
	kills := 0
	var c *child
	for kills < 6 {
		gone(t, e, "seam_"+name, app)
		before := int64(-1)
		if st, ok := status(); ok {
			before = rowsDone(st)
		}
		c = startChild(t, spec)
		inStream := false
		eventually(t, "snapshot rows landing in this run", 60*time.Second, func() (bool, string) {
			select {
			case err := <-c.exited:
				c.exited <- err // for the cleanup
				t.Fatalf("the source process ended by itself (%v): %s", err, c.stderr.String())
			default:
			}
			st, ok := status()
			if ok && st.Phase == "stream" {
				inStream = true
				return true, ""
			}
			return ok && rowsDone(st) > before, "no new snapshot row"
		})
		if inStream {
			break
		}
		time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
		if st, ok := status(); ok && st.Phase == "stream" {
			break
		}
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := <-c.exited; err == nil {
			t.Fatal("the source exited cleanly when it was sent SIGKILL")
		}
		c.exited <- nil // for the cleanup
		kills++
		c = nil
	}
	if kills < 2 {
		t.Fatalf("only %d kill -9s landed in the snapshot; the test needs more (a slower snapshot)", kills)
	}
	if c == nil {
		gone(t, e, "seam_"+name, app)
		c = startChild(t, spec)
	}
	eventually(t, "the snapshot done after the kills", 120*time.Second, func() (bool, string) {
		st, ok := status()
		if !ok {
			return false, "no status"
		}
		for _, ts := range st.Tables {
			if ts.Phase != "stream" {
				return false, ts.Table + " is " + ts.Phase
			}
		}
		return st.Phase == "stream", "source in " + st.Phase
	})
	w.finish(t)
	converged(t, e, "replica")
	noDuplicates(t, e, name)
	snapshotReadsOnce(t, e, name)
	holdsNothing(t, e, name)
	st, _ := status()
	for _, ts := range st.Tables {
		published := outboxCount(t, e, name, ts.Table, "op = 'r'")
		received := int64(0)
		for _, p := range snapshotPartitions(t, e, ts.Subject) {
			received += p.GetCounts().GetReceived()
			if p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
				t.Errorf("%s: snapshot partition %s is %s, want sealed", ts.Table, p.GetPartition(), p.GetStatus())
			}
		}
		t.Logf("%s after %d kill -9s: status %d of %d snapshot rows, %d published by the snapshot, %d received by the gate's snapshot partitions",
			ts.Table, kills, ts.RowsDone, ts.RowsTotal, published, received)
		if ts.RowsDone != ts.RowsTotal || ts.RowsDone != published || received != published {
			t.Errorf("%s: status %d of %d snapshot rows, %d published, %d received by the gate; want all of its total, and as many as published", ts.Table, ts.RowsDone, ts.RowsTotal, published, received)
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-c.exited; err != nil {
		t.Errorf("the source process stopped with %v: %s", err, c.stderr.String())
	}
	c.exited <- nil
}
