package gate

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// BenchmarkStoredBytesPerRecord measures what the gate's SQLite file grows
// by per record ingested summary-only (1,000-record batches of
// shop.orders, every record accepted, 20 batches a partition), after a
// WAL checkpoint, and logs it by table:
//
//	go test ./services/gate -run '^$' -bench StoredBytesPerRecord -benchtime 100x
//
// It uses only the API that earlier versions of the gate had, so the same
// file measures them too.
func BenchmarkStoredBytesPerRecord(b *testing.B) {
	p := newPeers(b)
	p.knowCustomers()
	path := filepath.Join(b.TempDir(), "gate.db")
	e := startGate(b, p, "sqlite:"+path, nil)
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	size := func() (int64, map[string]int64) {
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
	before, beforeTables := size()
	data := orders{first: 1, n: 1000, amount: 85}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := data
		o.first = 1 + i*1000
		req := ingest("shop.orders", fmt.Sprintf("2025-03-%02d", 1+i/20), fmt.Sprint("b", i), o)
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
	after, afterTables := size()
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
