package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/seamdata/seam/sources/postgres"
)

// The benchmarks run the whole path on this machine: the source's
// PostgreSQL, the connector, the four Seam services (SQLite stores) and
// the target. Run them once each:
//
//	cd sources && go test ./postgres -run '^$' -bench . -benchtime 1x
//
// Rows are about 300 bytes of column text, as in the source document's
// worked example.

const ordersDDL = `CREATE TABLE orders (
	id         bigint PRIMARY KEY,
	customer   varchar(40) NOT NULL,
	amount     numeric(12,2) NOT NULL,
	currency   char(3) NOT NULL,
	status     text NOT NULL,
	placed_at  timestamptz NOT NULL,
	address    text,
	note       text
)`

func loadOrders(e *env, n int) {
	e.exec(e.src, ordersDDL)
	e.exec(e.src, `INSERT INTO orders
SELECT i, 'CUST-' || lpad((i % 100000)::text, 10, '0'), (i % 99991) / 100.0, 'EUR', 'placed',
       timestamptz '2026-03-01 00:00:00+00' + i * interval '1 second',
       repeat('Hauptstrasse ' || i || ', ', 4), repeat('n', 120)
  FROM generate_series(1, $1) i`, n)
	e.exec(e.src, "ANALYZE orders")
}

// BenchmarkSnapshot measures the snapshot through the gate into the
// replica: rows/s and MB/s of column text.
func BenchmarkSnapshot(b *testing.B) {
	const rows = 200_000
	sm := startSeam(b)
	e := newEnv(b, sm)
	loadOrders(e, rows)
	var done, bytes int64
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		tgt := createDB(b, pgServer.Require(b), "benchtgt")
		cfg := e.config(fmt.Sprintf("snapbench%d", i), "orders")
		cfg.TargetURL = tgt
		cfg.SnapshotWorkers, cfg.ChunkRows, cfg.BatchRecords = 4, 20_000, 2000
		cfg.SubjectPrefix = fmt.Sprintf("bench%d.", i)
		var last postgres.SnapshotProgress
		cfg.Progress = func(p postgres.SnapshotProgress) { last = p }
		b.StartTimer()
		start := time.Now()
		r := e.start(cfg)
		r.waitReady(b)
		elapsed += time.Since(start)
		b.StopTimer()
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		done += last.RowsDone
		bytes += last.BytesDone
		if last.RowsDone != rows {
			b.Fatalf("snapshot read %d rows, want %d", last.RowsDone, rows)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(bytes)/1e6/elapsed.Seconds(), "MB/s")
}

// BenchmarkStream measures streaming: changes written while the source is
// stopped, then captured, sent through the gate and applied on restart,
// in changes/s from the restart to the last change applied.
func BenchmarkStream(b *testing.B) {
	const changes = 50_000
	sm := startSeam(b)
	e := newEnv(b, sm)
	loadOrders(e, 1000)
	cfg := e.config("streambench", "orders")
	cfg.BatchRecords = 2000
	r := e.start(cfg)
	r.waitReady(b)
	if err := r.stop(); err != nil {
		b.Fatal(err)
	}
	var total int64
	var elapsed time.Duration
	next := int64(1_000_000)
	for b.Loop() {
		b.StopTimer()
		before := tableStatus(b, e, "streambench", "public.orders").Applied
		// 20,000 inserts in transactions of 100, 20,000 updates of them in
		// transactions of 500, 9 updates of 1,000 rows, and 1,000
		// single-row transactions: 50,000 changes.
		e.exec(e.src, fmt.Sprintf(`DO $$ BEGIN FOR b IN 0..199 LOOP
  INSERT INTO orders SELECT i, 'CUST-NEW', i / 100.0, 'EUR', 'placed', now(), 'street', 'note' FROM generate_series(%d + b * 100, %d + b * 100 + 99) i;
  COMMIT; END LOOP; END $$`, next, next))
		for i := range int64(40) {
			e.exec(e.src, "UPDATE orders SET amount = amount + 1 WHERE id >= $1 AND id < $2", next+i*500, next+(i+1)*500)
		}
		next += 20_000
		for range 9 {
			e.exec(e.src, "UPDATE orders SET status = 'paid' WHERE id <= 1000")
		}
		for i := range 1000 {
			e.exec(e.src, "UPDATE orders SET note = 'single' WHERE id = $1", 1+i)
		}
		want := before + changes
		b.StartTimer()
		start := time.Now()
		r = e.start(cfg)
		for tableStatus(b, e, "streambench", "public.orders").Applied < want {
			time.Sleep(20 * time.Millisecond)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		total += changes
		b.StartTimer()
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "changes/s")
}
