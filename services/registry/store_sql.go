package registry

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/platform/storage"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// notifyChannel is the storage notification channel registry writes wake
// replicas on.
const notifyChannel = "seam_registry"

// component is the name under which the registry's migrations are recorded.
const component = "registry"

// migrations is the registry's SQL schema. Timestamps live inside the proto
// bodies; columns exist only for what SQL must filter, order or constrain on.
// registry_meta holds the counters that number changes, events and audit
// entries: every write transaction updates its single row first, which takes
// the registry's write lock on both dialects, so numbers follow commit order.
var migrations = []storage.Migration{{
	Version:  1,
	Name:     "registry schema",
	SQLite:   schemaV1("INTEGER", "BLOB"),
	Postgres: schemaV1("BIGINT", "BYTEA"),
}, {
	// Version 2 numbers schema documents (JSON Schema, Avro) by global
	// id, as Confluent's schema registry does: the fingerprint (format and
	// normalized text) is unique, so the same schema keeps its id.
	Version:  2,
	Name:     "registry schema ids",
	SQLite:   schemaV2,
	Postgres: schemaV2,
}}

// schemaV1 is migration 1 in either dialect: the types of the counters,
// sequences and bodies differ, the tables do not.
func schemaV1(bigint, blob string) string {
	return strings.NewReplacer("$BIGINT", bigint, "$BLOB", blob).Replace(`
CREATE TABLE registry_meta (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	last_change $BIGINT NOT NULL,
	last_event $BIGINT NOT NULL,
	last_audit $BIGINT NOT NULL
);
INSERT INTO registry_meta (id, last_change, last_event, last_audit) VALUES (1, 0, 0, 0);
CREATE TABLE registry_subjects (name TEXT PRIMARY KEY, body $BLOB NOT NULL);
CREATE TABLE registry_versions (
	subject TEXT NOT NULL,
	version INTEGER NOT NULL,
	status INTEGER NOT NULL,
	body $BLOB NOT NULL,
	PRIMARY KEY (subject, version)
);
CREATE TABLE registry_models (name TEXT NOT NULL, version INTEGER NOT NULL, body $BLOB NOT NULL, PRIMARY KEY (name, version));
CREATE TABLE registry_consumers (name TEXT PRIMARY KEY, body $BLOB NOT NULL);
CREATE TABLE registry_events (sequence $BIGINT PRIMARY KEY, body $BLOB NOT NULL);
CREATE TABLE registry_audit (sequence $BIGINT PRIMARY KEY, subject TEXT NOT NULL, body $BLOB NOT NULL);
CREATE INDEX registry_audit_subject ON registry_audit (subject, sequence);
CREATE TABLE registry_changes (sequence $BIGINT PRIMARY KEY, entity TEXT NOT NULL, key TEXT NOT NULL);
`)
}

const schemaV2 = `
CREATE TABLE registry_schemas (
	id INTEGER PRIMARY KEY,
	fingerprint TEXT NOT NULL UNIQUE,
	format INTEGER NOT NULL,
	text TEXT NOT NULL
);
`

// sqlStore is the Store over platform/storage; one implementation serves
// SQLite and PostgreSQL because the schema and queries are portable.
type sqlStore struct {
	db *storage.DB
}

// OpenStore opens the store at url (see storage.Open) and brings its schema
// up to date.
func OpenStore(ctx context.Context, url string) (Store, error) {
	db, err := storage.Open(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open registry store: %w", err)
	}
	if err := Migrate(ctx, db); err != nil {
		return nil, errors.Join(fmt.Errorf("migrate registry store: %w", err), db.Close())
	}
	return &sqlStore{db: db}, nil
}

var marshalOptions = proto.MarshalOptions{Deterministic: true}

func (s *sqlStore) Close() error { return s.db.Close() }

func (s *sqlStore) Wake(ctx context.Context) (<-chan struct{}, error) {
	ch, err := s.db.Listen(ctx, notifyChannel)
	if err != nil {
		return nil, fmt.Errorf("listen for registry writes: %w", err)
	}
	return ch, nil
}

