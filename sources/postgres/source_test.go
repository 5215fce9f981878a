package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	"github.com/seamdata/seam/sources/postgres"
)

// The tables of these tests: a payments feed keyed by a bigint, and bank
// accounts keyed by a string reference.
const paymentsDDL = `
CREATE TABLE payments (
	id        bigint PRIMARY KEY,
	account   varchar(34) NOT NULL,
	amount    numeric(12,2) NOT NULL,
	currency  char(3) NOT NULL,
	memo      text,
	paid_at   timestamptz NOT NULL,
	settled   boolean NOT NULL DEFAULT false,
	fee       double precision
);
CREATE TABLE accounts (
	ref       text PRIMARY KEY,
	holder    text NOT NULL,
	balance   double precision,
	opened    date
);`

var paymentCols = []string{"id", "account", "amount", "currency", "memo", "paid_at", "settled", "fee"}
var accountCols = []string{"ref", "holder", "balance", "opened"}

// loadPayments fills the tables with n payments and n/10 accounts.
func loadPayments(e *env, n int) {
	e.exec(e.src, paymentsDDL)
	e.exec(e.src, `INSERT INTO payments
SELECT i, 'DE' || lpad(i::text, 20, '0'), (i % 9973) / 7.0, (ARRAY['EUR','USD','GBP'])[1 + i % 3],
       CASE WHEN i % 5 = 0 THEN NULL ELSE 'memo "' || i || E'" line\nbreak' END,
       timestamptz '2026-03-01 00:00:00+00' + i * interval '17 seconds', i % 2 = 0, CASE WHEN i % 4 = 0 THEN NULL ELSE i / 3.0 END
  FROM generate_series(1, $1) i`, n)
	e.exec(e.src, `INSERT INTO accounts SELECT 'ACC-' || lpad(i::text, 6, '0'), 'holder ' || i, i * 1.5, date '2020-01-01' + i FROM generate_series(1, $1) i`, n/10)
}

// writer runs random inserts, updates, deletes and key changes against
// the source until stopped, one small transaction at a time.
type writer struct {
	e      *env
	stop   chan struct{}
	done   chan struct{}
	nextID atomic.Int64
	txs    atomic.Int64
	err    error
}

func startWriter(e *env, firstID int64, seed uint64) *writer {
	w := &writer{e: e, stop: make(chan struct{}), done: make(chan struct{})}
	w.nextID.Store(firstID)
	conn := connect(e.t, e.source)
	rng := rand.New(rand.NewPCG(seed, 7))
	go func() {
		defer close(w.done)
		ctx := context.Background()
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				for range 1 + rng.IntN(4) {
					var err error
					max := w.nextID.Load()
					switch rng.IntN(9) {
					case 0, 1, 2:
						id := w.nextID.Add(1)
						_, err = tx.Exec(ctx, `INSERT INTO payments (id, account, amount, currency, memo, paid_at, settled, fee)
VALUES ($1::bigint, 'NL' || $1::bigint::text, $2, 'EUR', 'new', now(), false, $3)`, id, float64(rng.IntN(100000))/100, rng.Float64())
					case 3, 4:
						_, err = tx.Exec(ctx, "UPDATE payments SET amount = amount + 1, settled = NOT settled, memo = coalesce(memo, '') || '+' WHERE id = $1", 1+rng.Int64N(max))
					case 5:
						_, err = tx.Exec(ctx, "DELETE FROM payments WHERE id = $1", 1+rng.Int64N(max))
					case 6:
						// A key change: delete of the old key, the row under the new.
						id := w.nextID.Add(1)
						_, err = tx.Exec(ctx, "UPDATE payments SET id = $2 WHERE id = $1", 1+rng.Int64N(max), id)
					case 7:
						_, err = tx.Exec(ctx, "UPDATE accounts SET balance = balance - 1, holder = holder || '.' WHERE ref = $1", fmt.Sprintf("ACC-%06d", 1+rng.IntN(50)))
					case 8:
						_, err = tx.Exec(ctx, `INSERT INTO accounts VALUES ($1, 'new holder', NULL, NULL) ON CONFLICT (ref) DO UPDATE SET holder = 'reopened'`,
							fmt.Sprintf("ACC-X%05d", rng.IntN(200)))
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				w.err = err
				return
			}
			w.txs.Add(1)
			if writerPause > 0 {
				time.Sleep(writerPause)
			}
		}
	}()
	return w
}

