package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// queryInt runs a query for one integer, such as a count, on db.
func queryInt(t *testing.T, db *storage.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.SQL.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// wantVersions checks that db records n versions of the "test" component.
func wantVersions(t *testing.T, db *storage.DB, n int, why string) {
	t.Helper()
	if got := queryInt(t, db, "SELECT count(*) FROM seam_migrations WHERE component = $1", "test"); got != n {
		t.Errorf("recorded versions = %d, want %d (%s)", got, n, why)
	}
}

// wantMigratedOnce checks that testMigrations took effect on db exactly
// once: both versions recorded and the seed rows inserted once.
func wantMigratedOnce(t *testing.T, db *storage.DB) {
	t.Helper()
	wantVersions(t, db, 2, "each version applied exactly once")
	if rows := queryInt(t, db, "SELECT count(*) FROM items"); rows != 2 {
		t.Errorf("items rows = %d, want 2 (the seed applied once)", rows)
	}
}

func open(t *testing.T, url string) *storage.DB {
	t.Helper()
	db, err := storage.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestOpenSQLiteURLForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		url  string
		file string
	}{
		{"sqlite prefix", "sqlite:" + filepath.Join(dir, "a.db"), filepath.Join(dir, "a.db")},
		{"file prefix", "file:" + filepath.Join(dir, "b.db"), filepath.Join(dir, "b.db")},
		{"bare path in new directory", filepath.Join(dir, "nested", "deeper", "c.db"), filepath.Join(dir, "nested", "deeper", "c.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := open(t, tt.url)
			if db.Dialect != storage.SQLite {
				t.Errorf("Dialect = %v, want sqlite", db.Dialect)
			}
			if sync := queryInt(t, db, "PRAGMA synchronous"); sync != 2 {
				t.Errorf("synchronous = %d, want 2 (FULL)", sync)
			}
			if fk := queryInt(t, db, "PRAGMA foreign_keys"); fk != 1 {
				t.Errorf("foreign_keys = %d, want 1", fk)
			}
			// A large partition's key index stays in the page cache, and
			// checkpoints copy a page rewritten by many commits once.
			cache, checkpoint := queryInt(t, db, "PRAGMA cache_size"), queryInt(t, db, "PRAGMA wal_autocheckpoint")
			if cache != -65536 || checkpoint != 10000 {
				t.Errorf("cache_size = %d, wal_autocheckpoint = %d; want -65536 (64 MB) and 10000 pages", cache, checkpoint)
			}
			if _, err := db.SQL.Exec("CREATE TABLE t (x INTEGER)"); err != nil {
				t.Fatalf("create table: %v", err)
			}
			if _, err := os.Stat(tt.file); err != nil {
				t.Errorf("database file %s: %v", tt.file, err)
			}
		})
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "sqlite:", "sqlite::memory:", "file:x.db?mode=ro"} {
		if db, err := storage.Open(context.Background(), url); err == nil {
			_ = db.Close()
			t.Errorf("Open(%q) = nil error, want an error", url)
		}
	}
}

var testMigrations = []storage.Migration{
	{Version: 1, Name: "items", SQLite: "CREATE TABLE items (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)",
		Postgres: "CREATE TABLE items (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)"},
	{Version: 2, Name: "items index and seed",
		SQLite:   "CREATE INDEX items_v ON items (v); INSERT INTO items (id, v) VALUES (1, 0), (2, 0);",
		Postgres: "CREATE INDEX items_v ON items (v); INSERT INTO items (id, v) VALUES (1, 0), (2, 0);"},
}

func TestMigrateIdempotent(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := open(t, url)
		for i := range 3 {
			if err := db.Migrate(ctx, "test", testMigrations); err != nil {
				t.Fatalf("Migrate run %d: %v", i+1, err)
			}
		}
		wantMigratedOnce(t, db)
	})
}

func TestMigrateConcurrentProcesses(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		// Each goroutine has its own handle, as separate processes would.
		const starters = 6
		dbs := make([]*storage.DB, starters)
		for i := range dbs {
			dbs[i] = open(t, url)
		}
		var wg sync.WaitGroup
		errs := make([]error, starters)
		for i, db := range dbs {
			wg.Go(func() {
				errs[i] = db.Migrate(ctx, "test", testMigrations)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("starter %d: Migrate: %v", i, err)
			}
		}
		wantMigratedOnce(t, dbs[0])
	})
}