func (s *sqlStore) Write(ctx context.Context, fn func(tx StoreTx) error) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		w := &sqlTx{ctx: ctx, tx: tx}
		// Taking the row lock first serialises registry writers before they
		// read anything, so every read below sees all earlier commits.
		if _, err := tx.ExecContext(ctx, `UPDATE registry_meta SET last_change = last_change WHERE id = 1`); err != nil {
			return fmt.Errorf("take registry write lock: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT last_change, last_event, last_audit FROM registry_meta WHERE id = 1`).
			Scan(&w.lastChange, &w.lastEvent, &w.lastAudit); err != nil {
			return fmt.Errorf("read registry counters: %w", err)
		}
		start := w.lastChange
		if err := fn(w); err != nil {
			return err
		}
		if w.lastChange == start {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE registry_meta SET last_change = $1, last_event = $2, last_audit = $3 WHERE id = 1`,
			w.lastChange, w.lastEvent, w.lastAudit); err != nil {
			return fmt.Errorf("advance registry counters: %w", err)
		}
		if err := s.db.Notify(ctx, tx, notifyChannel); err != nil {
			return fmt.Errorf("notify registry replicas: %w", err)
		}
		return nil
	})
}

// queryer is what sql.DB and sql.Tx share, so reads are written once for
// both the store and a write transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *sqlStore) LastChange(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT last_change FROM registry_meta WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read last registry change: %w", err)
	}
	return n, nil
}

func (s *sqlStore) LastEvent(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT last_event FROM registry_meta WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read last registry event: %w", err)
	}
	return n, nil
}

func (s *sqlStore) Changes(ctx context.Context, after int64, limit int) ([]ChangeRecord, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT sequence, entity, key FROM registry_changes WHERE sequence > $1 ORDER BY sequence LIMIT $2`, after, limit)
	return storage.ScanRows(rows, err, fmt.Sprintf("read registry changes after %d", after), func(row storage.Row) (ChangeRecord, error) {
		var c ChangeRecord
		var entity string
		err := row.Scan(&c.Sequence, &entity, &c.Key)
		c.Entity = Entity(entity)
		return c, err
	})
}

func (s *sqlStore) Subject(ctx context.Context, name string) (*registryv1.Subject, []*registryv1.ContractVersion, error) {
	return readSubject(ctx, s.db.SQL, name)
}

func (s *sqlStore) SubjectNames(ctx context.Context) ([]string, error) {
	return readNames(ctx, s.db.SQL, `SELECT name FROM registry_subjects ORDER BY name`)
}

func (s *sqlStore) Model(ctx context.Context, name string) ([]*registryv1.CanonicalModelVersion, error) {
	return readModelVersions(ctx, s.db.SQL, name)
}

func (s *sqlStore) ModelNames(ctx context.Context) ([]string, error) {
	return readNames(ctx, s.db.SQL, `SELECT DISTINCT name FROM registry_models ORDER BY name`)
}

func (s *sqlStore) Consumer(ctx context.Context, name string) (*registryv1.Consumer, error) {
	var body []byte
	err := s.db.SQL.QueryRowContext(ctx, `SELECT body FROM registry_consumers WHERE name = $1`, name).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read consumer %q: %w", name, err)
	}
	c := &registryv1.Consumer{}
	if err := proto.Unmarshal(body, c); err != nil {
		return nil, fmt.Errorf("decode consumer %q: %w", name, err)
	}
	return c, nil
}

func (s *sqlStore) Consumers(ctx context.Context) ([]*registryv1.Consumer, error) {
	return readConsumers(ctx, s.db.SQL)
}

func (s *sqlStore) Events(ctx context.Context, after int64, limit int) ([]*registryv1.Event, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT body FROM registry_events WHERE sequence > $1 ORDER BY sequence LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read registry events after %d: %w", after, err)
	}
	return scanBodies(rows, func() *registryv1.Event { return &registryv1.Event{} }, "registry events")
}

