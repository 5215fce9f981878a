package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seamdata/seam/platform/storage"
)

// outboxChannel wakes the relay when a transaction adds registry events.
const outboxChannel = "seam_gate_outbox"

// migrations is the gate's schema, oldest first. Never edit a released
// version; add a new one.
var migrations = []storage.Migration{{
	Version: 1,
	Name:    "containment and outbox",
	SQLite: `
CREATE TABLE gate_containments (
	subject    TEXT PRIMARY KEY,
	contained  INTEGER NOT NULL,
	reason     TEXT NOT NULL,
	principal  TEXT NOT NULL,
	changed_at INTEGER NOT NULL,
	automatic  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE gate_audit (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	at         INTEGER NOT NULL,
	principal  TEXT NOT NULL,
	subject    TEXT NOT NULL,
	action     TEXT NOT NULL,
	detail     TEXT NOT NULL
);
CREATE TABLE gate_outbox (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id     TEXT NOT NULL UNIQUE,
	payload      BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	delivered_at INTEGER
);
CREATE INDEX gate_outbox_pending ON gate_outbox (seq) WHERE delivered_at IS NULL;`,
	Postgres: `
CREATE TABLE gate_containments (
	subject    TEXT PRIMARY KEY,
	contained  BOOLEAN NOT NULL,
	reason     TEXT NOT NULL,
	principal  TEXT NOT NULL,
	changed_at BIGINT NOT NULL,
	automatic  BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE TABLE gate_audit (
	seq        BIGSERIAL PRIMARY KEY,
	at         BIGINT NOT NULL,
	principal  TEXT NOT NULL,
	subject    TEXT NOT NULL,
	action     TEXT NOT NULL,
	detail     TEXT NOT NULL
);
CREATE TABLE gate_outbox (
	seq          BIGSERIAL PRIMARY KEY,
	event_id     TEXT NOT NULL UNIQUE,
	payload      BYTEA NOT NULL,
	created_at   BIGINT NOT NULL,
	delivered_at BIGINT
);
CREATE INDEX gate_outbox_pending ON gate_outbox (seq) WHERE delivered_at IS NULL;`,
}, {
	Version:  2,
	Name:     "ingest, quarantine, monitors, alerts and contract cache",
	SQLite:   schemaV2("INTEGER", "BLOB", "REAL", "INTEGER PRIMARY KEY AUTOINCREMENT"),
	Postgres: schemaV2("BIGINT", "BYTEA", "DOUBLE PRECISION", "BIGSERIAL PRIMARY KEY"),
}}

