package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// ErrNotPostgres is returned by Pipeline on a store that is not PostgreSQL.
var ErrNotPostgres = errors.New("storage: a pipeline needs a PostgreSQL store")

// Pipeline sends b on one of the pool's PostgreSQL connections and hands
// its results to read, which must read every one of them in order. The
// whole batch is one round trip (pgx sends its statements pipelined and
// waits once); a batch that begins and commits a transaction is a
// transaction in one round trip, which database/sql, a statement and a
// wait at a time, cannot send.
//
// When read returns an error the transaction the batch began (if any) is
// rolled back before the connection goes back to the pool; a connection
// that cannot be rolled back is closed. Pipeline is measured as InTx's
// transactions are, as one attempt.
func (db *DB) Pipeline(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) (err error) {
	if db.Dialect != Postgres {
		return ErrNotPostgres
	}
	began := time.Now()
	defer func() { db.metrics.record(ctx, began, 1, err) }()
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		return fmt.Errorf("storage: take a connection: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("storage: pipeline: the driver's connection is a %T, not pgx's", dc)
		}
		c := sc.Conn()
		br := c.SendBatch(ctx, b)
		err := read(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == nil && c.PgConn().TxStatus() == 'I' {
			return nil
		}
		// A statement failed (the server skipped the rest, COMMIT
		// included), or the batch left a transaction open: roll it back,
		// on a context of its own since ctx may be what ended it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if c.PgConn().TxStatus() != 'I' {
			if _, rbErr := c.Exec(rctx, "ROLLBACK"); rbErr != nil || c.PgConn().TxStatus() != 'I' {
				// database/sql closes a connection whose function says it is bad.
				return errors.Join(err, fmt.Errorf("storage: roll back a pipeline: %w", rbErr), driver.ErrBadConn)
			}
		}
		if err == nil {
			err = errors.New("storage: a pipeline left its transaction open")
		}
		return err
	})
}