func (s *sqlStore) History(ctx context.Context, subject string) ([]*registryv1.AuditEntry, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT body FROM registry_audit WHERE subject = $1 ORDER BY sequence`, subject)
	if err != nil {
		return nil, fmt.Errorf("read history of %q: %w", subject, err)
	}
	return scanBodies(rows, func() *registryv1.AuditEntry { return &registryv1.AuditEntry{} }, "history of "+strconv.Quote(subject))
}

func (s *sqlStore) Schema(ctx context.Context, id int32) (*registryv1.Schema, error) {
	return readSchema(ctx, s.db.SQL, `SELECT id, format, text FROM registry_schemas WHERE id = $1`, id)
}

func (s *sqlStore) SchemaByText(ctx context.Context, format registryv1.ContractFormat, text string) (*registryv1.Schema, error) {
	return readSchema(ctx, s.db.SQL, `SELECT id, format, text FROM registry_schemas WHERE fingerprint = $1`, schemaFingerprint(format, text))
}

// schemaFingerprint identifies a schema document by its format and
// normalized text.
func schemaFingerprint(format registryv1.ContractFormat, text string) string {
	h := sha256.Sum256([]byte(text))
	return fmt.Sprintf("%d:%s", int32(format), hex.EncodeToString(h[:]))
}

func readSchema(ctx context.Context, q queryer, query string, arg any) (*registryv1.Schema, error) {
	var (
		id     int32
		format int32
		text   string
	)
	err := q.QueryRowContext(ctx, query, arg).Scan(&id, &format, &text)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	return &registryv1.Schema{Id: id, Format: registryv1.ContractFormat(format), Text: text}, nil
}

// scanBodies decodes a one-column result of marshalled messages.
func scanBodies[M proto.Message](rows *sql.Rows, newMsg func() M, what string) ([]M, error) {
	defer rows.Close()
	var out []M
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		m := newMsg()
		if err := proto.Unmarshal(body, m); err != nil {
			return nil, fmt.Errorf("decode %s: %w", what, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

func readNames(ctx context.Context, q queryer, query string) ([]string, error) {
	rows, err := q.QueryContext(ctx, query)
	return storage.ScanRows(rows, err, "list names", func(row storage.Row) (string, error) {
		var n string
		err := row.Scan(&n)
		return n, err
	})
}

func readSubject(ctx context.Context, q queryer, name string) (*registryv1.Subject, []*registryv1.ContractVersion, error) {
	var body []byte
	err := q.QueryRowContext(ctx, `SELECT body FROM registry_subjects WHERE name = $1`, name).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read subject %q: %w", name, err)
	}
	subj := &registryv1.Subject{}
	if err := proto.Unmarshal(body, subj); err != nil {
		return nil, nil, fmt.Errorf("decode subject %q: %w", name, err)
	}
	rows, err := q.QueryContext(ctx, `SELECT status, body FROM registry_versions WHERE subject = $1 ORDER BY version`, name)
	if err != nil {
		return nil, nil, fmt.Errorf("read versions of %q: %w", name, err)
	}
	defer rows.Close()
	var versions []*registryv1.ContractVersion
	for rows.Next() {
		var status int32
		if err := rows.Scan(&status, &body); err != nil {
			return nil, nil, fmt.Errorf("read versions of %q: %w", name, err)
		}
		v := &registryv1.ContractVersion{}
		if err := proto.Unmarshal(body, v); err != nil {
			return nil, nil, fmt.Errorf("decode version of %q: %w", name, err)
		}
		// The status column is the truth: it is what the conditional
		// activation UPDATE changes.
		v.Status = registryv1.VersionStatus(status)
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read versions of %q: %w", name, err)
	}
	return subj, versions, nil
}

func readModelVersions(ctx context.Context, q queryer, name string) ([]*registryv1.CanonicalModelVersion, error) {
	rows, err := q.QueryContext(ctx, `SELECT body FROM registry_models WHERE name = $1 ORDER BY version`, name)
	if err != nil {
		return nil, fmt.Errorf("read canonical model %q: %w", name, err)
	}
	return scanBodies(rows, func() *registryv1.CanonicalModelVersion { return &registryv1.CanonicalModelVersion{} }, "canonical model "+strconv.Quote(name))
}

func readConsumers(ctx context.Context, q queryer) ([]*registryv1.Consumer, error) {
	rows, err := q.QueryContext(ctx, `SELECT body FROM registry_consumers ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read consumers: %w", err)
	}
	return scanBodies(rows, func() *registryv1.Consumer { return &registryv1.Consumer{} }, "consumers")
}