// schemaV2 is migration 2 in either dialect: the types differ, the tables
// do not. The column "part" holds the partition (PARTITION is a keyword).
func schemaV2(integer, blob, real, serial string) string {
	return strings.NewReplacer("$INT", integer, "$BLOB", blob, "$REAL", real, "$SERIAL", serial).Replace(`
CREATE TABLE gate_contracts (
	subject    TEXT NOT NULL,
	version    $INT NOT NULL,
	contract   $BLOB NOT NULL,
	fetched_at $INT NOT NULL,
	PRIMARY KEY (subject, version)
);
CREATE TABLE gate_active (
	subject    TEXT PRIMARY KEY,
	version    $INT NOT NULL,
	fetched_at $INT NOT NULL
);
CREATE TABLE gate_batches (
	subject          TEXT NOT NULL,
	part             TEXT NOT NULL,
	batch_id         TEXT NOT NULL,
	status           $INT NOT NULL,
	contract_version $INT NOT NULL,
	received         $INT NOT NULL,
	accepted         $INT NOT NULL,
	quarantined      $INT NOT NULL,
	response         $BLOB NOT NULL,
	created_at       $INT NOT NULL,
	PRIMARY KEY (subject, part, batch_id)
);
CREATE TABLE gate_quarantine (
	id               TEXT PRIMARY KEY,
	subject          TEXT NOT NULL,
	part             TEXT NOT NULL,
	batch_id         TEXT NOT NULL,
	idx              $INT NOT NULL,
	position         $INT NOT NULL,
	contract_version $INT NOT NULL,
	format           $INT NOT NULL,
	raw              $BLOB NOT NULL,
	reasons          $BLOB NOT NULL,
	reason           TEXT NOT NULL,
	reason_codes     TEXT NOT NULL,
	check_name       TEXT NOT NULL,
	check_names      TEXT NOT NULL,
	id_state         $INT NOT NULL,
	created_at       $INT NOT NULL,
	state            $INT NOT NULL,
	state_at         $INT NOT NULL,
	state_reason     TEXT NOT NULL DEFAULT '',
	state_by         TEXT NOT NULL DEFAULT '',
	replay_id        TEXT,
	record_id        TEXT,
	canonical        $BLOB
);
CREATE INDEX gate_quarantine_window ON gate_quarantine (subject, state, part, batch_id, idx);
CREATE INDEX gate_quarantine_replay ON gate_quarantine (replay_id, part) WHERE replay_id IS NOT NULL;
CREATE TABLE gate_partitions (
	subject     TEXT NOT NULL,
	part        TEXT NOT NULL,
	received    $INT NOT NULL DEFAULT 0,
	accepted    $INT NOT NULL DEFAULT 0,
	quarantined $INT NOT NULL DEFAULT 0,
	blocked     $INT NOT NULL DEFAULT 0,
	released    $INT NOT NULL DEFAULT 0,
	batches     $INT NOT NULL DEFAULT 0,
	id_checked  $INT NOT NULL DEFAULT 0,
	id_matched  $INT NOT NULL DEFAULT 0,
	updated_at  $INT NOT NULL,
	PRIMARY KEY (subject, part)
);
CREATE TABLE gate_field_stats (
	subject  TEXT NOT NULL,
	part     TEXT NOT NULL,
	field    TEXT NOT NULL,
	count    $INT NOT NULL,
	nulls    $INT NOT NULL,
	numbers  $INT NOT NULL,
	total    $REAL NOT NULL,
	ids      $INT NOT NULL,
	matched  $INT NOT NULL,
	PRIMARY KEY (subject, part, field)
);
CREATE TABLE gate_alerts (
	seq        $SERIAL,
	dedupe     TEXT NOT NULL UNIQUE,
	at         $INT NOT NULL,
	subject    TEXT NOT NULL,
	part       TEXT NOT NULL,
	check_name TEXT NOT NULL,
	kind       TEXT NOT NULL,
	severity   $INT NOT NULL,
	message    TEXT NOT NULL,
	observed   $REAL,
	baseline   $REAL,
	field      TEXT NOT NULL,
	count      $INT NOT NULL,
	first_seen $INT NOT NULL,
	batch_id   TEXT NOT NULL
);
CREATE INDEX gate_alerts_subject ON gate_alerts (subject, seq);
CREATE TABLE gate_shapes (
	subject    TEXT NOT NULL,
	field      TEXT NOT NULL,
	shape      TEXT NOT NULL,
	first_seen $INT NOT NULL,
	batch_id   TEXT NOT NULL,
	PRIMARY KEY (subject, field, shape)
);
ALTER TABLE gate_outbox ADD COLUMN registry_seq $INT;`)
}

// containment is a row of gate_containments.
type containment struct {
	Subject   string
	Contained bool
	Reason    string
	Principal string
	Changed   time.Time
	Automatic bool
}

// outboxEvent is an event waiting to be delivered to the registry.
type outboxEvent struct {
	Seq     int64
	EventID string
	Payload []byte
}

// store is the gate's durable state over platform/storage; one
// implementation serves SQLite and PostgreSQL.
type store struct {
	db *storage.DB
}

func openStore(ctx context.Context, url string) (*store, error) {
	db, err := storage.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return &store{db: db}, nil
}

func (s *store) Close() error { return s.db.Close() }

// setContainment records a containment change, its audit entry and the
// registry event announcing it, in one transaction.
func (s *store) setContainment(ctx context.Context, c containment, action string, event outboxEvent) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error { return s.writeContainment(ctx, tx, c, action, event) })
}