func (w *writer) finish(t testing.TB) {
	t.Helper()
	close(w.stop)
	<-w.done
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
}

// converged waits until both replicas equal their source tables.
func converged(t testing.TB, e *env, schema string) {
	t.Helper()
	eventually(t, "payments replica equals the source", 90*time.Second, func() (bool, string) {
		return sameRows(t, e, "payments", schema+".payments", paymentCols)
	})
	eventually(t, "accounts replica equals the source", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "accounts", schema+".accounts", accountCols)
	})
}

// noDuplicates checks the change stream: every position once.
func noDuplicates(t testing.TB, e *env, name string) {
	t.Helper()
	var dup int
	if err := e.tgt.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT source_table, lsn, seq, coalesce(record->>'id', record->>'ref')
  FROM seam_cdc.outbox WHERE connector = $1 GROUP BY 1, 2, 3, 4 HAVING count(*) > 1) d`, name).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if dup != 0 {
		rows, _ := e.tgt.Query(context.Background(), `SELECT o.id, o.source_table, o.op, o.lsn, o.seq, o.record::text FROM seam_cdc.outbox o JOIN (SELECT source_table, lsn, seq, coalesce(record->>'id', record->>'ref') k
  FROM seam_cdc.outbox WHERE connector = $1 GROUP BY 1, 2, 3, 4 HAVING count(*) > 1) d ON d.source_table = o.source_table AND d.lsn = o.lsn AND d.seq = o.seq WHERE o.connector = $1 ORDER BY o.id`, name)
		for rows.Next() {
			v, _ := rows.Values()
			t.Log(v...)
		}
		rows.Close()
		t.Fatalf("the change stream holds %d changes more than once, want 0", dup)
	}
}

// While writes run during the snapshot, the replica ends equal to the
// source row for row, and the change stream holds every change once.
func TestSnapshotHandsOffToStreamUnderWrites(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 5000)
	w := startWriter(e, 5000, 1)
	time.Sleep(100 * time.Millisecond)
	e.startReady(e.config("handoff", "payments", "public.accounts"))
	time.Sleep(500 * time.Millisecond)
	w.finish(t)
	if w.txs.Load() < 20 {
		t.Fatalf("the writer ran %d transactions; the test needs writes during the snapshot", w.txs.Load())
	}
	converged(t, e, "replica")
	noDuplicates(t, e, "handoff")
	var tombstones int
	if err := e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM replica.payments WHERE _seam_deleted").Scan(&tombstones); err != nil {
		t.Fatal(err)
	}
	if tombstones == 0 {
		t.Errorf("no tombstone in the replica after %d writer transactions with deletes; want soft deletes", w.txs.Load())
	}
}

// snapshotReadsOnce checks that no row was read by the snapshot twice.
func snapshotReadsOnce(t testing.TB, e *env, name string) {
	t.Helper()
	var dup int
	if err := e.tgt.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT source_table, coalesce(record->>'id', record->>'ref')
  FROM seam_cdc.outbox WHERE connector = $1 AND op = 'r' GROUP BY 1, 2 HAVING count(*) > 1) d`, name).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if dup != 0 {
		t.Fatalf("the snapshot published %d rows more than once, want 0", dup)
	}
}

