package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The source keeps its state in the target database, in schema seam_cdc,
// beside the replica it maintains: the handoff position, the snapshot's
// chunks, the staged change log (the held changes) and the outbox that
// pipelines read. A change is applied to the replica, published to the
// outbox and marked applied in one transaction, so the replica, the stream
// and the position never disagree, whatever is killed when.
//
// Schema versions are applied in order under an advisory lock; each is
// idempotent.
var stateMigrations = []string{
	// 1: the first schema.
	`
CREATE SCHEMA IF NOT EXISTS seam_cdc;
CREATE TABLE IF NOT EXISTS seam_cdc.connectors (
	name            text PRIMARY KEY,
	slot            text NOT NULL,
	publication     text NOT NULL,
	-- phase: init (slot being made), snapshot, stream
	phase           text NOT NULL,
	-- consistent_lsn: the slot's consistent point, where the stream starts
	consistent_lsn  bigint NOT NULL DEFAULT 0,
	-- capture_lsn: end of the last transaction staged whole; the stream
	-- resumes here and it is what the slot is told is flushed
	capture_lsn     bigint NOT NULL DEFAULT 0,
	target_schema   text NOT NULL,
	config          jsonb NOT NULL DEFAULT '{}',
	created_at      timestamptz NOT NULL DEFAULT now(),
	updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS seam_cdc.tables (
	connector       text NOT NULL REFERENCES seam_cdc.connectors (name) ON DELETE CASCADE,
	source_table    text NOT NULL,
	subject         text NOT NULL,
	target_table    text NOT NULL,
	-- phase: snapshot, stream, halted
	phase           text NOT NULL,
	contract_version integer NOT NULL DEFAULT 0,
	shape_id        integer NOT NULL DEFAULT 0,
	-- snapshot_lsn: the newest snapshot any chunk was read in; changes
	-- committed before it are checked against the replica's rows
	snapshot_lsn    bigint NOT NULL DEFAULT 0,
	rows_total      bigint NOT NULL DEFAULT 0,
	rows_done       bigint NOT NULL DEFAULT 0,
	bytes_done      bigint NOT NULL DEFAULT 0,
	applied_lsn     bigint NOT NULL DEFAULT 0,
	applied_seq     bigint NOT NULL DEFAULT -1,
	applied_count   bigint NOT NULL DEFAULT 0,
	quarantined     bigint NOT NULL DEFAULT 0,
	skipped         bigint NOT NULL DEFAULT 0,
	-- the batch being sent: the last position it covers, so a restart
	-- sends exactly the same batch under the same identity
	inflight_lsn    bigint,
	inflight_seq    bigint,
	halt            jsonb,
	updated_at      timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (connector, source_table)
);
CREATE TABLE IF NOT EXISTS seam_cdc.chunks (
	connector       text NOT NULL,
	source_table    text NOT NULL,
	chunk           integer NOT NULL,
	-- lo < key <= hi, text forms of the key columns; null is open
	lo              text[],
	hi              text[],
	-- last: the key of the last row applied; reading resumes after it
	last            text[],
	done            boolean NOT NULL DEFAULT false,
	rows_done       bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (connector, source_table, chunk),
	FOREIGN KEY (connector, source_table) REFERENCES seam_cdc.tables ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS seam_cdc.shapes (
	connector       text NOT NULL,
	source_table    text NOT NULL,
	shape_id        integer NOT NULL,
	columns         jsonb NOT NULL,
	first_lsn       bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (connector, source_table, shape_id),
	FOREIGN KEY (connector, source_table) REFERENCES seam_cdc.tables ON DELETE CASCADE
);
-- log: changes staged from the stream, in log order, until applied; the
-- changes of a table in snapshot or halted wait here.
CREATE TABLE IF NOT EXISTS seam_cdc.log (
	connector       text NOT NULL,
	source_table    text NOT NULL,
	commit_lsn      bigint NOT NULL,
	seq             bigint NOT NULL,
	op              text NOT NULL,
	shape_id        integer NOT NULL,
	commit_time     timestamptz NOT NULL,
	-- flags: one letter per column of the shape: t value, n null,
	-- u not sent (unchanged TOAST value, or a non-key column of a delete)
	flags           text NOT NULL,
	vals            text[] NOT NULL,
	bytes           integer NOT NULL,
	PRIMARY KEY (connector, source_table, commit_lsn, seq)
);
-- outbox: the accepted canonical change stream, for pipelines.
CREATE TABLE IF NOT EXISTS seam_cdc.outbox (
	connector       text NOT NULL,
	id              bigserial,
	source_table    text NOT NULL,
	subject         text NOT NULL,
	op              text NOT NULL,
	lsn             bigint NOT NULL,
	seq             bigint NOT NULL,
	contract_version integer NOT NULL,
	record_id       text NOT NULL,
	-- json, not jsonb: kept as the gate wrote it, and cheaper to write
	record          json NOT NULL,
	PRIMARY KEY (connector, id)
);
`,
	// 2: gate partitions. Each snapshot chunk is a partition of its own:
	// started says its partition may hold a sending (a restart resends the
	// chunk whole, with replace), the chunk's figures are taken back from
	// the table's when it is resent, and sealed/verdict record its seal.
	// open_partition is the stream day partition the table sends to; it
	// is sealed once the stream passes into the next commit day.
	`
ALTER TABLE seam_cdc.chunks ADD COLUMN IF NOT EXISTS started boolean NOT NULL DEFAULT false;
ALTER TABLE seam_cdc.chunks ADD COLUMN IF NOT EXISTS bytes_done bigint NOT NULL DEFAULT 0;
ALTER TABLE seam_cdc.chunks ADD COLUMN IF NOT EXISTS quarantined bigint NOT NULL DEFAULT 0;
ALTER TABLE seam_cdc.chunks ADD COLUMN IF NOT EXISTS sealed boolean NOT NULL DEFAULT false;
ALTER TABLE seam_cdc.chunks ADD COLUMN IF NOT EXISTS verdict text;
ALTER TABLE seam_cdc.tables ADD COLUMN IF NOT EXISTS open_partition text;
`,
	// 3: the source table's relfilenode when a shape was taken on (read
	// by the snapshot, or when the stream's shape was adopted), so a later
	// column change can tell whether PostgreSQL rewrote the table since
	// (fill.go); NULL is unknown.
	// The outbox's chunk is the snapshot chunk a snapshot read was
	// published for (NULL for stream changes): a chunk resent after a
	// crash finds there the rows it published earlier that the fresh
	// snapshot no longer holds, and sends them to its partition again.
	`
ALTER TABLE seam_cdc.shapes ADD COLUMN IF NOT EXISTS filenode bigint;
ALTER TABLE seam_cdc.outbox ADD COLUMN IF NOT EXISTS chunk integer;
CREATE INDEX IF NOT EXISTS outbox_chunk ON seam_cdc.outbox (connector, source_table, chunk) WHERE chunk IS NOT NULL;
`,
}

