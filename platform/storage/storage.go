// Package storage opens Seam's SQL stores: the embedded SQLite file (default,
// zero setup, crash-safe) and PostgreSQL (shared by replicas), and runs
// versioned schema migrations on them.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	// The pgx stdlib driver registers "pgx" with database/sql.
	_ "github.com/jackc/pgx/v5/stdlib"
	// modernc.org/sqlite is pure Go, so the embedded store needs no cgo.
	_ "modernc.org/sqlite"
)

// Dialect is the SQL flavour of an open store.
type Dialect int

const (
	// SQLite is the embedded single-file store.
	SQLite Dialect = iota + 1
	// Postgres is the shared store several replicas may use at once.
	Postgres
)

// String returns the dialect's name as used in URLs and test names.
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	default:
		return fmt.Sprintf("Dialect(%d)", int(d))
	}
}

// Pool holds the limits of a PostgreSQL store's connection pool. They are
// given as query parameters of the store URL, named as pgxpool names them,
// and removed from it before it reaches the driver:
//
//	postgres://seam@db/seam?pool_max_conns=20&pool_max_conn_lifetime=30m
//
// Each replica of each service opens its own pool (plus one connection for
// LISTEN), so max_connections of the server must cover replicas × services
// × pool_max_conns.
type Pool struct {
	// MaxConns bounds open connections (pool_max_conns).
	MaxConns int
	// MaxIdleConns bounds connections kept open while idle
	// (pool_max_idle_conns).
	MaxIdleConns int
	// MaxConnLifetime closes a connection after this long, so connections
	// move to a new primary or pooler (pool_max_conn_lifetime).
	MaxConnLifetime time.Duration
	// MaxConnIdleTime closes a connection idle this long
	// (pool_max_conn_idle_time).
	MaxConnIdleTime time.Duration
}

// The pool of a PostgreSQL store whose URL sets no limit.
const (
	DefaultPoolMaxConns        = 10
	DefaultPoolMaxIdleConns    = 5
	DefaultPoolMaxConnLifetime = 30 * time.Minute
	DefaultPoolMaxConnIdleTime = 5 * time.Minute
)

// splitPool takes the pool parameters out of a PostgreSQL URL.
func splitPool(raw string) (string, Pool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", Pool{}, fmt.Errorf("storage: PostgreSQL URL: %w", err)
	}
	p := Pool{MaxConns: DefaultPoolMaxConns, MaxIdleConns: DefaultPoolMaxIdleConns,
		MaxConnLifetime: DefaultPoolMaxConnLifetime, MaxConnIdleTime: DefaultPoolMaxConnIdleTime}
	q := u.Query()
	for _, name := range []string{"pool_max_conns", "pool_max_idle_conns", "pool_max_conn_lifetime", "pool_max_conn_idle_time"} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		q.Del(name)
		switch name {
		case "pool_max_conns", "pool_max_idle_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (name == "pool_max_conns" && n == 0) {
				return "", Pool{}, fmt.Errorf("storage: PostgreSQL URL: %s=%q: want a whole number of connections (pool_max_conns at least 1)", name, v)
			}
			if name == "pool_max_conns" {
				p.MaxConns = n
			} else {
				p.MaxIdleConns = n
			}
		default:
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return "", Pool{}, fmt.Errorf("storage: PostgreSQL URL: %s=%q: want a duration such as 30m", name, v)
			}
			if name == "pool_max_conn_lifetime" {
				p.MaxConnLifetime = d
			} else {
				p.MaxConnIdleTime = d
			}
		}
	}
	p.MaxIdleConns = min(p.MaxIdleConns, p.MaxConns)
	u.RawQuery = q.Encode()
	return u.String(), p, nil
}

// sqliteBusyTimeoutMS is how long a SQLite connection waits for another
// writer before reporting SQLITE_BUSY; InTx retries on top of it.
const sqliteBusyTimeoutMS = 10000

