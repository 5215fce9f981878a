package gate

import (
	"context"
	"strings"

	"github.com/seamdata/seam/platform/storage"
)

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
}, {
	// A partition's mean is kept instead of its sum, which overflows to
	// infinity on legal values (two amounts of 1.7e308). total stays,
	// unused, so the migration is a plain ADD COLUMN.
	Version:  3,
	Name:     "field means instead of sums",
	SQLite:   schemaV3("REAL"),
	Postgres: schemaV3("DOUBLE PRECISION"),
}, {
	// A quarantined record keeps at most a configured number of bytes;
	// raw_size and raw_sha256 describe the whole record.
	Version: 4,
	Name:    "bounded quarantine raw bytes",
	SQLite: `ALTER TABLE gate_quarantine ADD COLUMN raw_size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE gate_quarantine ADD COLUMN raw_sha256 TEXT NOT NULL DEFAULT '';
UPDATE gate_quarantine SET raw_size = length(raw);`,
	Postgres: `ALTER TABLE gate_quarantine ADD COLUMN raw_size BIGINT NOT NULL DEFAULT 0;
ALTER TABLE gate_quarantine ADD COLUMN raw_sha256 TEXT NOT NULL DEFAULT '';
UPDATE gate_quarantine SET raw_size = octet_length(raw);`,
}, {
	// Partitions are judged whole: a partition row per (subject,
	// partition) with its sending (attempt) and latest amendment; a unit
	// row per amendment with its status, verdict, counters and figures
	// (statistics, check failures and failure shapes, merged batch by
	// batch); the per-partition key index; the event-time watermarks;
	// compact idempotency rows with a content digest, and canonical
	// answers kept apart for a limited time. The old per-partition
	// counters become amendment 0 of each partition, open; records of
	// batches blocked whole before were never taken and are not counted.
	Version:  5,
	Name:     "partitions judged whole",
	SQLite:   schemaV5("INTEGER", "BLOB", "INTEGER PRIMARY KEY AUTOINCREMENT", " WITHOUT ROWID"),
	Postgres: schemaV5("BIGINT", "BYTEA", "BIGSERIAL PRIMARY KEY", ""),
}, {
	// Alerts have a lifecycle (open, acknowledged, resolved, with who or
	// what resolved them); a held record's reasons are rewritten by each
	// replay that leaves it held (ingest_reasons keeps those its
	// partition's figures counted); and the gate keeps the value shapes each field
	// of a subject showed in accepted records of partitions that were not
	// blocked: the baseline of unannounced-change detection.
	Version:  6,
	Name:     "alert lifecycle and learned value shapes",
	SQLite:   schemaV6("INTEGER", "BLOB"),
	Postgres: schemaV6("BIGINT", "BYTEA"),
}, {
	// A partition's key index becomes runs: a row per batch holding the
	// 16-byte hashes of the keys it added, read into memory by the gate
	// (store_sql_keys.go), instead of a B-tree row per key, where each
	// key of a batch was a random insert into a large index. Each
	// partition's keys become its first run. Run ids are never reused: a
	// run's id tells a cached set whether the runs it was read from still
	// exist. gate_keys is dropped, so a gate of an earlier version fails
	// on this store instead of indexing keys no other replica reads:
	// upgrade every gate replica together.
	Version: 7,
	Name:    "key index as runs",
	SQLite: `CREATE TABLE gate_key_runs (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	pid    INTEGER NOT NULL,
	hashes BLOB NOT NULL
);
CREATE INDEX gate_key_runs_pid ON gate_key_runs (pid, id);
INSERT INTO gate_key_runs (pid, hashes)
SELECT pid, unhex(group_concat(hex(key_hash), '')) FROM gate_keys GROUP BY pid ORDER BY pid;
DROP TABLE gate_keys;`,
	Postgres: `CREATE TABLE gate_key_runs (
	id     BIGSERIAL PRIMARY KEY,
	pid    BIGINT NOT NULL,
	hashes BYTEA NOT NULL
);
CREATE INDEX gate_key_runs_pid ON gate_key_runs (pid, id);
INSERT INTO gate_key_runs (pid, hashes)
SELECT pid, string_agg(key_hash, ''::bytea) FROM gate_keys GROUP BY pid ORDER BY pid;
DROP TABLE gate_keys;`,
}, {
	// A batch's kept canonical records can be one packed message
	// (answerPacked: the ids as bytes, the provenance once) instead of a
	// message per record (answerPerRecord, every answer kept before).
	Version:  8,
	Name:     "packed kept answers",
	SQLite:   `ALTER TABLE gate_answers ADD COLUMN form INTEGER NOT NULL DEFAULT 1;`,
	Postgres: `ALTER TABLE gate_answers ADD COLUMN form BIGINT NOT NULL DEFAULT 1;`,
}, {
	// A trailing baseline holds only partitions that passed its check
	// and held no contained record: a row per partition and statistical
	// check it failed ("*": every check, for a contained partition).
	// Partitions judged before are skipped for the checks whose alerts
	// they raised and no replay or resending withdrew; containment was
	// not recorded then.
	Version:  9,
	Name:     "honest baselines",
	SQLite:   schemaV9("INTEGER"),
	Postgres: schemaV9("BIGINT"),
}, {
	// Shapes are named by one classifier (core/shape), and a run of
	// digits is {digits} unless zero-padded. The learned and reported
	// shapes stored before are marked as version-1 names ("v1:" prefix),
	// which the gate reads for what they stand for (shape.V1Covers):
	// "name-{digits:5}" learned from "name-99999" covers "name-{digits}".
	Version:  10,
	Name:     "shapes of one classifier",
	SQLite:   schemaV10,
	Postgres: schemaV10,
}}

