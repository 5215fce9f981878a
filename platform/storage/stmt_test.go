package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"

	"github.com/seamdata/seam/platform/storage/storagetest"
)

// TestStatementsRunInTheirTransaction: on both dialects a statement run
// through Exec, Query or QueryRow with a transaction is part of it: its
// writes go when the transaction rolls back, and the transaction reads
// them before.
func TestStatementsRunInTheirTransaction(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := db.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		if _, err := db.Exec(ctx, nil, `CREATE TABLE t (k BIGINT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		count := func(tx *sql.Tx) int {
			var n int
			if err := db.QueryRow(ctx, tx, `SELECT count(*) FROM t WHERE k > $1`, 0).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		errRollBack := errors.New("roll back")
		for round := range 3 { // the first prepares, the others reuse
			err := db.InTx(ctx, func(tx *sql.Tx) error {
				for k := 1; k <= 2; k++ {
					if _, err := db.Exec(ctx, tx, `INSERT INTO t (k) VALUES ($1)`, k); err != nil {
						return err
					}
				}
				if got := count(tx); got != 2 {
					t.Errorf("round %d: the transaction sees %d rows it wrote, want 2", round, got)
				}
				rows, err := db.Query(ctx, tx, `SELECT k FROM t WHERE k > $1 ORDER BY k`, 1)
				if err != nil {
					return err
				}
				var ks []int64
				for rows.Next() {
					var k int64
					if err := rows.Scan(&k); err != nil {
						return errors.Join(err, rows.Close())
					}
					ks = append(ks, k)
				}
				if err := errors.Join(rows.Err(), rows.Close()); err != nil {
					return err
				}
				if len(ks) != 1 || ks[0] != 2 {
					t.Errorf("round %d: keys above 1 in the transaction %v, want [2]", round, ks)
				}
				return errRollBack
			})
			if !errors.Is(err, errRollBack) {
				t.Fatalf("round %d: InTx: %v, want the function's error", round, err)
			}
			if got := count(nil); got != 0 {
				t.Errorf("round %d: %d rows after the transaction rolled back, want 0", round, got)
			}
		}
	})
}

// TestSQLiteStatementsParsedOnce: statements run through Exec, Query and
// QueryRow, in transactions and outside them, are parsed by SQLite once per
// connection, not again for every transaction.
func TestSQLiteStatementsParsedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parses.db")
	db, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	dsn, err := sqliteDSN("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	// The same store, its connections counting what they hand SQLite to parse.
	if err := db.SQL.Close(); err != nil {
		t.Fatal(err)
	}
	var parses atomic.Int64
	db.SQL = sql.OpenDB(parseCounter{dsn: dsn, parses: &parses})
	if _, err := db.SQL.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}

	batch := func(i int) error {
		return db.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := db.Exec(ctx, tx, `INSERT INTO t (k, v) VALUES ($1, $2)`, i, "v"); err != nil {
				return err
			}
			var n int
			if err := db.QueryRow(ctx, tx, `SELECT count(*) FROM t WHERE k <= $1`, i).Scan(&n); err != nil {
				return err
			}
			if n != i {
				t.Errorf("batch %d: %d rows up to it, want %d", i, n, i)
			}
			rows, err := db.Query(ctx, tx, `SELECT k FROM t WHERE k > $1`, i-2)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return errors.Join(rows.Err(), rows.Close())
		})
	}
	read := func() error {
		var v string
		return db.QueryRow(ctx, nil, `SELECT v FROM t WHERE k = $1`, 1).Scan(&v)
	}

	// The first batches prepare the statements on the connections they use.
	for i := 1; i <= 3; i++ {
		if err := batch(i); err != nil {
			t.Fatal(err)
		}
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	warm := parses.Load()
	for i := 4; i <= 20; i++ {
		if err := batch(i); err != nil {
			t.Fatal(err)
		}
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	if got := parses.Load() - warm; got != 0 {
		t.Errorf("17 more transactions of the same 3 statements and 17 reads: SQLite parsed %d statements, want 0 (each prepared once)", got)
	}
}

// TestStatementsClosedWithStore: closing the store closes its prepared
// statements, and a statement run after that fails instead of preparing
// again.
func TestStatementsClosedWithStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "close.db"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(ctx, nil, `SELECT $1`, 7).Scan(&n); err != nil || n != 7 {
		t.Fatalf("SELECT $1 with 7: %d, %v; want 7", n, err)
	}
	db.stmtMu.Lock()
	prepared := len(db.stmts)
	db.stmtMu.Unlock()
	if prepared != 1 {
		t.Fatalf("%d statements prepared after one query, want 1", prepared)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, nil, `SELECT $1`, 7).Scan(&n); err == nil {
		t.Error("a query on the closed store: no error, want one")
	}
	if db.stmts != nil {
		t.Errorf("%d statements kept after Close, want none", len(db.stmts))
	}
}

// parseCounter connects to SQLite like the store does, counting the
// statement texts its connections are given to parse: each statement
// prepared, and each one run without a prepared statement.
type parseCounter struct {
	dsn    string
	parses *atomic.Int64
}

func (c parseCounter) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: conn, parses: c.parses}, nil
}

func (parseCounter) Driver() driver.Driver { return &sqlite.Driver{} }

type countingConn struct {
	driver.Conn
	parses *atomic.Int64
}

func (c countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.parses.Add(1)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.parses.Add(1)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.parses.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}
