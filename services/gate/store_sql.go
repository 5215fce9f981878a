package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seamdata/seam/platform/storage"
)

// sqlStore is gateStore over platform/storage: one implementation, one
// schema (schema.go), for the embedded SQLite file and PostgreSQL.
//
// The statements every batch runs go through db.Exec, Query and QueryRow,
// which prepare each once instead of having SQLite parse it per batch; the
// others run as text.
type sqlStore struct {
	db *storage.DB
	// keys caches the key index of the partitions in use; see
	// store_sql_keys.go.
	keys *keyCache
	// parts caches the partitions this process committed batches to, for
	// the commits pipelined on PostgreSQL; see store_sql_pipe.go.
	parts *partCache
}

// sqlTx is storeTx inside one of sqlStore's transactions.
type sqlTx struct {
	db    *storage.DB
	tx    *sql.Tx
	cache *keyCache
	// views are the key indexes this transaction used, by partition.
	views map[int64]*keyView
	// writes are what it wrote of each partition, by partition.
	writes map[int64]*partWrites
}

// wrote returns what t wrote of partition pid, to add to it.
func (t *sqlTx) wrote(pid int64) *partWrites {
	w := t.writes[pid]
	if w == nil {
		if t.writes == nil {
			t.writes = map[int64]*partWrites{}
		}
		w = &partWrites{}
		t.writes[pid] = w
	}
	return w
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// openStore opens the store at url, holding the key hashes of at most
// cachedKeys keys in memory (see store_sql_keys.go).
func openStore(ctx context.Context, url string, cachedKeys int) (*sqlStore, error) {
	db, err := storage.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, db); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &sqlStore{db: db, keys: newKeyCache(cachedKeys), parts: newPartCache()}, nil
}

func (s *sqlStore) Close() error {
	return s.db.Close()
}

func (s *sqlStore) InTx(ctx context.Context, fn func(tx storeTx) error) error {
	var t *sqlTx
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if t != nil {
			t.release(false) // an attempt before this one, rolled back
		}
		t = &sqlTx{db: s.db, tx: tx, cache: s.keys}
		return fn(t)
	})
	if t != nil {
		// Once committed, what the transaction wrote is what the caches
		// hold; else they keep what was committed before it.
		t.release(err == nil)
		if err == nil {
			s.parts.committed(t.writes)
		}
	}
	return err
}

func (s *sqlStore) Listen(ctx context.Context, channel string) (<-chan struct{}, error) {
	return s.db.Listen(ctx, channel)
}

func (t *sqlTx) Notify(ctx context.Context, channel string) error {
	return t.db.Notify(ctx, t.tx, channel)
}

func (s *sqlStore) SetContainment(ctx context.Context, c containment, action string, event outboxEvent) error {
	return s.InTx(ctx, func(tx storeTx) error { return tx.WriteContainment(ctx, c, action, event) })
}

func (t *sqlTx) WriteContainment(ctx context.Context, c containment, action string, event outboxEvent) error {
	at := c.Changed.UnixNano()
	if _, err := t.tx.ExecContext(ctx, `
INSERT INTO gate_containments (subject, contained, reason, principal, changed_at, automatic)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (subject) DO UPDATE SET contained = excluded.contained, reason = excluded.reason,
	principal = excluded.principal, changed_at = excluded.changed_at, automatic = excluded.automatic`,
		c.Subject, c.Contained, c.Reason, c.Principal, at, c.Automatic); err != nil {
		return fmt.Errorf("store containment of %s: %w", c.Subject, err)
	}
	if err := audit(ctx, t.tx, c.Changed, c.Principal, c.Subject, action, c.Reason); err != nil {
		return err
	}
	return t.Enqueue(ctx, event, c.Changed)
}

func (t *sqlTx) Audit(ctx context.Context, at time.Time, principal, subject, action, detail string) error {
	return audit(ctx, t.tx, at, principal, subject, action, detail)
}

const auditSQL = `INSERT INTO gate_audit (at, principal, subject, action, detail) VALUES ($1, $2, $3, $4, $5)`

// audit appends an entry to the gate's audit trail.
func audit(ctx context.Context, q querier, at time.Time, principal, subject, action, detail string) error {
	if _, err := q.ExecContext(ctx, auditSQL, at.UnixNano(), principal, subject, action, detail); err != nil {
		return fmt.Errorf("audit %s of %s: %w", action, subject, err)
	}
	return nil
}

const enqueueSQL = `INSERT INTO gate_outbox (event_id, payload, created_at) VALUES ($1, $2, $3)`

func (t *sqlTx) Enqueue(ctx context.Context, e outboxEvent, at time.Time) error {
	if _, err := t.tx.ExecContext(ctx, enqueueSQL, e.EventID, e.Payload, at.UnixNano()); err != nil {
		return fmt.Errorf("queue registry event %s: %w", e.EventID, err)
	}
	return t.Notify(ctx, outboxChannel)
}

