package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/sources/postgres/postgrestest"
)

// `seam source postgres` end to end: run snapshots and streams a bank
// feed, status and monitor show it, changes prints the stream, metrics
// are served, a dropped column and a type change halt the table and the
// proposal each prints registers as printed, drop removes the slot.
func TestSourcePostgresCLI(t *testing.T) {
	t.Parallel()
	srv, err := postgrestest.Start()
	if err != nil {
		t.Skipf("skipped: no test PostgreSQL with wal_level=logical (%v)", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	ctx := context.Background()
	source, err := srv.CreateDB(ctx, "bank")
	if err != nil {
		t.Fatal(err)
	}
	target, err := srv.CreateDB(ctx, "warehouse")
	if err != nil {
		t.Fatal(err)
	}
	src, err := pgx.Connect(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := src.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE transfers (ref text PRIMARY KEY, iban varchar(34) NOT NULL, cents bigint NOT NULL, note text, booked_at timestamptz NOT NULL);
INSERT INTO transfers SELECT 'TR-' || lpad(i::text, 8, '0'), 'DE89370400440532013' || lpad(i::text, 3, '0'), i * 1234, 'rent', now() FROM generate_series(1, 500) i`)

	n := seamtest.StartNode(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := lis.Addr().String()
	lis.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	var runErr bytes.Buffer
	go func() {
		done <- seamtest.RunTo(runCtx, []string{"--addr", n.GRPCAddr, "--token", n.Admin, "source", "postgres", "run", "--name", "bank",
			"--source", source, "--target", target, "--table", "transfers", "--subject-prefix", "bank", "--poll", "100ms", "--snapshot-transaction-limit", "1m",
			"--metrics-addr", metricsAddr}, io.Discard, &runErr)
	}()
	// stopRun interrupts the run and fails the test with fail unless it
	// ends cleanly; the test stops it before drop, the cleanup when the
	// test ends earlier.
	stopped := false
	stopRun := func(fail func(format string, args ...any)) {
		if stopped {
			return
		}
		stopped = true
		stop()
		select {
		case code := <-done:
			if code != 0 {
				fail("seam source postgres run exited %d: %s", code, runErr.String())
			}
		case <-time.After(30 * time.Second):
			fail("seam source postgres run did not stop within 30s")
		}
	}
	t.Cleanup(func() { stopRun(t.Errorf) })
	common := []string{"--name", "bank", "--target", target}
	status := func() map[string]any {
		return n.MustJSON(t, append([]string{"source", "postgres", "status", "--source", source}, common...)...)
	}
	waitFor := func(what string, cond func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, _, code := n.CLI(t, append([]string{"source", "postgres", "status", "-o", "json"}, common...)...)
			m := map[string]any{}
			if code == 0 && json.Unmarshal([]byte(out), &m) == nil && cond(m) {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60s; last status %s (exit %d); run said: %s", what, out, code, runErr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	tableOf := func(m map[string]any) map[string]any {
		tables, _ := m["tables"].([]any)
		if len(tables) != 1 {
			return map[string]any{}
		}
		return tables[0].(map[string]any)
	}
	waitFor("the snapshot", func(m map[string]any) bool {
		return m["phase"] == "stream" && tableOf(m)["snapshot_rows_done"] == 500.0
	})
	exec("UPDATE transfers SET cents = cents + 1 WHERE ref = 'TR-00000001'")
	exec("DELETE FROM transfers WHERE ref = 'TR-00000002'")
	waitFor("the stream", func(m map[string]any) bool { return tableOf(m)["changes_applied"] == 2.0 })
	if st := status(); st["lag_bytes"] == nil || st["source_lsn"] == "" {
		t.Errorf("status with --source shows no lag: %v", st)
	}
	// With its snapshot read, the source holds no transaction at the
	// source, and status shows what its slot keeps.
	held := n.MustCLI(t, 0, append([]string{"source", "postgres", "status", "--source", source}, common...)...)
	if !strings.Contains(held, "slot seam_bank keeps") || strings.Contains(held, "HOLDING") {
		t.Errorf("status with --source after the snapshot, want the slot's retained WAL and no open transaction:\n%s", held)
	}

	out := n.MustCLI(t, 0, append([]string{"source", "postgres", "changes", "--after", "500"}, common...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"op":"u"`) || !strings.Contains(lines[1], `"op":"d"`) || !strings.Contains(lines[0], `"sequence":501`) {
		t.Fatalf("changes after 500 = %q, want the update then the delete, sequences 501 and 502", out)
	}
	mon := n.MustCLI(t, 0, "monitor", "bank.public.transfers", "--source-target", target)
	if !strings.Contains(mon, "source bank") || !strings.Contains(mon, "public.transfers") {
		t.Fatalf("seam monitor --source-target shows no source section:\n%s", mon)
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"seam_cdc_snapshot_rows_total", "seam_cdc_changes_applied_total", "seam_cdc_changes_held", "seam_cdc_lag_bytes",
		`seam_cdc_slot_retained_wal_bytes{`, "seam_cdc_source_transaction_open_seconds"} {
		if !bytes.Contains(body, []byte(m)) {
			t.Errorf("metrics lack %s", m)
		}
	}

	// A dropped column halts the table; proposal prints the migration's start.
	exec("ALTER TABLE transfers DROP COLUMN note")
	exec("UPDATE transfers SET cents = 0 WHERE ref = 'TR-00000003'")
	waitFor("the halt", func(m map[string]any) bool {
		return tableOf(m)["phase"] == "halted" && tableOf(m)["changes_pending"] == 1.0
	})
	text := n.MustCLI(t, 0, append([]string{"source", "postgres", "status"}, common...)...)
	if !strings.Contains(text, "HALTED (SCHEMA_CHANGE)") || !strings.Contains(text, "FIELD_REMOVED") {
		t.Fatalf("status of a halted table:\n%s", text)
	}
	proposal := n.MustCLI(t, 0, append([]string{"source", "postgres", "proposal", "public.transfers"}, common...)...)
	if strings.Contains(proposal, "name: note") || !strings.Contains(proposal, "name: iban") {
		t.Fatalf("proposal still has the dropped column or lost another:\n%s", proposal)
	}
	migration := seamtest.WriteFile(t, "migration.yaml", proposal)
	n.MustCLI(t, 0, "contract", "register", "-f", migration, "--override-reason", "bank feed dropped note")
	waitFor("the resume", func(m map[string]any) bool {
		return tableOf(m)["phase"] == "stream" && tableOf(m)["changes_pending"] == 0.0 && tableOf(m)["changes_applied"] == 3.0
	})

	// A type change (bigint → text) halts the table too; its proposal,
	// printed, carries the cast back to the canonical model's type and
	// registers as it is, with nothing to edit.
	exec("ALTER TABLE transfers ALTER COLUMN cents TYPE text")
	exec("UPDATE transfers SET cents = '4200' WHERE ref = 'TR-00000004'")
	waitFor("the halt on the type change", func(m map[string]any) bool {
		return tableOf(m)["phase"] == "halted" && tableOf(m)["changes_pending"] == 1.0
	})
	proposal = n.MustCLI(t, 0, append([]string{"source", "postgres", "proposal", "public.transfers"}, common...)...)
	if strings.Contains(proposal, "EDIT BEFORE REGISTERING") || !strings.Contains(proposal, "cast:") {
		t.Fatalf("proposal after cents became text, want a cast and nothing to edit:\n%s", proposal)
	}
	migration = seamtest.WriteFile(t, "retype.yaml", proposal)
	n.MustCLI(t, 0, "contract", "register", "-f", migration, "--override-reason", "bank feed keeps cents as text")
	waitFor("the resume after the type change", func(m map[string]any) bool {
		return tableOf(m)["phase"] == "stream" && tableOf(m)["changes_pending"] == 0.0 && tableOf(m)["changes_applied"] == 4.0
	})

	stopRun(t.Fatalf)
	n.MustCLI(t, 0, "source", "postgres", "drop", "--name", "bank", "--source", source, "--target", target)
	var slots int
	if err := src.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'seam_bank'").Scan(&slots); err != nil || slots != 0 {
		t.Fatalf("after drop, %d slots named seam_bank remain (%v)", slots, err)
	}
	_, errOut, code := n.CLI(t, append([]string{"source", "postgres", "status"}, common...)...)
	if code != 1 || !strings.Contains(errOut, "no such source") {
		t.Fatalf("status of a dropped source: exit %d, %q; want exit 1 naming it", code, errOut)
	}
}