// v1ShapePrefix marks a shape stored under its version-1 name.
const v1ShapePrefix = "v1:"

const schemaV10 = `UPDATE gate_learned_shapes SET shape = 'v1:' || shape;
UPDATE gate_shapes SET shape = 'v1:' || shape;`

func schemaV9(integer string) string {
	return strings.ReplaceAll(`CREATE TABLE gate_baseline_skips (
	pid        $INT NOT NULL,
	check_name TEXT NOT NULL,
	PRIMARY KEY (pid, check_name)
);
INSERT INTO gate_baseline_skips (pid, check_name)
SELECT DISTINCT p.pid, a.check_name FROM gate_alerts a JOIN gate_parts p ON p.subject = a.subject AND p.part = a.part
WHERE a.amendment = 0 AND a.kind IN ('MATCH_RATE', 'NULL_RATE', 'MEAN_DRIFT', 'ROW_COUNT')
	AND NOT (a.state = 3 AND (a.resolved_by LIKE 'replay %' OR a.resolved_by LIKE 'partition % attempt %'));`, "$INT", integer)
}

func schemaV6(integer, blob string) string {
	return strings.ReplaceAll(strings.ReplaceAll(`ALTER TABLE gate_quarantine ADD COLUMN ingest_reasons $BLOB;
ALTER TABLE gate_alerts ADD COLUMN state $INT NOT NULL DEFAULT 1;
ALTER TABLE gate_alerts ADD COLUMN acked_by TEXT NOT NULL DEFAULT '';
ALTER TABLE gate_alerts ADD COLUMN acked_at $INT NOT NULL DEFAULT 0;
ALTER TABLE gate_alerts ADD COLUMN resolved_by TEXT NOT NULL DEFAULT '';
ALTER TABLE gate_alerts ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE gate_alerts ADD COLUMN resolved_at $INT NOT NULL DEFAULT 0;
CREATE INDEX gate_alerts_state ON gate_alerts (subject, state, seq);
CREATE TABLE gate_learned_shapes (
	subject    TEXT NOT NULL,
	field      TEXT NOT NULL,
	shape      TEXT NOT NULL,
	records    $INT NOT NULL,
	version    $INT NOT NULL,
	first_part TEXT NOT NULL,
	last_part  TEXT NOT NULL,
	PRIMARY KEY (subject, field, shape)
);`, "$INT", integer), "$BLOB", blob)
}