// sqliteCacheKiB bounds one SQLite connection's page cache, and
// sqliteCheckpointPages is how many WAL pages a commit leaves before it
// checkpoints them into the database file (see sqliteDSN).
const (
	sqliteCacheKiB        = 64 << 10
	sqliteCheckpointPages = 10000
)

// DB is an open store. Queries use $1, $2 placeholders, which both dialects accept.
// Statements a service runs often go through Exec, Query and QueryRow, which
// prepare each once.
type DB struct {
	SQL     *sql.DB // database/sql handle (modernc.org/sqlite, or pgx/v5/stdlib for PostgreSQL)
	Dialect Dialect

	// url is the PostgreSQL URL Listen opens its dedicated connections with.
	url string
	// Pool is the connection pool's limits (PostgreSQL).
	Pool Pool

	// writer is held by the InTx transaction writing to a SQLite store, so
	// this process's writers queue in order instead of polling SQLite's
	// lock (its busy handler sleeps in steps of up to 100ms).
	writer chan struct{}

	mu sync.Mutex
	// pending holds, per transaction InTx is running, the channels Notify
	// was called for; they are broadcast once that transaction commits.
	pending map[*sql.Tx][]string
	// listeners are the in-process subscribers per channel (SQLite).
	listeners map[string]map[chan struct{}]struct{}
	// metrics measure InTx's transactions.
	metrics *txMetrics

	stmtMu sync.Mutex
	// stmts are the statements Exec, Query and QueryRow prepared, by
	// query text (SQLite; see stmt); nil once the store is closed.
	stmts map[string]*sql.Stmt
}

// Open opens url: "postgres://…" or "postgresql://…" selects PostgreSQL through pgx;
// "sqlite:PATH" or "file:PATH" or a bare PATH selects SQLite (WAL, synchronous=FULL,
// busy_timeout, foreign_keys on), creating the directory if needed.
func Open(ctx context.Context, url string) (*DB, error) {
	if url == "" {
		return nil, errors.New("storage: open: empty store URL; pass postgres://… or a SQLite file path")
	}
	db := &DB{
		writer:    make(chan struct{}, 1),
		url:       url,
		pending:   make(map[*sql.Tx][]string),
		listeners: make(map[string]map[chan struct{}]struct{}),
		stmts:     make(map[string]*sql.Stmt),
	}
	var err error
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		db.Dialect = Postgres
		if db.url, db.Pool, err = splitPool(url); err != nil {
			return nil, err
		}
		db.SQL, err = sql.Open("pgx", db.url)
		if err != nil {
			return nil, fmt.Errorf("storage: open PostgreSQL: %w", err)
		}
		db.SQL.SetMaxOpenConns(db.Pool.MaxConns)
		db.SQL.SetMaxIdleConns(db.Pool.MaxIdleConns)
		db.SQL.SetConnMaxLifetime(db.Pool.MaxConnLifetime)
		db.SQL.SetConnMaxIdleTime(db.Pool.MaxConnIdleTime)
	} else {
		db.Dialect = SQLite
		dsn, err := sqliteDSN(url)
		if err != nil {
			return nil, err
		}
		db.SQL, err = sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("storage: open SQLite %q: %w", url, err)
		}
	}
	db.metrics = defaultTxMetrics(db.Dialect)
	if err := db.SQL.PingContext(ctx); err != nil {
		_ = db.SQL.Close()
		return nil, fmt.Errorf("storage: connect to %s store: %w", db.Dialect, err)
	}
	if db.Dialect == SQLite {
		// The journal mode is a property of the file; read it back so a file
		// system that cannot do WAL fails here, not at the first crash.
		var mode string
		if err := db.SQL.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			_ = db.SQL.Close()
			return nil, fmt.Errorf("storage: read SQLite journal mode: %w", err)
		}
		if !strings.EqualFold(mode, "wal") {
			_ = db.SQL.Close()
			return nil, fmt.Errorf("storage: SQLite file %q is in journal mode %q, want wal (is the directory on a local file system?)", url, mode)
		}
		if err := db.incrementalVacuum(ctx); err != nil {
			_ = db.SQL.Close()
			return nil, fmt.Errorf("storage: SQLite file %q: %w", url, err)
		}
	}
	return db, nil
}

