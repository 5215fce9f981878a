package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// maxPrepared bounds the statements a store keeps prepared. A service runs
// a fixed set of statement texts, far fewer; the bound only keeps a caller
// that builds texts as it goes from growing the set without end (the texts
// past it run as they are, parsed each time).
const maxPrepared = 256

// Exec runs query in tx, or outside a transaction when tx is nil, as
// tx.ExecContext or db.SQL.ExecContext would, through a statement prepared
// once per store (see stmt). On SQLite a statement that started runs to
// its end even if ctx ends meanwhile (see statementContext).
func (db *DB) Exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	ctx = db.statementContext(ctx)
	if s := db.stmt(ctx, tx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return db.textRunner(tx).ExecContext(ctx, query, args...)
}

// Query runs query like Exec, for its rows. While they are open, the same
// query must not run again on the same connection (in the same
// transaction): the rows are read from the one prepared statement.
func (db *DB) Query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if s := db.stmt(ctx, tx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return db.textRunner(tx).QueryContext(ctx, query, args...)
}

// QueryRow runs query like Exec, for at most one row, also to its end.
func (db *DB) QueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	ctx = db.statementContext(ctx)
	if s := db.stmt(ctx, tx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return db.textRunner(tx).QueryRowContext(ctx, query, args...)
}

// queryRunner runs a statement from its text: what database/sql's *sql.Tx
// and *sql.DB have in common.
type queryRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// textRunner returns tx, or the store's pool when tx is nil, for a query
// that runs without a prepared statement.
func (db *DB) textRunner(tx *sql.Tx) queryRunner {
	if tx != nil {
		return tx
	}
	return db.SQL
}

// stmt returns query's prepared statement, for use in tx when tx is not
// nil, or nil when query is to run as text.
//
// On SQLite the driver parses the text of every statement run without a
// prepared one, which was about 6% of the gate's CPU. A statement
// prepared on the store (database/sql's *sql.Stmt) is prepared again on
// each connection it runs on, once, and kept with it; tx.StmtContext takes
// the connection's one. On PostgreSQL pgx already keeps a prepared
// statement per connection and query text (its default statement cache),
// and drops it when a schema change invalidates it, which a statement
// prepared here would not: so there the text runs as it is.
//
// A statement that fails to prepare is not kept, and its text runs as it
// is, reporting the same error where it is used.
func (db *DB) stmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if db.Dialect != SQLite {
		return nil
	}
	db.stmtMu.Lock()
	s, ok := db.stmts[query]
	full := len(db.stmts) >= maxPrepared
	db.stmtMu.Unlock()
	if !ok {
		if full {
			return nil
		}
		// Not under stmtMu: preparing takes a connection of its own, and
		// other statements need not wait for it.
		var err error
		if s, err = db.SQL.PrepareContext(ctx, query); err != nil {
			return nil
		}
		db.stmtMu.Lock()
		switch old, ok := db.stmts[query]; {
		case ok: // prepared meanwhile by another caller
			db.stmtMu.Unlock()
			_ = s.Close()
			s = old
		case db.stmts == nil: // the store is closed
			db.stmtMu.Unlock()
			_ = s.Close()
			return nil
		default:
			db.stmts[query] = s
			db.stmtMu.Unlock()
		}
	}
	if tx != nil {
		return tx.StmtContext(ctx, s)
	}
	return s
}

// closeStmts closes the prepared statements; the store prepares no more.
func (db *DB) closeStmts() error {
	db.stmtMu.Lock()
	stmts := db.stmts
	db.stmts = nil
	db.stmtMu.Unlock()
	var first error
	for query, s := range stmts {
		if err := s.Close(); err != nil && first == nil {
			first = fmt.Errorf("storage: close prepared statement %q: %w", query, err)
		}
	}
	return first
}
