package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seamdata/seam/platform/backoff"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// maxTxAttempts bounds InTx's retries: enough to ride out a burst of
// contention, few enough that a persistent conflict surfaces as an error.
const maxTxAttempts = 8

// ErrNotInTx is returned by Notify on SQLite for a transaction InTx did not
// start: only InTx knows when such a transaction commits.
var ErrNotInTx = errors.New("storage: transaction was not started by InTx")

// InTx runs fn in a transaction and commits it; it retries fn on serialization failures,
// deadlocks and SQLITE_BUSY a bounded number of times.
//
// fn may run more than once, so it must not have effects outside tx. When fn
// returns an error the transaction is rolled back and that error returned as is.
func (db *DB) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	// Full jitter keeps retrying writers from colliding again in step.
	retry := backoff.Backoff{Min: 2 * time.Millisecond, Max: 500 * time.Millisecond, Jitter: true}
	began, attempt := time.Now(), 0
	var err error
	defer func() { db.metrics.record(ctx, began, attempt, err) }()
	for attempt = 1; ; attempt++ {
		var channels []string
		channels, err = db.runTx(ctx, fn)
		if err == nil {
			db.broadcast(channels)
			return nil
		}
		if !retryable(err) || attempt == maxTxAttempts {
			break
		}
		if werr := retry.Wait(ctx); werr != nil {
			err = fmt.Errorf("storage: transaction retry abandoned: %w (last error: %w)", werr, err)
			return err
		}
	}
	if retryable(err) {
		err = fmt.Errorf("storage: transaction failed after %d attempts: %w", maxTxAttempts, err)
	}
	return err
}

// runTx runs one attempt of fn and returns the channels to notify in-process
// after its commit.
func (db *DB) runTx(ctx context.Context, fn func(tx *sql.Tx) error) ([]string, error) {
	if db.Dialect == SQLite {
		release, err := db.queueWriter(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	// PostgreSQL transactions run READ COMMITTED whatever the database's
	// default: every statement sees what committed before it, so a read
	// after taking a row lock sees the work of the transaction that held
	// the lock before (the gate's key index relies on it: a partition's
	// batches run one after the other under its row lock).
	var opts *sql.TxOptions
	if db.Dialect == Postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	tx, err := db.SQL.BeginTx(db.statementContext(ctx), opts)
	if err != nil {
		return nil, fmt.Errorf("storage: begin transaction: %w", err)
	}
	db.mu.Lock()
	db.pending[tx] = nil
	db.mu.Unlock()
	defer func() {
		db.mu.Lock()
		delete(db.pending, tx)
		db.mu.Unlock()
	}()

	if err := fn(tx); err != nil {
		if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
			return nil, errors.Join(err, fmt.Errorf("storage: roll back: %w", rbErr))
		}
		return nil, err
	}
	db.mu.Lock()
	channels := db.pending[tx]
	db.mu.Unlock()
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("storage: commit: %w", err)
	}
	return channels, nil
}

// queueWriter waits for this process's other SQLite writers: every
// transaction takes SQLite's write lock at BEGIN, so waiting here in
// order costs nothing and spares the busy handler's sleeps, which made
// two concurrent writers slower than one. After the busy timeout the
// transaction goes ahead and SQLite's own locking decides, as it does
// for writers in other processes.
func (db *DB) queueWriter(ctx context.Context) (release func(), err error) {
	t := time.NewTimer(sqliteBusyTimeoutMS * time.Millisecond)
	defer t.Stop()
	select {
	case db.writer <- struct{}{}:
		return func() { <-db.writer }, nil
	case <-t.C:
		return func() {}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("storage: wait for the write lock: %w", ctx.Err())
	}
}

// retryable reports whether err is a transient conflict that rerunning the
// whole transaction can resolve.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// serialization_failure, deadlock_detected
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		// Extended codes such as SQLITE_BUSY_SNAPSHOT keep the primary code
		// in the low byte.
		switch liteErr.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// statementContext is the context a statement runs under. On SQLite a
// statement that starts is not interrupted: a context that is already
// done fails it at once, as before, so a transaction stops at its next
// statement after its caller goes, but a context that ends while it runs
// no longer stops it, and a transaction whose function is done commits.
// The driver watched every statement's context with a goroutine of its
// own (and database/sql another per transaction), about fifteen for each
// batch the gate commits, each waking an idle core for nothing. SQLite
// statements here are short (row lookups and writes, each bounded by the
// busy timeout); Query, whose rows a caller may read for long, keeps its
// context. PostgreSQL's driver watches contexts without a goroutine per
// statement, and keeps them.
func (db *DB) statementContext(ctx context.Context) context.Context {
	if db.Dialect != SQLite || ctx.Err() != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