// gateReceived sums what the gate received for a subject outside the
// snapshot's partitions.
func gateReceived(t testing.TB, e *env, subject string) int64 {
	t.Helper()
	resp, err := e.seam.gate.GetMonitor(context.Background(), &gatev1.GetMonitorRequest{Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range resp.GetPartitions() {
		if !strings.HasPrefix(p.GetPartition(), "snapshot") {
			n += p.GetReceived()
		}
	}
	return n
}

func outboxCount(t testing.TB, e *env, name, table, where string) int64 {
	t.Helper()
	var n int64
	q := "SELECT count(*) FROM seam_cdc.outbox WHERE connector = $1 AND source_table = $2"
	if where != "" {
		q += " AND " + where
	}
	if err := e.tgt.QueryRow(context.Background(), q, name, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A source stopped in the middle of its snapshot resumes it in a fresh
// exported snapshot: rows already applied are not read again, rows the
// later snapshot already holds are not changed back by older changes, the
// replica ends equal to the source, the status and the gate's snapshot
// partitions count what the snapshot published, and nothing is left
// holding back VACUUM.
func TestRestartMidSnapshotResumesExactly(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 6000)
	w := startWriter(e, 6000, 2)
	cfg := e.config("midsnap", "payments", "accounts")
	cfg.SnapshotWorkers = 2
	stopAt := make(chan struct{})
	var once sync.Once
	cfg.Progress = func(p postgres.SnapshotProgress) {
		if p.RowsDone >= 2500 {
			once.Do(func() { close(stopAt) })
		}
	}
	r := e.start(cfg)
	select {
	case <-stopAt:
	case <-time.After(60 * time.Second):
		t.Fatal("the snapshot did not reach 2500 rows")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.ReadStatus(context.Background(), e.tgt, nil, "midsnap")
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != "snapshot" {
		t.Fatalf("phase after the stop = %s, want snapshot (the stop must land mid-snapshot)", st.Phase)
	}
	time.Sleep(300 * time.Millisecond) // writes between the two runs
	var over atomic.Value
	cfg.Progress = func(p postgres.SnapshotProgress) {
		if p.RowsDone > p.RowsTotal {
			over.Store(fmt.Sprintf("%d of %d rows", p.RowsDone, p.RowsTotal))
		}
	}
	r2 := e.start(cfg)
	r2.waitReady(t)
	time.Sleep(300 * time.Millisecond)
	w.finish(t)
	converged(t, e, "replica")
	noDuplicates(t, e, "midsnap")
	snapshotReadsOnce(t, e, "midsnap")
	if o := over.Load(); o != nil {
		t.Errorf("the resumed snapshot's progress went over 100%%: %s", o)
	}
	for _, table := range []string{"public.payments", "public.accounts"} {
		ts := tableStatus(t, e, "midsnap", table)
		published := outboxCount(t, e, "midsnap", table, "op = 'r'")
		received := int64(0)
		for _, p := range snapshotPartitions(t, e, ts.Subject) {
			received += p.GetCounts().GetReceived()
		}
		t.Logf("%s: status %d of %d snapshot rows, %d published by the snapshot, %d received by the gate's snapshot partitions", table, ts.RowsDone, ts.RowsTotal, published, received)
		if ts.RowsDone != ts.RowsTotal || ts.RowsDone != published || received != published {
			t.Errorf("%s: snapshot %d of %d rows when done, %d published, %d received by the gate; want all of its total, and as many as published", table, ts.RowsDone, ts.RowsTotal, published, received)
		}
	}
	// The resumed snapshot's exporter and temporary slot are gone: VACUUM
	// removes the rows deleted after it.
	holdsNothing(t, e, "midsnap")
	e.exec(e.src, "CREATE EXTENSION IF NOT EXISTS pgstattuple")
	expectVacuumed(t, e, 5, " after the resumed snapshot")
}

// A source stopped again and again while it streams resumes each time
// from its recorded position: the replica ends equal to the source, the
// change stream holds every change once, and the gate received every
// change once (a batch cut short is sent again under the same identity).
func TestRestartMidStreamResumesExactly(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 1000)
	cfg := e.config("midstream", "payments", "accounts")
	cfg.BatchRecords = 37
	r := e.startReady(cfg)
	w := startWriter(e, 1000, 3)
	for i := range 5 {
		time.Sleep(time.Duration(150+90*i) * time.Millisecond)
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		r = e.start(cfg)
	}
	time.Sleep(300 * time.Millisecond)
	w.finish(t)
	converged(t, e, "replica")
	noDuplicates(t, e, "midstream")
	eventually(t, "the gate received each streamed change once", 10*time.Second, func() (bool, string) {
		for _, tc := range []struct{ table, subject string }{{"public.payments", "pg." + dbName(e.source) + ".public.payments"}, {"public.accounts", "pg." + dbName(e.source) + ".public.accounts"}} {
			got, want := gateReceived(t, e, tc.subject), outboxCount(t, e, "midstream", tc.table, "op <> 'r'")
			if got != want {
				return false, fmt.Sprintf("%s: gate received %d streamed changes, the change stream holds %d", tc.table, got, want)
			}
		}
		return true, ""
	})
}

// A restart that finds its slot still held by a walsender (the run
// before's, until the server sees that connection gone) waits for it
// rather than stopping, then streams from where it was.
func TestRestartWaitsForItsSlotToBeReleased(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 200)
	cfg := e.config("heldslot", "payments", "accounts")
	if err := e.startReady(cfg).stop(); err != nil {
		t.Fatal(err)
	}
	held := holdSlot(t, e.source, "seam_heldslot")
	r := e.start(cfg)
	w := startWriter(e, 1000, 5)
	select {
	case err := <-r.done:
		t.Fatalf("the source stopped while its slot was held: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	if err := held.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	w.finish(t)
	converged(t, e, "replica")
	noDuplicates(t, e, "heldslot")
}

// holdSlot streams slot from another replication connection, as the
// walsender of a run that has just ended still does; close it to let go.
func holdSlot(t testing.TB, url, slot string) *pgconn.PgConn {
	t.Helper()
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pglogrepl.StartReplication(context.Background(), conn, slot, 0, pglogrepl.StartReplicationOptions{
		Mode: pglogrepl.LogicalReplication, PluginArgs: []string{"proto_version '1'", "publication_names '" + slot + "'"}}); err != nil {
		conn.Close(context.Background())
		t.Fatalf("hold slot %s: %v", slot, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func dbName(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return ""
	}
	return cfg.Database
}

// Unchanged TOAST values (not sent by the stream) are completed from the
// replica, hard deletes remove rows, and a TRUNCATE empties the replica.
func TestToastHardDeletesAndTruncate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, startSeam(t))
	e.exec(e.src, `CREATE TABLE documents (doc_id uuid PRIMARY KEY, title text NOT NULL, body text NOT NULL, version int NOT NULL);
CREATE TABLE tags (tag text PRIMARY KEY, uses bigint)`)
	// Bodies of random hex are large and incompressible: stored out of
	// line, so an update that leaves them alone does not send them.
	e.exec(e.src, `INSERT INTO documents SELECT gen_random_uuid(), 'doc ' || i,
  (SELECT string_agg(md5(random()::text || j), '') FROM generate_series(1, 300) j), 1 FROM generate_series(1, 20) i`)
	e.exec(e.src, "INSERT INTO tags SELECT 'tag' || i, i FROM generate_series(1, 50) i")
	cfg := e.config("toast", "documents", "tags")
	cfg.HardDeletes = true
	e.startReady(cfg)
	e.exec(e.src, "UPDATE documents SET version = version + 1, title = title || ' (edited)'")
	e.exec(e.src, "DELETE FROM documents WHERE title LIKE 'doc 1%'")
	e.exec(e.src, "DELETE FROM tags WHERE uses > 40")
	docCols := []string{"doc_id", "title", "body", "version"}
	eventually(t, "documents replica equals the source", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "documents", "replica.documents", docCols)
	})
	eventually(t, "tags replica equals the source", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "tags", "replica.tags", []string{"tag", "uses"})
	})
	var kept int
	if err := e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM replica.tags WHERE _seam_deleted OR uses > 40").Scan(&kept); err != nil || kept != 0 {
		t.Fatalf("with hard deletes the replica keeps %d deleted rows (%v), want 0", kept, err)
	}
	e.exec(e.src, "TRUNCATE tags")
	e.exec(e.src, "INSERT INTO tags VALUES ('fresh', 1)")
	eventually(t, "the truncate reaches the replica", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "tags", "replica.tags", []string{"tag", "uses"})
	})
	var quarantined int64
	for _, ts := range []string{"public.documents", "public.tags"} {
		quarantined += tableStatus(t, e, "toast", ts).Quarantined
	}
	if quarantined != 0 {
		t.Fatalf("%d changes were quarantined, want 0 (updates without their TOAST values must be completed)", quarantined)
	}
}

// One process per source: a second Run of the same name refuses to start.
func TestSecondRunOfASourceRefuses(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 10)
	cfg := e.config("once", "payments")
	e.startReady(cfg)
	if err := runToEnd(t, cfg, 30*time.Second); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a second run of source once returned %v, want it refused as already running", err)
	}
}