// migrateState brings the state schema up to date.
func migrateState(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate the source state in the target: %w", err)
	}
	defer tx.Rollback(ctx)
	// A constant lock key: two sources starting at once take turns.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7295010019)"); err != nil {
		return fmt.Errorf("migrate the source state: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS seam_cdc;
CREATE TABLE IF NOT EXISTS seam_cdc.schema_version (version integer NOT NULL)`); err != nil {
		return fmt.Errorf("migrate the source state: %w", err)
	}
	var version int
	err = tx.QueryRow(ctx, "SELECT version FROM seam_cdc.schema_version").Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := tx.Exec(ctx, "INSERT INTO seam_cdc.schema_version VALUES (0)"); err != nil {
			return fmt.Errorf("migrate the source state: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("migrate the source state: %w", err)
	}
	if version > len(stateMigrations) {
		return fmt.Errorf("the source state in the target is at schema version %d, newer than this seam (%d): run a newer seam", version, len(stateMigrations))
	}
	for v := version; v < len(stateMigrations); v++ {
		if _, err := tx.Exec(ctx, stateMigrations[v]); err != nil {
			return fmt.Errorf("migrate the source state to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, "UPDATE seam_cdc.schema_version SET version = $1", len(stateMigrations)); err != nil {
		return fmt.Errorf("migrate the source state: %w", err)
	}
	return tx.Commit(ctx)
}

// connectorState is a connector's row.
type connectorState struct {
	Name, Slot, Publication, Phase string
	ConsistentLSN, CaptureLSN      uint64
	TargetSchema                   string
}

func loadConnector(ctx context.Context, q queryer, name string) (connectorState, bool, error) {
	var c connectorState
	var consistent, capture int64
	err := q.QueryRow(ctx, `SELECT name, slot, publication, phase, consistent_lsn, capture_lsn, target_schema
  FROM seam_cdc.connectors WHERE name = $1`, name).Scan(&c.Name, &c.Slot, &c.Publication, &c.Phase, &consistent, &capture, &c.TargetSchema)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("read the state of source %s: %w", name, err)
	}
	c.ConsistentLSN, c.CaptureLSN = uint64(consistent), uint64(capture)
	return c, true, nil
}

// Halt says why a table stopped and what resumes it.
type Halt struct {
	// Reason is SCHEMA_CHANGE, PARTITION_BLOCKED, BATCH_BLOCKED (a batch
	// the gate refused whole, as gates before partitions did) or CONTAINED.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// ShapeID is the shape the table changed to; FromVersion the contract
	// version it was applied through.
	ShapeID     int   `json:"shape_id,omitempty"`
	FromVersion int32 `json:"from_version"`
	// Changes are the classified changes, "RULE path: message".
	Changes []string `json:"changes,omitempty"`
	// Proposed is the contract the new shape implies, as JSON: the starting
	// point of the migration version.
	Proposed json.RawMessage `json:"proposed,omitempty"`
	// ProposalNotes say what keeps Proposed from registering as it is
	// (a retyped column no cast can bring to its canonical type), each
	// naming the field and what to write instead.
	ProposalNotes []string `json:"proposal_notes,omitempty"`
	// AlertSequence is the registry event that announced the halt.
	AlertSequence int64 `json:"alert_sequence,omitempty"`
	// AtLSN is the commit LSN of the first held change (for a partition
	// halt, of the last change applied before it).
	AtLSN uint64 `json:"at_lsn,omitempty"`
	// Partitions are the gate partitions of a PARTITION_BLOCKED halt: a
	// stream day that will be (or was sealed) BLOCKED, or snapshot chunks
	// sealed BLOCKED.
	Partitions []string `json:"partitions,omitempty"`
}

// tableState is a table's row.
type tableState struct {
	Source                             string
	Table                              TableName
	Subject, Target, Phase             string
	Version                            int32
	ShapeID                            int
	SnapshotLSN                        uint64
	RowsTotal, RowsDone, BytesDone     int64
	AppliedLSN                         uint64
	AppliedSeq                         int64
	AppliedCount, Quarantined, Skipped int64
	InflightLSN                        *uint64
	InflightSeq                        *int64
	Halt                               *Halt
	// OpenPartition is the stream day partition the table sends to.
	OpenPartition string
}

const tableColumns = `source_table, subject, target_table, phase, contract_version, shape_id, snapshot_lsn,
	rows_total, rows_done, bytes_done, applied_lsn, applied_seq, applied_count, quarantined, skipped, inflight_lsn, inflight_seq, halt, open_partition`

func scanTable(row pgx.Row) (tableState, error) {
	var t tableState
	var snap, applied int64
	var inLSN, inSeq *int64
	var halt []byte
	var open *string
	if err := row.Scan(&t.Source, &t.Subject, &t.Target, &t.Phase, &t.Version, &t.ShapeID, &snap,
		&t.RowsTotal, &t.RowsDone, &t.BytesDone, &applied, &t.AppliedSeq, &t.AppliedCount, &t.Quarantined, &t.Skipped, &inLSN, &inSeq, &halt, &open); err != nil {
		return t, err
	}
	t.SnapshotLSN, t.AppliedLSN = uint64(snap), uint64(applied)
	if open != nil {
		t.OpenPartition = *open
	}
	if inLSN != nil {
		v := uint64(*inLSN)
		t.InflightLSN, t.InflightSeq = &v, inSeq
	}
	if len(halt) > 0 {
		t.Halt = &Halt{}
		if err := json.Unmarshal(halt, t.Halt); err != nil {
			return t, fmt.Errorf("halt of %s: %w", t.Source, err)
		}
	}
	tn, err := ParseTableName(t.Source)
	if err != nil {
		return t, err
	}
	t.Table = tn
	return t, nil
}

func loadTables(ctx context.Context, q queryer, connector string) ([]tableState, error) {
	rows, err := q.Query(ctx, "SELECT "+tableColumns+" FROM seam_cdc.tables WHERE connector = $1 ORDER BY source_table", connector)
	if err == nil {
		var out []tableState
		if out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (tableState, error) { return scanTable(row) }); err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("read the tables of source %s: %w", connector, err)
}

func loadTable(ctx context.Context, q queryer, connector, table string) (tableState, error) {
	t, err := scanTable(q.QueryRow(ctx, "SELECT "+tableColumns+" FROM seam_cdc.tables WHERE connector = $1 AND source_table = $2", connector, table))
	if err != nil {
		return t, fmt.Errorf("read the state of table %s: %w", table, err)
	}
	return t, nil
}

func loadShape(ctx context.Context, q queryer, connector, table string, id int) (Shape, error) {
	var raw []byte
	if err := q.QueryRow(ctx, "SELECT columns FROM seam_cdc.shapes WHERE connector = $1 AND source_table = $2 AND shape_id = $3",
		connector, table, id).Scan(&raw); err != nil {
		return nil, fmt.Errorf("read shape %d of %s: %w", id, table, err)
	}
	var s Shape
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("shape %d of %s: %w", id, table, err)
	}
	return s, nil
}

// String is the halt in one line, for logs and messages.
func (h *Halt) String() string {
	if h == nil {
		return "none"
	}
	return fmt.Sprintf("%s (from version %d, alert %d): %s", h.Reason, h.FromVersion, h.AlertSequence, h.Message)
}
