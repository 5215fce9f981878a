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
	"strings"
	"sync"

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

// sqliteBusyTimeoutMS is how long a SQLite connection waits for another
// writer before reporting SQLITE_BUSY; InTx retries on top of it.
const sqliteBusyTimeoutMS = 10000

// DB is an open store. Queries use $1, $2 placeholders, which both dialects accept.
type DB struct {
	SQL     *sql.DB // database/sql handle (modernc.org/sqlite, or pgx/v5/stdlib for PostgreSQL)
	Dialect Dialect

	// url is the PostgreSQL URL Listen opens its dedicated connections with.
	url string

	mu sync.Mutex
	// pending holds, per transaction InTx is running, the channels Notify
	// was called for; they are broadcast once that transaction commits.
	pending map[*sql.Tx][]string
	// listeners are the in-process subscribers per channel (SQLite).
	listeners map[string]map[chan struct{}]struct{}
}

// Open opens url: "postgres://…" or "postgresql://…" selects PostgreSQL through pgx;
// "sqlite:PATH" or "file:PATH" or a bare PATH selects SQLite (WAL, synchronous=FULL,
// busy_timeout, foreign_keys on), creating the directory if needed.
func Open(ctx context.Context, url string) (*DB, error) {
	if url == "" {
		return nil, errors.New("storage: open: empty store URL; pass postgres://… or a SQLite file path")
	}
	db := &DB{
		url:       url,
		pending:   make(map[*sql.Tx][]string),
		listeners: make(map[string]map[chan struct{}]struct{}),
	}
	var err error
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		db.Dialect = Postgres
		db.SQL, err = sql.Open("pgx", url)
		if err != nil {
			return nil, fmt.Errorf("storage: open PostgreSQL: %w", err)
		}
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
	}
	return db, nil
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
	// Every transaction takes the write lock at BEGIN, so two writers never
	// deadlock upgrading read locks; the second one waits for busy_timeout.
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode(), nil
}

// Close closes the store's connections.
func (db *DB) Close() error {
	if err := db.SQL.Close(); err != nil {
		return fmt.Errorf("storage: close %s store: %w", db.Dialect, err)
	}
	return nil
}
