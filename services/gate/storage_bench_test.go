package gate

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seamdata/seam/platform/storage/storagetest"
)

// BenchmarkStoredBytesPerRecord measures what the gate's store grows by
// per record ingested summary-only (1,000-record batches of shop.orders,
// every record accepted, 20 batches a partition), and logs it by table
// and index:
//
//	go test ./services/gate -run '^$' -bench StoredBytesPerRecord -benchtime 100x
//
// On SQLite ("sqlite") it is the file's used pages after a WAL checkpoint;
// on PostgreSQL ("postgres", with SEAM_TEST_POSTGRES_URL set) it is the
// total size of the gate's tables with their indexes and TOAST, as
// pg_total_relation_size counts them, without a VACUUM first.
//
// It uses only the API that earlier versions of the gate had, so the same
// file measures them too.
func BenchmarkStoredBytesPerRecord(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "gate.db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		storedBytesPerRecord(b, "sqlite:"+path, func(ctx context.Context) (int64, map[string]int64) { return sqliteSize(b, ctx, db) })
	})
	b.Run("postgres", func(b *testing.B) {
		url := storagetest.PostgresURL(b)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		storedBytesPerRecord(b, url, func(ctx context.Context) (int64, map[string]int64) { return postgresSize(b, ctx, conn) })
	})
}

// storedBytesPerRecord ingests b.N summary-only batches of 1,000 records
// into a gate on url and reports how much size says the store grew.
func storedBytesPerRecord(b *testing.B, url string, size func(context.Context) (int64, map[string]int64)) {
	e := startGate(b, knownPeers(b), url, nil)
	ctx := context.Background()
	before, beforeTables := size(ctx)
	data := orders{first: 1, n: 1000, amount: 85}
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := data
		o.first = 1 + i*1000
		req := ingest("shop.orders", day.AddDate(0, 0, i/20).Format(time.DateOnly), fmt.Sprint("b", i), o)
		req.SummaryOnly = true
		resp, err := e.as("pipeline").Ingest(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.GetSummary().GetAccepted() != 1000 {
			b.Fatalf("summary %v", resp.GetSummary())
		}
	}
	b.StopTimer()
	after, afterTables := size(ctx)
	records := float64(b.N) * 1000
	b.ReportMetric(float64(after-before)/records, "stored-bytes/record")
	var names []string
	for name := range afterTables {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		if d := afterTables[name] - beforeTables[name]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f", name, float64(d)/records))
		}
	}
	b.Logf("%d records: %.1f bytes a record; by table and index: %s", int(records), float64(after-before)/records, strings.Join(parts, ", "))
}

// sqliteSize is the SQLite file's used bytes after a WAL checkpoint, and
// by table and index where the build has dbstat.
func sqliteSize(b *testing.B, ctx context.Context, db *sql.DB) (int64, map[string]int64) {
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	var pages, pageSize, free int64
	if err := db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		b.Fatal(err)
	}
	tables := map[string]int64{}
	rows, err := db.QueryContext(ctx, `SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`)
	if err == nil { // dbstat is optional in SQLite builds
		for rows.Next() {
			var name string
			var n int64
			if rows.Scan(&name, &n) == nil {
				tables[name] = n
			}
		}
		rows.Close()
	}
	return (pages - free) * pageSize, tables
}

// postgresSize is the size of every table of the database (heap, indexes,
// TOAST and free-space maps), in total and by table with its indexes.
func postgresSize(b *testing.B, ctx context.Context, conn *pgx.Conn) (int64, map[string]int64) {
	rows, err := conn.Query(ctx, `SELECT schemaname || '.' || relname, pg_total_relation_size(relid) FROM pg_stat_user_tables`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	tables := map[string]int64{}
	var total int64
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		tables[name] = n
		total += n
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return total, tables
}
