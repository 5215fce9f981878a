package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/seamdata/seam/platform/backoff"

	"github.com/jackc/pgx/v5"
)

// Notify wakes up listeners of channel once tx commits (PostgreSQL: pg_notify inside tx;
// SQLite: an in-process broadcast after commit, registered through the tx hook InTx provides).
//
// A notification carries no payload: it says "look again", and listeners
// read the tables as the truth, so a coalesced or repeated wake-up is harmless.
func (db *DB) Notify(ctx context.Context, tx *sql.Tx, channel string) error {
	if channel == "" {
		return fmt.Errorf("storage: notify: empty channel name")
	}
	if db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_notify($1, '')", channel); err != nil {
			return fmt.Errorf("storage: notify channel %q: %w", channel, err)
		}
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	channels, ok := db.pending[tx]
	if !ok {
		return fmt.Errorf("storage: notify channel %q: %w; run the write through DB.InTx", channel, ErrNotInTx)
	}
	db.pending[tx] = append(channels, channel)
	return nil
}

// Listen returns a channel that receives a value (coalesced, non-blocking send) after each
// committed Notify on channel, from any process on PostgreSQL (LISTEN on a dedicated pgx
// connection, reconnecting), in-process on SQLite; closed when ctx ends.
//
// On PostgreSQL the LISTEN is in place when Listen returns, so a Notify
// committed afterwards is never missed; after a reconnect the channel
// receives a value, because notifications sent while disconnected are lost.
func (db *DB) Listen(ctx context.Context, channel string) (<-chan struct{}, error) {
	if channel == "" {
		return nil, fmt.Errorf("storage: listen: empty channel name")
	}
	out := make(chan struct{}, 1)
	if db.Dialect == Postgres {
		conn, err := db.listenConn(ctx, channel)
		if err != nil {
			return nil, err
		}
		go db.pumpPostgres(ctx, conn, channel, out)
		return out, nil
	}
	db.mu.Lock()
	subs := db.listeners[channel]
	if subs == nil {
		subs = make(map[chan struct{}]struct{})
		db.listeners[channel] = subs
	}
	subs[out] = struct{}{}
	db.mu.Unlock()
	go func() {
		<-ctx.Done()
		db.mu.Lock()
		delete(db.listeners[channel], out)
		if len(db.listeners[channel]) == 0 {
			delete(db.listeners, channel)
		}
		// Closing under the lock: broadcast sends under it too, so no send
		// can race with the close.
		close(out)
		db.mu.Unlock()
	}()
	return out, nil
}

// broadcast wakes the in-process listeners of channels (SQLite only; on
// PostgreSQL the server delivers pg_notify to every listener, this one included).
func (db *DB) broadcast(channels []string) {
	if db.Dialect != SQLite || len(channels) == 0 {
		return
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, channel := range channels {
		for sub := range db.listeners[channel] {
			wake(sub)
		}
	}
}

// wake sends without blocking: a pending value already says "look again".
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// listenConn opens a dedicated connection and subscribes it to channel.
func (db *DB) listenConn(ctx context.Context, channel string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return nil, fmt.Errorf("storage: listen on %q: connect: %w", channel, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("storage: listen on %q: %w", channel, err)
	}
	return conn, nil
}

// pumpPostgres forwards notifications until ctx ends, reconnecting with
// backoff when the connection drops.
func (db *DB) pumpPostgres(ctx context.Context, conn *pgx.Conn, channel string, out chan struct{}) {
	defer close(out)
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second}
	for {
		if conn == nil {
			if retry.Wait(ctx) != nil {
				return
			}
			var err error
			conn, err = db.listenConn(ctx, channel)
			if err != nil {
				continue
			}
			retry.Reset()
			// Whatever was notified while we were away is lost: wake the
			// listener so it rereads the truth.
			wake(out)
		}
		_, err := conn.WaitForNotification(ctx)
		if err == nil {
			wake(out)
			continue
		}
		_ = conn.Close(context.Background())
		conn = nil
		if ctx.Err() != nil {
			return
		}
	}
}