func TestMigrateFailureRollsBackThatVersion(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := open(t, url)
		bad := append(append([]storage.Migration(nil), testMigrations[0]), storage.Migration{
			Version: 2, Name: "half broken",
			SQLite:   "CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1);",
			Postgres: "CREATE TABLE half (x INTEGER); INSERT INTO no_such_table VALUES (1);",
		})
		err := db.Migrate(ctx, "test", bad)
		if err == nil || !strings.Contains(err.Error(), "version 2 (half broken)") {
			t.Fatalf("Migrate with a broken version 2 = %v, want an error naming version 2 (half broken)", err)
		}
		wantVersions(t, db, 1, "version 1 kept, version 2 rolled back")
		if _, err := db.SQL.Exec("SELECT count(*) FROM half"); err == nil {
			t.Errorf("table half exists after its migration failed, want it rolled back")
		}
	})
}

func TestMigrateRejects(t *testing.T) {
	t.Parallel()
	db := open(t, storagetest.SQLiteURL(t))
	ctx := context.Background()
	if err := db.Migrate(ctx, "test", testMigrations[:1]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		component  string
		migrations []storage.Migration
		want       string
	}{
		{"empty component", "", testMigrations, "empty component"},
		{"version zero", "x", []storage.Migration{{Version: 0, Name: "z", SQLite: "SELECT 1", Postgres: "SELECT 1"}}, "strictly increasing"},
		{"versions out of order", "x", []storage.Migration{testMigrations[1], testMigrations[0]}, "strictly increasing"},
		{"no statements for dialect", "x", []storage.Migration{{Version: 1, Name: "pg only", Postgres: "SELECT 1"}}, "no sqlite statements"},
		{"renamed version", "test", []storage.Migration{{Version: 1, Name: "renamed", SQLite: "SELECT 1", Postgres: "SELECT 1"}}, `records version 1 as "items"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := db.Migrate(ctx, tt.component, tt.migrations)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Migrate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestInTxRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	db := open(t, storagetest.SQLiteURL(t))
	ctx := context.Background()
	tests := []struct {
		name         string
		fail         error
		failTimes    int
		wantAttempts int
		wantErr      bool
	}{
		{"serialization failure retried", &pgconn.PgError{Code: "40001"}, 2, 3, false},
		{"deadlock retried", fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "40P01"}), 1, 2, false},
		{"unique violation not retried", &pgconn.PgError{Code: "23505"}, 1, 1, true},
		{"plain error not retried", errors.New("boom"), 1, 1, true},
		{"retries are bounded", &pgconn.PgError{Code: "40001"}, 1000, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			attempts := 0
			err := db.InTx(ctx, func(tx *sql.Tx) error {
				attempts++
				if attempts <= tt.failTimes {
					return tt.fail
				}
				return nil
			})
			if attempts != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", attempts, tt.wantAttempts)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("InTx error = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, tt.fail) {
				t.Errorf("InTx error = %v, want it to wrap %v", err, tt.fail)
			}
		})
	}
}

func TestInTxConcurrentWritersLoseNothing(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		setup := open(t, url)
		if err := setup.Migrate(ctx, "test", testMigrations); err != nil {
			t.Fatal(err)
		}
		const writers, increments = 4, 25
		var wg sync.WaitGroup
		for range writers {
			db := open(t, url)
			wg.Go(func() {
				for range increments {
					err := db.InTx(ctx, func(tx *sql.Tx) error {
						var v int64
						// Read-modify-write: lost updates show up as a short count.
						// SQLite's BEGIN IMMEDIATE serialises writers; PostgreSQL
						// needs the row lock.
						query := "SELECT v FROM items WHERE id = 1"
						if db.Dialect == storage.Postgres {
							query += " FOR UPDATE"
						}
						if err := tx.QueryRowContext(ctx, query).Scan(&v); err != nil {
							return err
						}
						_, err := tx.ExecContext(ctx, "UPDATE items SET v = $1 WHERE id = 1", v+1)
						return err
					})
					if err != nil {
						t.Errorf("InTx: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if v := queryInt(t, setup, "SELECT v FROM items WHERE id = 1"); v != writers*increments {
			t.Errorf("counter = %d, want %d", v, writers*increments)
		}
	})
}

// TestInTxRetriesRealDeadlock makes PostgreSQL detect a deadlock between two
// transactions; InTx must rerun the victim so both writes land.
func TestInTxRetriesRealDeadlock(t *testing.T) {
	t.Parallel()
	url := storagetest.PostgresURL(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	if err := a.Migrate(ctx, "test", testMigrations); err != nil {
		t.Fatal(err)
	}
	var barrier sync.WaitGroup
	barrier.Add(2)
	var attempts atomic.Int32
	run := func(db *storage.DB, first, second int) error {
		try := 0
		return db.InTx(ctx, func(tx *sql.Tx) error {
			attempts.Add(1)
			try++
			if _, err := tx.ExecContext(ctx, "UPDATE items SET v = v + 1 WHERE id = $1", first); err != nil {
				return err
			}
			if try == 1 {
				// Both hold their first row before either asks for the second.
				barrier.Done()
				barrier.Wait()
			}
			_, err := tx.ExecContext(ctx, "UPDATE items SET v = v + 1 WHERE id = $1", second)
			return err
		})
	}
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = run(a, 1, 2) })
	wg.Go(func() { errB = run(b, 2, 1) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("InTx errors = %v, %v, want both nil after retrying the deadlock victim", errA, errB)
	}
	if got := attempts.Load(); got < 3 {
		t.Errorf("attempts = %d, want at least 3 (one deadlock victim rerun)", got)
	}
	if sum := queryInt(t, a, "SELECT sum(v) FROM items"); sum != 4 {
		t.Errorf("sum of counters = %d, want 4 (two transactions × two rows, each once)", sum)
	}
}

func TestNotifyListenSQLite(t *testing.T) {
	t.Parallel()
	db := open(t, storagetest.SQLiteURL(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := listen(t, ctx, db, "tables")
	other := listen(t, ctx, db, "other")

	// A rolled-back transaction notifies nobody.
	notifyRolledBack(t, ctx, db, "tables")
	expectQuiet(t, woken, "after a rolled-back Notify")

	// Two commits before the listener looks coalesce into one wake-up.
	for range 2 {
		if err := db.InTx(ctx, func(tx *sql.Tx) error { return db.Notify(ctx, tx, "tables") }); err != nil {
			t.Fatal(err)
		}
	}
	expectWake(t, woken, "after a committed Notify")
	expectQuiet(t, woken, "after coalesced Notifies were consumed")
	expectQuiet(t, other, "on a channel nobody notified")

	// Outside InTx nobody can tell when the transaction commits.
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := db.Notify(ctx, tx, "tables"); !errors.Is(err, storage.ErrNotInTx) {
		t.Errorf("Notify on a foreign tx = %v, want ErrNotInTx", err)
	}
	_ = tx.Rollback()

	cancel()
	expectClosed(t, woken)
}

func TestNotifyListenPostgresAcrossHandles(t *testing.T) {
	t.Parallel()
	url := storagetest.PostgresURL(t)
	writer, reader := open(t, url), open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := listen(t, ctx, reader, "idmap-tables")
	notifyRolledBack(t, ctx, writer, "idmap-tables")
	expectQuiet(t, woken, "after a rolled-back Notify")

	if err := writer.InTx(ctx, func(tx *sql.Tx) error { return writer.Notify(ctx, tx, "idmap-tables") }); err != nil {
		t.Fatal(err)
	}
	expectWake(t, woken, "on the other handle after a committed Notify")

	cancel()
	expectClosed(t, woken)
}

// listen subscribes to channel on db until ctx ends.
func listen(t *testing.T, ctx context.Context, db *storage.DB, channel string) <-chan struct{} {
	t.Helper()
	woken, err := db.Listen(ctx, channel)
	if err != nil {
		t.Fatal(err)
	}
	return woken
}

// notifyRolledBack notifies channel in a transaction that then rolls back.
func notifyRolledBack(t *testing.T, ctx context.Context, db *storage.DB, channel string) {
	t.Helper()
	rollback := errors.New("roll back")
	err := db.InTx(ctx, func(tx *sql.Tx) error {
		if err := db.Notify(ctx, tx, channel); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("InTx = %v, want %v", err, rollback)
	}
}

func expectWake(t *testing.T, ch <-chan struct{}, when string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("listener closed %s, want a wake-up", when)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up within 10s %s", when)
	}
}

func expectQuiet(t *testing.T, ch <-chan struct{}, when string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("got a wake-up %s, want none", when)
	case <-time.After(150 * time.Millisecond):
	}
}

func expectClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("listener channel still open 10s after its context ended")
		}
	}
}

// A SQLite writer waits in line behind this process's writer, and gives
// up when its context ends, before it begins a transaction; once the
// first commits, the next goes ahead.
func TestSQLiteWritersQueue(t *testing.T) {
	t.Parallel()
	db := open(t, storagetest.SQLiteURL(t))
	ctx := context.Background()
	if _, err := db.SQL.ExecContext(ctx, `CREATE TABLE q (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.InTx(ctx, func(tx *sql.Tx) error {
			close(holding)
			<-release
			_, err := tx.ExecContext(ctx, `INSERT INTO q VALUES (1)`)
			return err
		})
	}()
	<-holding
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	ran := false
	err := db.InTx(short, func(*sql.Tx) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("second writer while the first holds the lock: ran %v, err %v; want it to wait and give up with its context", ran, err)
	}
	second := make(chan error, 1)
	go func() {
		second <- db.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO q VALUES (2)`)
			return err
		})
	}()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM q`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after both writers: %d, %v; want 2", n, err)
	}
}

// A PostgreSQL transaction runs READ COMMITTED even on a database whose
// default isolation is another: callers read after taking row locks and
// count on seeing what committed before.
func TestInTxIsReadCommittedOnPostgres(t *testing.T) {
	t.Parallel()
	url := storagetest.PostgresURL(t)
	db := open(t, url)
	var current string
	if err := db.SQL.QueryRowContext(context.Background(), `SELECT current_database()`).Scan(&current); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(context.Background(), `ALTER DATABASE "`+current+`" SET default_transaction_isolation = 'serializable'`); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, url) // new connections take the database's new default
	var outside, inside string
	if err := fresh.SQL.QueryRowContext(context.Background(), `SHOW default_transaction_isolation`).Scan(&outside); err != nil {
		t.Fatal(err)
	}
	if err := fresh.InTx(context.Background(), func(tx *sql.Tx) error {
		return tx.QueryRowContext(context.Background(), `SHOW transaction_isolation`).Scan(&inside)
	}); err != nil {
		t.Fatal(err)
	}
	if outside != "serializable" || inside != "read committed" {
		t.Fatalf("database default %q, transaction %q; want serializable and read committed", outside, inside)
	}
}

// On SQLite a statement that starts runs to its end, and a transaction
// commits once its function is done, even when the context ends
// meanwhile; a context that has ended fails the next statement, and the
// transaction with it.
func TestSQLiteStatementsStopAtTheirBoundaries(t *testing.T) {
	t.Parallel()
	db := open(t, storagetest.SQLiteURL(t))
	bg := context.Background()
	if _, err := db.Exec(bg, nil, `CREATE TABLE s (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(bg, nil, `SELECT count(*) FROM s`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	done, cancel := context.WithCancel(bg)
	cancel()
	if _, err := db.Exec(done, nil, `INSERT INTO s VALUES (1)`); !errors.Is(err, context.Canceled) {
		t.Errorf("Exec with an ended context: %v, want context.Canceled", err)
	}
	var n int
	if err := db.QueryRow(done, nil, `SELECT count(*) FROM s`).Scan(&n); !errors.Is(err, context.Canceled) {
		t.Errorf("QueryRow with an ended context: %v, want context.Canceled", err)
	}
	if err := db.InTx(done, func(*sql.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("InTx with an ended context: %v, want context.Canceled", err)
	}

	// The caller goes after the transaction's last statement: it commits.
	ctx, cancel := context.WithCancel(bg)
	if err := db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := db.Exec(ctx, tx, `INSERT INTO s VALUES (2)`)
		cancel()
		return err
	}); err != nil {
		t.Fatalf("InTx whose context ends after its last statement: %v, want it committed", err)
	}
	if got := count(); got != 1 {
		t.Fatalf("%d rows after that transaction, want 1", got)
	}

	// The caller goes before a statement: it fails, and nothing commits.
	ctx, cancel = context.WithCancel(bg)
	err := db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := db.Exec(ctx, tx, `INSERT INTO s VALUES (3)`); err != nil {
			return err
		}
		cancel()
		_, err := db.Exec(ctx, tx, `INSERT INTO s VALUES (4)`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("InTx whose context ends between statements: %v, want context.Canceled", err)
	}
	if got := count(); got != 1 {
		t.Fatalf("%d rows after the cancelled transaction, want 1 (it rolled back)", got)
	}
}

// TestSQLiteGivesSpaceBack: a SQLite store is in incremental auto-vacuum,
// a file an older Seam created without it is converted when opened, and
// after rows are deleted ReclaimSpace shrinks the file.
func TestSQLiteGivesSpaceBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	// An older file: no auto-vacuum, with a table of 8 MB of rows.
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PRAGMA journal_mode=WAL", "CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)",
		"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 2000) INSERT INTO blobs (b) SELECT randomblob(4096) FROM n"} {
		if _, err := old.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	db := open(t, path)
	var mode int
	if err := db.SQL.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum = %d (%v) after opening an older file, want 2 (INCREMENTAL)", mode, err)
	}
	pages := func() int64 {
		var n int64
		if err := db.SQL.QueryRowContext(ctx, "PRAGMA page_count").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := pages()
	if _, err := db.SQL.ExecContext(ctx, "DELETE FROM blobs"); err != nil {
		t.Fatal(err)
	}
	if err := db.ReclaimSpace(ctx); err != nil {
		t.Fatal(err)
	}
	if after := pages(); after > before/10 {
		t.Errorf("the file has %d pages after deleting every row and reclaiming, had %d; want it to shrink", after, before)
	}
	fresh := open(t, filepath.Join(t.TempDir(), "new.db"))
	if err := fresh.SQL.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 2 {
		t.Errorf("auto_vacuum of a new file = %d (%v), want 2 (INCREMENTAL)", mode, err)
	}
}