// writeContainment is setContainment inside a caller's transaction (the
// gate contains a source automatically inside a batch's transaction).
func (s *store) writeContainment(ctx context.Context, tx *sql.Tx, c containment, action string, event outboxEvent) error {
	{
		at := c.Changed.UnixNano()
		if _, err := tx.ExecContext(ctx, `
INSERT INTO gate_containments (subject, contained, reason, principal, changed_at, automatic)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (subject) DO UPDATE SET contained = excluded.contained, reason = excluded.reason,
	principal = excluded.principal, changed_at = excluded.changed_at, automatic = excluded.automatic`,
			c.Subject, c.Contained, c.Reason, c.Principal, at, c.Automatic); err != nil {
			return fmt.Errorf("store containment of %s: %w", c.Subject, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gate_audit (at, principal, subject, action, detail) VALUES ($1, $2, $3, $4, $5)`,
			at, c.Principal, c.Subject, action, c.Reason); err != nil {
			return fmt.Errorf("audit %s of %s: %w", action, c.Subject, err)
		}
		return s.enqueue(ctx, tx, event, at)
	}
}

// enqueue adds an event to the outbox inside tx.
func (s *store) enqueue(ctx context.Context, tx *sql.Tx, e outboxEvent, at int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO gate_outbox (event_id, payload, created_at) VALUES ($1, $2, $3)`,
		e.EventID, e.Payload, at); err != nil {
		return fmt.Errorf("queue registry event %s: %w", e.EventID, err)
	}
	return s.db.Notify(ctx, tx, outboxChannel)
}

// getContainment returns the containment row of subject, or ok=false.
func (s *store) getContainment(ctx context.Context, subject string) (containment, bool, error) {
	var c containment
	var at int64
	err := s.db.SQL.QueryRowContext(ctx, `SELECT subject, contained, reason, principal, changed_at, automatic FROM gate_containments WHERE subject = $1`, subject).
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

// listContainments returns every subject that was ever contained.
func (s *store) listContainments(ctx context.Context) ([]containment, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT subject, contained, reason, principal, changed_at, automatic FROM gate_containments ORDER BY subject`)
	if err != nil {
		return nil, fmt.Errorf("list containments: %w", err)
	}
	defer rows.Close()
	var out []containment
	for rows.Next() {
		var c containment
		var at int64
		if err := rows.Scan(&c.Subject, &c.Contained, &c.Reason, &c.Principal, &at, &c.Automatic); err != nil {
			return nil, fmt.Errorf("list containments: %w", err)
		}
		c.Changed = time.Unix(0, at)
		out = append(out, c)
	}
	return out, rows.Err()
}

// pendingEvents returns up to limit undelivered events, oldest first.
func (s *store) pendingEvents(ctx context.Context, limit int) ([]outboxEvent, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT seq, event_id, payload FROM gate_outbox WHERE delivered_at IS NULL ORDER BY seq LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []outboxEvent
	for rows.Next() {
		var e outboxEvent
		if err := rows.Scan(&e.Seq, &e.EventID, &e.Payload); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// markDelivered records that the registry acknowledged event seq.
func (s *store) markDelivered(ctx context.Context, seq, registrySeq int64, at time.Time) error {
	if _, err := s.db.SQL.ExecContext(ctx, `UPDATE gate_outbox SET delivered_at = $1, registry_seq = $2 WHERE seq = $3`, at.UnixNano(), registrySeq, seq); err != nil {
		return fmt.Errorf("mark outbox event %d delivered: %w", seq, err)
	}
	return nil
}

// registrySeq returns the registry's sequence of a delivered event, or 0
// while it waits in the outbox.
func (s *store) registrySeq(ctx context.Context, eventID string) (int64, error) {
	var seq sql.NullInt64
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT registry_seq FROM gate_outbox WHERE event_id = $1`, eventID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read delivery of event %s: %w", eventID, err)
	}
	return seq.Int64, nil
}

// Migrate applies the gate's schema migrations to db: versioned,
// forward-only, idempotent, and safe when replicas start at once. Opening
// the store does it too; `seam migrate` calls it before a rollout.
func Migrate(ctx context.Context, db *storage.DB) error {
	return db.Migrate(ctx, "gate", migrations)
}