// sqlTx is one write transaction. It numbers changes, events and audit
// entries from the counters read under the write lock.
type sqlTx struct {
	ctx                              context.Context
	tx                               *sql.Tx
	lastChange, lastEvent, lastAudit int64
}

func (w *sqlTx) logChange(entity Entity, key string) error {
	w.lastChange++
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_changes (sequence, entity, key) VALUES ($1, $2, $3)`,
		w.lastChange, string(entity), key); err != nil {
		return fmt.Errorf("log change of %s %q: %w", entity, key, err)
	}
	return nil
}

func (w *sqlTx) Subject(name string) (*registryv1.Subject, []*registryv1.ContractVersion, error) {
	return readSubject(w.ctx, w.tx, name)
}

func (w *sqlTx) PutSubject(s *registryv1.Subject) error {
	body, err := marshalOptions.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode subject %q: %w", s.GetName(), err)
	}
	res, err := w.tx.ExecContext(w.ctx, `UPDATE registry_subjects SET body = $2 WHERE name = $1`, s.GetName(), body)
	if err != nil {
		return fmt.Errorf("update subject %q: %w", s.GetName(), err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update subject %q: %w", s.GetName(), err)
	} else if n == 0 {
		if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_subjects (name, body) VALUES ($1, $2)`, s.GetName(), body); err != nil {
			return fmt.Errorf("insert subject %q: %w", s.GetName(), err)
		}
	}
	return w.logChange(EntitySubject, s.GetName())
}

func (w *sqlTx) InsertVersion(v *registryv1.ContractVersion) error {
	body, err := marshalOptions.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s v%d: %w", v.GetSubject(), v.GetVersion(), err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_versions (subject, version, status, body) VALUES ($1, $2, $3, $4)`,
		v.GetSubject(), v.GetVersion(), int32(v.GetStatus()), body); err != nil {
		return fmt.Errorf("insert %s v%d: %w", v.GetSubject(), v.GetVersion(), err)
	}
	return w.logChange(EntitySubject, v.GetSubject())
}

func (w *sqlTx) SetVersionStatus(subject string, version int32, from []registryv1.VersionStatus, to registryv1.VersionStatus) (bool, error) {
	changed := false
	for _, f := range from {
		res, err := w.tx.ExecContext(w.ctx, `UPDATE registry_versions SET status = $3 WHERE subject = $1 AND version = $2 AND status = $4`,
			subject, version, int32(to), int32(f))
		if err != nil {
			return false, fmt.Errorf("set %s v%d to %s: %w", subject, version, to, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("set %s v%d to %s: %w", subject, version, to, err)
		}
		if n > 0 {
			changed = true
			break
		}
	}
	if !changed {
		return false, nil
	}
	return true, w.logChange(EntitySubject, subject)
}

func (w *sqlTx) UpdateVersion(subject string, version int32, fn func(v *registryv1.ContractVersion) bool) (bool, error) {
	var status int32
	var body []byte
	err := w.tx.QueryRowContext(w.ctx, `SELECT status, body FROM registry_versions WHERE subject = $1 AND version = $2`, subject, version).Scan(&status, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("update %s v%d: no such version", subject, version)
	}
	if err != nil {
		return false, fmt.Errorf("read %s v%d: %w", subject, version, err)
	}
	v := &registryv1.ContractVersion{}
	if err := proto.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("decode %s v%d: %w", subject, version, err)
	}
	v.Status = registryv1.VersionStatus(status)
	if !fn(v) {
		return false, nil
	}
	v.Status = registryv1.VersionStatus(status)
	if body, err = marshalOptions.Marshal(v); err != nil {
		return false, fmt.Errorf("encode %s v%d: %w", subject, version, err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `UPDATE registry_versions SET body = $3 WHERE subject = $1 AND version = $2`, subject, version, body); err != nil {
		return false, fmt.Errorf("update %s v%d: %w", subject, version, err)
	}
	return true, w.logChange(EntitySubject, subject)
}

func (w *sqlTx) SchemaID(format registryv1.ContractFormat, text string) (int32, error) {
	fp := schemaFingerprint(format, text)
	known, err := readSchema(w.ctx, w.tx, `SELECT id, format, text FROM registry_schemas WHERE fingerprint = $1`, fp)
	if err != nil || known != nil {
		return known.GetId(), err
	}
	// Writers hold the registry's write lock, so the next id is free.
	var id int32
	if err := w.tx.QueryRowContext(w.ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM registry_schemas`).Scan(&id); err != nil {
		return 0, fmt.Errorf("number a new schema: %w", err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_schemas (id, fingerprint, format, text) VALUES ($1, $2, $3, $4)`,
		id, fp, int32(format), text); err != nil {
		return 0, fmt.Errorf("store schema %d: %w", id, err)
	}
	return id, nil
}

func (w *sqlTx) Model(name string) ([]*registryv1.CanonicalModelVersion, error) {
	return readModelVersions(w.ctx, w.tx, name)
}

func (w *sqlTx) InsertModelVersion(m *registryv1.CanonicalModelVersion) error {
	body, err := marshalOptions.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode canonical model %s v%d: %w", m.GetName(), m.GetVersion(), err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_models (name, version, body) VALUES ($1, $2, $3)`,
		m.GetName(), m.GetVersion(), body); err != nil {
		return fmt.Errorf("insert canonical model %s v%d: %w", m.GetName(), m.GetVersion(), err)
	}
	return w.logChange(EntityModel, m.GetName())
}