// incrementalVacuum puts the SQLite file in incremental auto-vacuum, so
// ReclaimSpace can give the pages retention frees back to the file
// system. The mode is a property of the file, set by a VACUUM on the
// connection that asked for it: at once for a new file, as long as copying
// it for a file an older Seam created. (It is not a pragma of every
// connection: setting it writes, and a connection opened inside a write
// transaction would wait for that transaction.)
func (db *DB) incrementalVacuum(ctx context.Context) error {
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		return fmt.Errorf("read auto_vacuum: %w", err)
	}
	defer conn.Close()
	var mode int
	if err := conn.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return fmt.Errorf("read auto_vacuum: %w", err)
	}
	const incremental = 2
	if mode == incremental {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("rebuild for incremental auto_vacuum: %w", err)
	}
	return nil
}

// ReclaimSpace gives the file system back the pages deleted rows freed:
// SQLite (in incremental auto-vacuum) truncates its file; PostgreSQL
// reuses freed space itself and its autovacuum returns it, so there it
// does nothing (see docs/operations.md).
func (db *DB) ReclaimSpace(ctx context.Context) error {
	if db.Dialect != SQLite {
		return nil
	}
	if _, err := db.SQL.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
		return fmt.Errorf("storage: reclaim free pages: %w", err)
	}
	return nil
}

// sqliteDSN turns a store URL into a modernc.org/sqlite DSN with the pragmas
// that make commits durable and concurrent writers wait instead of failing.
func sqliteDSN(raw string) (string, error) {
	path := raw
	for _, prefix := range []string{"sqlite://", "sqlite:", "file:"} {
		if strings.HasPrefix(path, prefix) {
			path = strings.TrimPrefix(path, prefix)
			break
		}
	}
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" {
		return "", fmt.Errorf("storage: SQLite store URL %q: want sqlite:PATH, file:PATH or a file path without query or fragment", raw)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("storage: create directory of SQLite file %q: %w", path, err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeoutMS))
	q.Add("_pragma", "journal_mode(WAL)")
	// FULL, not NORMAL: in WAL mode NORMAL may lose the last commits on power
	// loss, and an acknowledged write must survive.
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Statement journals (the undo of one statement inside a transaction,
	// such as an INSERT … ON CONFLICT) stay in memory, not in temporary
	// files; they never outlive their transaction, so nothing durable
	// changes.
	q.Add("_pragma", "temp_store(MEMORY)")
	// A partition's key index is a B-tree of random hashes: a batch's keys
	// land on as many leaves as it has keys. With SQLite's default 2 MB
	// page cache a large partition's leaves were read from the file again
	// for every batch; 64 MB (at most, per connection, filled only as
	// used) keeps an index of a few million keys in memory.
	q.Add("_pragma", fmt.Sprintf("cache_size(%d)", -sqliteCacheKiB))
	// Those leaves are rewritten by commit after commit. Checkpointing
	// every 1,000 WAL pages (the default) copied nearly each commit's
	// pages back into the database file, with an fsync; every 10,000
	// pages (about 40 MB of WAL) copies a page rewritten by many commits
	// once. Durability is unchanged: a commit is durable in the WAL.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", sqliteCheckpointPages))
	// Every transaction takes the write lock at BEGIN, so two writers never
	// deadlock upgrading read locks; the second one waits for busy_timeout.
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode(), nil
}

// Close closes the store's prepared statements and connections.
func (db *DB) Close() error {
	stmtErr := db.closeStmts()
	if err := db.SQL.Close(); err != nil {
		return errors.Join(stmtErr, fmt.Errorf("storage: close %s store: %w", db.Dialect, err))
	}
	return stmtErr
}