func schemaV5(integer, blob, serial, withoutRowid string) string {
	return strings.NewReplacer("$INT", integer, "$BLOB", blob, "$SERIAL", serial, "$NOROWID", withoutRowid).Replace(`
CREATE TABLE gate_parts (
	pid         $SERIAL,
	subject     TEXT NOT NULL,
	part        TEXT NOT NULL,
	attempt     $INT NOT NULL DEFAULT 1,
	amendment   $INT NOT NULL DEFAULT 0,
	replaced_by TEXT NOT NULL DEFAULT '',
	replaced_at $INT NOT NULL DEFAULT 0,
	UNIQUE (subject, part)
);
CREATE TABLE gate_units (
	pid              $INT NOT NULL,
	amendment        $INT NOT NULL,
	status           $INT NOT NULL,
	verdict          $INT NOT NULL DEFAULT 0,
	contract_version $INT NOT NULL DEFAULT 0,
	received         $INT NOT NULL DEFAULT 0,
	accepted         $INT NOT NULL DEFAULT 0,
	quarantined      $INT NOT NULL DEFAULT 0,
	duplicates       $INT NOT NULL DEFAULT 0,
	released         $INT NOT NULL DEFAULT 0,
	batches          $INT NOT NULL DEFAULT 0,
	id_checked       $INT NOT NULL DEFAULT 0,
	id_matched       $INT NOT NULL DEFAULT 0,
	figures          $BLOB,
	decision         $BLOB,
	opened_at        $INT NOT NULL,
	updated_at       $INT NOT NULL,
	sealed_at        $INT NOT NULL DEFAULT 0,
	seal_cause       $INT NOT NULL DEFAULT 0,
	sealed_by        TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (pid, amendment)
);
CREATE TABLE gate_keys (
	pid      $INT NOT NULL,
	key_hash $BLOB NOT NULL,
	PRIMARY KEY (pid, key_hash)
)$NOROWID;
CREATE TABLE gate_watermarks (
	subject    TEXT PRIMARY KEY,
	event_time $INT NOT NULL
);
CREATE TABLE gate_answers (
	subject    TEXT NOT NULL,
	part       TEXT NOT NULL,
	batch_id   TEXT NOT NULL,
	records    $BLOB NOT NULL,
	expires_at $INT NOT NULL,
	PRIMARY KEY (subject, part, batch_id)
);
CREATE INDEX gate_answers_expiry ON gate_answers (expires_at);
ALTER TABLE gate_batches ADD COLUMN digest $BLOB;
ALTER TABLE gate_batches ADD COLUMN verdicts $BLOB;
ALTER TABLE gate_batches ADD COLUMN alert_seqs TEXT NOT NULL DEFAULT '';
ALTER TABLE gate_batches ADD COLUMN amendment $INT NOT NULL DEFAULT 0;
ALTER TABLE gate_batches ADD COLUMN attempt $INT NOT NULL DEFAULT 0;
ALTER TABLE gate_batches ADD COLUMN duplicates $INT NOT NULL DEFAULT 0;
CREATE INDEX gate_batches_created ON gate_batches (created_at);
ALTER TABLE gate_quarantine ADD COLUMN amendment $INT NOT NULL DEFAULT 0;
CREATE INDEX gate_quarantine_settled ON gate_quarantine (state, state_at);
ALTER TABLE gate_alerts ADD COLUMN amendment $INT NOT NULL DEFAULT 0;
CREATE INDEX gate_alerts_partition ON gate_alerts (subject, part, seq);
ALTER TABLE gate_contracts ADD COLUMN status $INT NOT NULL DEFAULT 0;
ALTER TABLE gate_contracts ADD COLUMN effective_at $INT NOT NULL DEFAULT 0;
ALTER TABLE gate_contracts ADD COLUMN data_effective_at $INT NOT NULL DEFAULT 0;
INSERT INTO gate_parts (subject, part) SELECT subject, part FROM gate_partitions ORDER BY subject, part;
INSERT INTO gate_units (pid, amendment, status, received, accepted, quarantined, released, batches, id_checked, id_matched, opened_at, updated_at)
	SELECT p.pid, 0, 1, o.received - o.blocked, o.accepted, o.quarantined, o.released, o.batches, o.id_checked, o.id_matched, o.updated_at, o.updated_at
	FROM gate_partitions o JOIN gate_parts p ON p.subject = o.subject AND p.part = o.part;
CREATE TABLE gate_legacy_fields AS SELECT p.pid AS pid, f.field AS field, f.count AS count, f.nulls AS nulls, f.numbers AS numbers,
	f.mean AS mean, f.ids AS ids, f.matched AS matched
	FROM gate_field_stats f JOIN gate_parts p ON p.subject = f.subject AND p.part = f.part;
DROP TABLE gate_field_stats;
DROP TABLE gate_partitions;`)
}

func schemaV3(real string) string {
	return `ALTER TABLE gate_field_stats ADD COLUMN mean ` + real + ` NOT NULL DEFAULT 0;
UPDATE gate_field_stats SET mean = total / numbers WHERE numbers > 0;`
}

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

// Migrate applies the gate's schema migrations to db: versioned,
// forward-only, idempotent, and safe when replicas start at once. Opening
// the store does it too; `seam migrate` calls it before a rollout.
func Migrate(ctx context.Context, db *storage.DB) error {
	return db.Migrate(ctx, "gate", migrations)
}