func (s *sqlStore) QueueEventOnce(ctx context.Context, e outboxEvent, at time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO gate_outbox (event_id, payload, created_at) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING`,
			e.EventID, e.Payload, at.UnixNano()); err != nil {
			return fmt.Errorf("queue registry event %s: %w", e.EventID, err)
		}
		return s.db.Notify(ctx, tx, outboxChannel)
	})
}

func (s *sqlStore) Containment(ctx context.Context, subject string) (containment, bool, error) {
	return readContainment(ctx, s.db, nil, subject)
}

func (t *sqlTx) Containment(ctx context.Context, subject string) (containment, bool, error) {
	return readContainment(ctx, t.db, t.tx, subject)
}

// readContainment reads subject's containment in tx, or outside a
// transaction when tx is nil; every batch reads it.
func readContainment(ctx context.Context, db *storage.DB, tx *sql.Tx, subject string) (containment, bool, error) {
	var c containment
	var at int64
	err := db.QueryRow(ctx, tx, `SELECT subject, contained, reason, principal, changed_at, automatic FROM gate_containments WHERE subject = $1`, subject).
		Scan(&c.Subject, &c.Contained, &c.Reason, &c.Principal, &at, &c.Automatic)
	if errors.Is(err, sql.ErrNoRows) {
		return containment{}, false, nil
	}
	if err != nil {
		return containment{}, false, fmt.Errorf("read containment of %s: %w", subject, err)
	}
	c.Changed = time.Unix(0, at)
	return c, true, nil
}

func (s *sqlStore) Containments(ctx context.Context) ([]containment, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT subject, contained, reason, principal, changed_at, automatic FROM gate_containments ORDER BY subject`)
	return storage.ScanRows(rows, err, "list containments", func(row storage.Row) (containment, error) {
		var c containment
		var at int64
		if err := row.Scan(&c.Subject, &c.Contained, &c.Reason, &c.Principal, &at, &c.Automatic); err != nil {
			return c, err
		}
		c.Changed = time.Unix(0, at)
		return c, nil
	})
}

func (s *sqlStore) PendingEvents(ctx context.Context, limit int) ([]outboxEvent, error) {
	rows, err := s.db.Query(ctx, nil, `SELECT seq, event_id, payload FROM gate_outbox WHERE delivered_at IS NULL ORDER BY seq LIMIT $1`, limit)
	return storage.ScanRows(rows, err, "read outbox", func(row storage.Row) (outboxEvent, error) {
		var e outboxEvent
		err := row.Scan(&e.Seq, &e.EventID, &e.Payload)
		return e, err
	})
}

func (s *sqlStore) OutboxBacklog(ctx context.Context) (int64, time.Time, error) {
	var n int64
	var oldest sql.NullInt64
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT COUNT(*), MIN(created_at) FROM gate_outbox WHERE delivered_at IS NULL`).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count the outbox: %w", err)
	}
	if !oldest.Valid {
		return n, time.Time{}, nil
	}
	return n, time.Unix(0, oldest.Int64), nil
}

func (s *sqlStore) MarkDelivered(ctx context.Context, seq, registrySeq int64, at time.Time) error {
	if _, err := s.db.SQL.ExecContext(ctx, `UPDATE gate_outbox SET delivered_at = $1, registry_seq = $2 WHERE seq = $3`, at.UnixNano(), registrySeq, seq); err != nil {
		return fmt.Errorf("mark outbox event %d delivered: %w", seq, err)
	}
	return nil
}

func (s *sqlStore) RegistrySeq(ctx context.Context, eventID string) (int64, error) {
	var seq sql.NullInt64
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT registry_seq FROM gate_outbox WHERE event_id = $1`, eventID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read delivery of event %s: %w", eventID, err)
	}
	return seq.Int64, nil
}

func (s *sqlStore) PutContract(ctx context.Context, v storedVersion, contract []byte, at time.Time) error {
	var data int64
	if !v.dataEffective.IsZero() {
		data = v.dataEffective.UnixNano()
	}
	if _, err := s.db.SQL.ExecContext(ctx, `INSERT INTO gate_contracts (subject, version, contract, fetched_at, status, effective_at, data_effective_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (subject, version) DO UPDATE SET status = excluded.status, effective_at = excluded.effective_at, data_effective_at = excluded.data_effective_at`,
		v.subject, v.version, contract, at.UnixNano(), int32(v.status), v.effective.UnixNano(), data); err != nil {
		return fmt.Errorf("store %s version %d: %w", v.subject, v.version, err)
	}
	return nil
}

func (s *sqlStore) SetActive(ctx context.Context, subject string, version int32, at time.Time) error {
	if _, err := s.db.SQL.ExecContext(ctx, `INSERT INTO gate_active (subject, version, fetched_at) VALUES ($1, $2, $3)
ON CONFLICT (subject) DO UPDATE SET version = excluded.version, fetched_at = excluded.fetched_at`, subject, version, at.UnixNano()); err != nil {
		return fmt.Errorf("store active version of %s: %w", subject, err)
	}
	return nil
}

func (s *sqlStore) Contract(ctx context.Context, subject string, version int32) ([]byte, bool, error) {
	var b []byte
	err := s.db.SQL.QueryRowContext(ctx, `SELECT contract FROM gate_contracts WHERE subject = $1 AND version = $2`, subject, version).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read stored %s version %d: %w", subject, version, err)
	}
	return b, true, nil
}

func (s *sqlStore) ActiveContracts(ctx context.Context) (map[string]activeEntry, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT subject, version, fetched_at FROM gate_active`)
	if err != nil {
		return nil, fmt.Errorf("read last known contracts: %w", err)
	}
	defer rows.Close()
	out := map[string]activeEntry{}
	for rows.Next() {
		var subject string
		var version int32
		var at int64
		if err := rows.Scan(&subject, &version, &at); err != nil {
			return nil, fmt.Errorf("read last known contracts: %w", err)
		}
		out[subject] = activeEntry{version: version, fetched: time.Unix(0, at)}
	}
	return out, rows.Err()
}