func (w *sqlTx) Consumers() ([]*registryv1.Consumer, error) {
	return readConsumers(w.ctx, w.tx)
}

func (w *sqlTx) PutConsumer(c *registryv1.Consumer) error {
	body, err := marshalOptions.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode consumer %q: %w", c.GetName(), err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM registry_consumers WHERE name = $1`, c.GetName()); err != nil {
		return fmt.Errorf("replace consumer %q: %w", c.GetName(), err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_consumers (name, body) VALUES ($1, $2)`, c.GetName(), body); err != nil {
		return fmt.Errorf("insert consumer %q: %w", c.GetName(), err)
	}
	return w.logChange(EntityConsumer, c.GetName())
}

func (w *sqlTx) DeleteConsumer(name string) (bool, error) {
	res, err := w.tx.ExecContext(w.ctx, `DELETE FROM registry_consumers WHERE name = $1`, name)
	if err != nil {
		return false, fmt.Errorf("delete consumer %q: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("delete consumer %q: %w", name, err)
	}
	if n == 0 {
		return false, nil
	}
	return true, w.logChange(EntityConsumer, name)
}

func (w *sqlTx) AppendEvent(e *registryv1.Event) error {
	w.lastEvent++
	e.Sequence = w.lastEvent
	body, err := marshalOptions.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode event %d: %w", e.Sequence, err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_events (sequence, body) VALUES ($1, $2)`, e.Sequence, body); err != nil {
		return fmt.Errorf("append event %d: %w", e.Sequence, err)
	}
	return w.logChange(EntityEvent, strconv.FormatInt(e.Sequence, 10))
}

func (w *sqlTx) Audit(subject string, a *registryv1.AuditEntry) error {
	w.lastAudit++
	a.Sequence = w.lastAudit
	body, err := marshalOptions.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode audit entry of %q: %w", subject, err)
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO registry_audit (sequence, subject, body) VALUES ($1, $2, $3)`, a.Sequence, subject, body); err != nil {
		return fmt.Errorf("append audit entry of %q: %w", subject, err)
	}
	// Audit entries are read from the store, not the read model, but the
	// counters must still advance and replicas be woken.
	return w.logChange(EntitySubject, subject)
}

// compile-time checks that the SQL types satisfy the interfaces.
var (
	_ Store   = (*sqlStore)(nil)
	_ StoreTx = (*sqlTx)(nil)
)

// Migrate applies the registry's schema migrations to db: versioned,
// forward-only, idempotent, and safe when replicas start at once. Opening
// a store does it too; `seam migrate` calls it before a rollout.
func Migrate(ctx context.Context, db *storage.DB) error {
	return db.Migrate(ctx, component, migrations)
}
