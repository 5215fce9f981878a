package idmap

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/storage"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// changeChannel is the storage notification channel every committed idmap
// change is announced on, so replicas reload.
const changeChannel = "seam_idmap_changes"

// ErrNamespaceExists is returned by CreateNamespace for a taken name.
var ErrNamespaceExists = errors.New("namespace already exists")

// ErrFormatExists is returned by AddFormat for a format name the
// namespace already has.
var ErrFormatExists = errors.New("format already exists")

// ErrNamespaceNotFound is returned for a namespace the store lacks.
var ErrNamespaceNotFound = errors.New("namespace not found")

// TableKey names one lookup table: an unordered pair of formats, stored
// with A < B so both import directions land in the same table.
type TableKey struct {
	Namespace string
	A, B      string
}

// tableKey orders from and to into a TableKey; swapped reports whether the
// caller's "from" side is the table's B side.
func tableKey(namespace, from, to string) (key TableKey, swapped bool) {
	if from < to {
		return TableKey{namespace, from, to}, false
	}
	return TableKey{namespace, to, from}, true
}

// TableState is a table's committed metadata.
type TableState struct {
	Key        TableKey
	Generation int64
	Pairs      int64
	Updated    time.Time
}

// AuditEntry is one audited change, written in the transaction it describes.
type AuditEntry struct {
	Principal string
	Action    string
	Detail    string
}

// TableChange is what a planned update writes: ids of side A to delete,
// then pairs to insert. An empty change commits nothing but the audit entry.
type TableChange struct {
	DeleteA []string
	Insert  [][2]string
	Audit   AuditEntry
}

// LoggedChange is the change that made one generation of a table, as the
// change log keeps it for replicas to apply instead of reloading.
type LoggedChange struct {
	Generation int64
	DeleteA    []string
	Insert     [][2]string
}

// ErrNoChangeLog is returned by TableChanges when the log does not hold
// every generation asked for (pruned, or a change too large to log): the
// caller reads the whole table instead.
var ErrNoChangeLog = errors.New("the change log does not cover those generations")

// Committed is what a PlanFunc may read of the locked table: its
// generation, its pairs, and the logged changes after a generation up to
// this one.
type Committed struct {
	Generation int64
	LoadPairs  func(fn func(a, b string) error) error
	Changes    func(after int64) ([]LoggedChange, error)
}

// PlanFunc decides a table update inside the store's transaction, given the
// committed table. Returning an error rolls everything back.
type PlanFunc func(committed Committed) (TableChange, error)

// Store is idmap's persistence. One implementation over platform/storage
// serves SQLite and PostgreSQL; the conformance suite runs it on both.
type Store interface {
	// CreateNamespace stores ns (formats and rules); ErrNamespaceExists if taken.
	CreateNamespace(ctx context.Context, ns *idmapv1.Namespace, audit AuditEntry) error
	// Namespaces returns every namespace with formats, rules and create time.
	Namespaces(ctx context.Context) ([]*idmapv1.Namespace, error)
	// AddFormat appends f to the formats of namespace;
	// ErrNamespaceNotFound or ErrFormatExists when it cannot.
	AddFormat(ctx context.Context, namespace string, f *idmapv1.Format, audit AuditEntry) error
	// PutRule sets the rule of its ordered format pair.
	PutRule(ctx context.Context, namespace string, rule *idmapv1.Rule, audit AuditEntry) error
	// Tables returns the metadata of every lookup table.
	Tables(ctx context.Context) ([]TableState, error)
	// LoadTable streams the pairs of a table as of one generation, which
	// it returns.
	LoadTable(ctx context.Context, key TableKey, fn func(a, b string) error) (int64, error)
	// TableChanges returns the logged changes of the generations after
	// `after` up to upTo, oldest first; ErrNoChangeLog when the log lacks one.
	TableChanges(ctx context.Context, key TableKey, after, upTo int64) ([]LoggedChange, error)
	// AddCounters adds translation outcomes to the shared counters.
	AddCounters(ctx context.Context, counters []*idmapv1.Counter) error
	// Counters returns the shared counters of namespace (all when empty).
	Counters(ctx context.Context, namespace string) ([]*idmapv1.Counter, error)
	// UpdateTable runs plan under the table's lock and writes its change
	// atomically, bumping the generation when pairs changed.
	UpdateTable(ctx context.Context, key TableKey, plan PlanFunc) (TableState, error)
	// Audit lists the newest audit records of namespace (all when empty).
	Audit(ctx context.Context, namespace string, limit int) ([]*idmapv1.AuditRecord, error)
}

// migrations create idmap's schema. Pairs are keyed by side A only: the
// service checks one-to-one on side B under the table lock before writing,
// and a second unique index would halve bulk-load speed.
var migrations = []storage.Migration{{
	Version:  1,
	Name:     "namespaces, rules, tables, pairs, audit",
	SQLite:   sqliteSQL.Replace(schemaV1),
	Postgres: postgresSQL.Replace(schemaV1),
}, {
	// Replicas apply each generation's change instead of reloading a table;
	// ops is NULL for a change too large to log. Translation counters are
	// summed here from every replica, so GetStats answers the same anywhere.
	Version:  2,
	Name:     "table change log, shared translation counters",
	SQLite:   sqliteSQL.Replace(schemaV2),
	Postgres: postgresSQL.Replace(schemaV2),
}}

// sqliteSQL and postgresSQL fill in a migration's types for each dialect:
// the types differ, the tables do not.
var (
	sqliteSQL = strings.NewReplacer("$INT", "INTEGER", "$BLOB", "BLOB", "$ID", "INTEGER PRIMARY KEY",
		"$SEQ", "INTEGER PRIMARY KEY AUTOINCREMENT", "$NOROWID", " WITHOUT ROWID")
	postgresSQL = strings.NewReplacer("$INT", "BIGINT", "$BLOB", "BYTEA", "$ID", "BIGSERIAL PRIMARY KEY",
		"$SEQ", "BIGSERIAL PRIMARY KEY", "$NOROWID", "")
)

const schemaV1 = `
CREATE TABLE idmap_namespaces (name TEXT PRIMARY KEY, spec $BLOB NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE idmap_rules (namespace TEXT NOT NULL REFERENCES idmap_namespaces(name), from_format TEXT NOT NULL,
  to_format TEXT NOT NULL, spec $BLOB NOT NULL, PRIMARY KEY (namespace, from_format, to_format));
CREATE TABLE idmap_tables (id $ID, namespace TEXT NOT NULL REFERENCES idmap_namespaces(name),
  format_a TEXT NOT NULL, format_b TEXT NOT NULL, generation $INT NOT NULL, pairs $INT NOT NULL,
  updated_at TEXT NOT NULL, UNIQUE (namespace, format_a, format_b));
CREATE TABLE idmap_pairs (table_id $INT NOT NULL, a_id TEXT NOT NULL, b_id TEXT NOT NULL,
  PRIMARY KEY (table_id, a_id))$NOROWID;
CREATE TABLE idmap_audit (seq $SEQ, at TEXT NOT NULL, principal TEXT NOT NULL,
  namespace TEXT NOT NULL, action TEXT NOT NULL, detail TEXT NOT NULL);
`

const schemaV2 = `
CREATE TABLE idmap_changes (table_id $INT NOT NULL, generation $INT NOT NULL, ops $BLOB,
  PRIMARY KEY (table_id, generation))$NOROWID;
CREATE TABLE idmap_counters (namespace TEXT NOT NULL, from_format TEXT NOT NULL, to_format TEXT NOT NULL,
  hits $INT NOT NULL, misses $INT NOT NULL, invalid $INT NOT NULL,
  PRIMARY KEY (namespace, from_format, to_format))$NOROWID;
`

// sqlStore implements Store over platform/storage.
type sqlStore struct {
	db *storage.DB
}

// NewStore migrates db and returns the Store over it.
func NewStore(ctx context.Context, db *storage.DB) (Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("idmap store: %w", err)
	}
	return &sqlStore{db: db}, nil
}

const timeLayout = time.RFC3339Nano

func (s *sqlStore) audit(ctx context.Context, tx *sql.Tx, namespace string, a AuditEntry) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO idmap_audit (at, principal, namespace, action, detail) VALUES ($1, $2, $3, $4, $5)",
		time.Now().UTC().Format(timeLayout), a.Principal, namespace, a.Action, a.Detail)
	if err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}

func (s *sqlStore) CreateNamespace(ctx context.Context, ns *idmapv1.Namespace, audit AuditEntry) error {
	spec := proto.Clone(ns).(*idmapv1.Namespace)
	rules := spec.Rules
	spec.Rules, spec.Tables = nil, nil
	if spec.CreateTime == nil {
		spec.CreateTime = timestamppb.Now()
	}
	blob, err := proto.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encode namespace %q: %w", ns.GetName(), err)
	}
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		var exists int
		err := tx.QueryRowContext(ctx, "SELECT count(*) FROM idmap_namespaces WHERE name = $1", ns.GetName()).Scan(&exists)
		if err != nil {
			return fmt.Errorf("look up namespace %q: %w", ns.GetName(), err)
		}
		if exists > 0 {
			return fmt.Errorf("namespace %q: %w", ns.GetName(), ErrNamespaceExists)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO idmap_namespaces (name, spec, created_at) VALUES ($1, $2, $3)",
			ns.GetName(), blob, spec.CreateTime.AsTime().Format(timeLayout)); err != nil {
			return fmt.Errorf("insert namespace %q: %w", ns.GetName(), err)
		}
		for _, r := range rules {
			if err := putRule(ctx, tx, ns.GetName(), r); err != nil {
				return err
			}
		}
		if err := s.audit(ctx, tx, ns.GetName(), audit); err != nil {
			return err
		}
		return s.db.Notify(ctx, tx, changeChannel)
	})
}

func (s *sqlStore) AddFormat(ctx context.Context, namespace string, f *idmapv1.Format, audit AuditEntry) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		lock := ""
		if s.db.Dialect == storage.Postgres {
			lock = " FOR UPDATE" // two replicas adding formats must not lose one
		}
		var blob []byte
		err := tx.QueryRowContext(ctx, "SELECT spec FROM idmap_namespaces WHERE name = $1"+lock, namespace).Scan(&blob)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("namespace %q: %w", namespace, ErrNamespaceNotFound)
		}
		if err != nil {
			return fmt.Errorf("read namespace %q: %w", namespace, err)
		}
		spec := &idmapv1.Namespace{}
		if err := proto.Unmarshal(blob, spec); err != nil {
			return fmt.Errorf("decode namespace %q: %w", namespace, err)
		}
		for _, g := range spec.GetFormats() {
			if g.GetName() == f.GetName() {
				return fmt.Errorf("format %q of %q: %w", f.GetName(), namespace, ErrFormatExists)
			}
		}
		spec.Formats = append(spec.Formats, proto.Clone(f).(*idmapv1.Format))
		if blob, err = proto.Marshal(spec); err != nil {
			return fmt.Errorf("encode namespace %q: %w", namespace, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE idmap_namespaces SET spec = $1 WHERE name = $2", blob, namespace); err != nil {
			return fmt.Errorf("store namespace %q: %w", namespace, err)
		}
		if err := s.audit(ctx, tx, namespace, audit); err != nil {
			return err
		}
		return s.db.Notify(ctx, tx, changeChannel)
	})
}

func putRule(ctx context.Context, tx *sql.Tx, namespace string, r *idmapv1.Rule) error {
	blob, err := proto.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode rule %s→%s: %w", r.GetFromFormat(), r.GetToFormat(), err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO idmap_rules (namespace, from_format, to_format, spec) VALUES ($1, $2, $3, $4)
ON CONFLICT (namespace, from_format, to_format) DO UPDATE SET spec = excluded.spec`, namespace, r.GetFromFormat(), r.GetToFormat(), blob)
	if err != nil {
		return fmt.Errorf("store rule %s→%s of %q: %w", r.GetFromFormat(), r.GetToFormat(), namespace, err)
	}
	return nil
}

func (s *sqlStore) PutRule(ctx context.Context, namespace string, rule *idmapv1.Rule, audit AuditEntry) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		if err := putRule(ctx, tx, namespace, rule); err != nil {
			return err
		}
		if err := s.audit(ctx, tx, namespace, audit); err != nil {
			return err
		}
		return s.db.Notify(ctx, tx, changeChannel)
	})
}

func (s *sqlStore) Namespaces(ctx context.Context) ([]*idmapv1.Namespace, error) {
	var out []*idmapv1.Namespace
	byName := map[string]*idmapv1.Namespace{}
	err := s.eachSpec(ctx, "SELECT name, spec FROM idmap_namespaces ORDER BY name", "namespaces", "namespace", func(name string, blob []byte) error {
		ns := &idmapv1.Namespace{}
		if err := proto.Unmarshal(blob, ns); err != nil {
			return fmt.Errorf("decode namespace %q: %w", name, err)
		}
		out = append(out, ns)
		byName[name] = ns
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.eachSpec(ctx, "SELECT namespace, spec FROM idmap_rules ORDER BY namespace, from_format, to_format", "rules", "rule", func(name string, blob []byte) error {
		r := &idmapv1.Rule{}
		if err := proto.Unmarshal(blob, r); err != nil {
			return fmt.Errorf("decode rule of %q: %w", name, err)
		}
		if ns := byName[name]; ns != nil {
			ns.Rules = append(ns.Rules, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachSpec calls decode with each (name, spec) row query reads; list and
// row name what is read, in its errors.
func (s *sqlStore) eachSpec(ctx context.Context, query, list, row string, decode func(name string, blob []byte) error) error {
	rows, err := s.db.SQL.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("list %s: %w", list, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var blob []byte
		if err := rows.Scan(&name, &blob); err != nil {
			return fmt.Errorf("read %s row: %w", row, err)
		}
		if err := decode(name, blob); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list %s: %w", list, err)
	}
	return nil
}

func (s *sqlStore) Tables(ctx context.Context) ([]TableState, error) {
	rows, err := s.db.SQL.QueryContext(ctx, "SELECT namespace, format_a, format_b, generation, pairs, updated_at FROM idmap_tables ORDER BY namespace, format_a, format_b")
	return storage.ScanRows(rows, err, "list tables", func(row storage.Row) (TableState, error) {
		var t TableState
		var updated string
		if err := row.Scan(&t.Key.Namespace, &t.Key.A, &t.Key.B, &t.Generation, &t.Pairs, &updated); err != nil {
			return t, fmt.Errorf("read table row: %w", err)
		}
		t.Updated, _ = time.Parse(timeLayout, updated)
		return t, nil
	})
}

func (s *sqlStore) LoadTable(ctx context.Context, key TableKey, fn func(a, b string) error) (int64, error) {
	return loadPairs(ctx, s.db.SQL, key, fn)
}

// querier is what loadPairs needs from a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// loadPairs streams a table's pairs and returns their generation. One
// statement reads both, so they come from one snapshot of the database
// even outside a transaction, on either store.
func loadPairs(ctx context.Context, q querier, key TableKey, fn func(a, b string) error) (int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT t.generation, p.a_id, p.b_id FROM idmap_tables t LEFT JOIN idmap_pairs p ON p.table_id = t.id
WHERE t.namespace = $1 AND t.format_a = $2 AND t.format_b = $3`, key.Namespace, key.A, key.B)
	if err != nil {
		return 0, fmt.Errorf("load table %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
	}
	defer rows.Close()
	var gen int64
	for rows.Next() {
		var a, b sql.NullString
		if err := rows.Scan(&gen, &a, &b); err != nil {
			return 0, fmt.Errorf("read pair of %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		if !a.Valid {
			continue // the table row of a table without pairs
		}
		if err := fn(a.String, b.String); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("load table %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
	}
	return gen, nil
}

func (s *sqlStore) TableChanges(ctx context.Context, key TableKey, after, upTo int64) ([]LoggedChange, error) {
	return tableChanges(ctx, s.db.SQL, key, after, upTo)
}

func tableChanges(ctx context.Context, q querier, key TableKey, after, upTo int64) ([]LoggedChange, error) {
	if upTo <= after {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT c.generation, c.ops FROM idmap_changes c JOIN idmap_tables t ON t.id = c.table_id
WHERE t.namespace = $1 AND t.format_a = $2 AND t.format_b = $3 AND c.generation > $4 AND c.generation <= $5 ORDER BY c.generation`,
		key.Namespace, key.A, key.B, after, upTo)
	if err != nil {
		return nil, fmt.Errorf("read change log of %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
	}
	defer rows.Close()
	var out []LoggedChange
	want := after + 1
	for rows.Next() {
		var c LoggedChange
		var ops []byte
		if err := rows.Scan(&c.Generation, &ops); err != nil {
			return nil, fmt.Errorf("read change log of %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		if c.Generation != want || ops == nil {
			return nil, fmt.Errorf("table %s %s↔%s generation %d: %w", key.Namespace, key.A, key.B, want, ErrNoChangeLog)
		}
		if c.DeleteA, c.Insert, err = decodeOps(ops); err != nil {
			return nil, fmt.Errorf("change log of %s %s↔%s generation %d: %w", key.Namespace, key.A, key.B, c.Generation, err)
		}
		out = append(out, c)
		want++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read change log of %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
	}
	if want != upTo+1 {
		return nil, fmt.Errorf("table %s %s↔%s generation %d: %w", key.Namespace, key.A, key.B, want, ErrNoChangeLog)
	}
	return out, nil
}

// maxLoggedOps is the largest change the log keeps: a replica applies a
// larger one by reading the table, which costs about as much.
const maxLoggedOps = 100_000

// keptGenerations is how many recent generations of a table the log
// keeps; a replica further behind reads the whole table.
const keptGenerations = 1000

// encodeOps encodes a change for the log: a count of deleted A ids, each
// length-prefixed, then a count of inserted pairs, each two such ids.
func encodeOps(deleteA []string, insert [][2]string) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(deleteA)))
	for _, a := range deleteA {
		str(a)
	}
	b = binary.AppendUvarint(b, uint64(len(insert)))
	for _, p := range insert {
		str(p[0])
		str(p[1])
	}
	return b
}

func decodeOps(b []byte) (deleteA []string, insert [][2]string, err error) {
	bad := errors.New("malformed change record")
	count := func() (int, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return 0, false
		}
		b = b[k:]
		return int(n), true
	}
	str := func() (string, bool) {
		n, ok := count()
		if !ok || n > len(b) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	n, ok := count()
	if !ok {
		return nil, nil, bad
	}
	deleteA = make([]string, 0, n)
	for range n {
		a, ok := str()
		if !ok {
			return nil, nil, bad
		}
		deleteA = append(deleteA, a)
	}
	if n, ok = count(); !ok {
		return nil, nil, bad
	}
	insert = make([][2]string, 0, n)
	for range n {
		a, ok1 := str()
		bID, ok2 := str()
		if !ok1 || !ok2 {
			return nil, nil, bad
		}
		insert = append(insert, [2]string{a, bID})
	}
	if len(b) != 0 {
		return nil, nil, bad
	}
	return deleteA, insert, nil
}

// insertBatch is the number of pairs per multi-row INSERT: 3 parameters
// each stays far below both dialects' parameter limits.
const insertBatch = 500

func (s *sqlStore) UpdateTable(ctx context.Context, key TableKey, plan PlanFunc) (TableState, error) {
	var state TableState
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		now := time.Now().UTC()
		if _, err := tx.ExecContext(ctx, `INSERT INTO idmap_tables (namespace, format_a, format_b, generation, pairs, updated_at)
VALUES ($1, $2, $3, 0, 0, $4) ON CONFLICT (namespace, format_a, format_b) DO NOTHING`, key.Namespace, key.A, key.B, now.Format(timeLayout)); err != nil {
			return fmt.Errorf("create table row %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		lock := ""
		if s.db.Dialect == storage.Postgres {
			// Serialises imports of one table across replicas; SQLite's
			// BEGIN IMMEDIATE already holds the database write lock.
			lock = " FOR UPDATE"
		}
		var id, gen, pairs int64
		if err := tx.QueryRowContext(ctx, "SELECT id, generation, pairs FROM idmap_tables WHERE namespace = $1 AND format_a = $2 AND format_b = $3"+lock,
			key.Namespace, key.A, key.B).Scan(&id, &gen, &pairs); err != nil {
			return fmt.Errorf("lock table %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		change, err := plan(Committed{Generation: gen,
			LoadPairs: func(fn func(a, b string) error) error {
				_, err := loadPairs(ctx, tx, key, fn)
				return err
			},
			Changes: func(after int64) ([]LoggedChange, error) { return tableChanges(ctx, tx, key, after, gen) },
		})
		if err != nil {
			return err
		}
		if err := s.audit(ctx, tx, key.Namespace, change.Audit); err != nil {
			return err
		}
		state = TableState{Key: key, Generation: gen, Pairs: pairs, Updated: now}
		if len(change.DeleteA) == 0 && len(change.Insert) == 0 {
			return nil
		}
		deleted, err := deletePairs(ctx, tx, id, change.DeleteA)
		if err != nil {
			return fmt.Errorf("table %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		if err := insertPairs(ctx, tx, s.db.Dialect, id, change.Insert); err != nil {
			return fmt.Errorf("table %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		state.Generation = gen + 1
		state.Pairs = pairs - deleted + int64(len(change.Insert))
		if _, err := tx.ExecContext(ctx, "UPDATE idmap_tables SET generation = $1, pairs = $2, updated_at = $3 WHERE id = $4",
			state.Generation, state.Pairs, now.Format(timeLayout), id); err != nil {
			return fmt.Errorf("bump generation of %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		var ops []byte
		if len(change.DeleteA)+len(change.Insert) <= maxLoggedOps {
			ops = encodeOps(change.DeleteA, change.Insert)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO idmap_changes (table_id, generation, ops) VALUES ($1, $2, $3)", id, state.Generation, ops); err != nil {
			return fmt.Errorf("log generation %d of %s %s↔%s: %w", state.Generation, key.Namespace, key.A, key.B, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM idmap_changes WHERE table_id = $1 AND generation <= $2", id, state.Generation-keptGenerations); err != nil {
			return fmt.Errorf("prune the change log of %s %s↔%s: %w", key.Namespace, key.A, key.B, err)
		}
		return s.db.Notify(ctx, tx, changeChannel)
	})
	return state, err
}

func deletePairs(ctx context.Context, tx *sql.Tx, tableID int64, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	stmt, err := tx.PrepareContext(ctx, "DELETE FROM idmap_pairs WHERE table_id = $1 AND a_id = $2")
	if err != nil {
		return 0, fmt.Errorf("prepare delete: %w", err)
	}
	defer stmt.Close()
	var n int64
	for _, id := range ids {
		res, err := stmt.ExecContext(ctx, tableID, id)
		if err != nil {
			return n, fmt.Errorf("delete pair %q: %w", id, err)
		}
		c, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("delete pair %q: %w", id, err)
		}
		n += c
	}
	return n, nil
}

func insertPairs(ctx context.Context, tx *sql.Tx, d storage.Dialect, tableID int64, pairs [][2]string) error {
	var full *sql.Stmt
	defer func() {
		if full != nil {
			_ = full.Close()
		}
	}()
	// In key order every insert lands next to the previous one in the
	// primary-key B-tree instead of on a random page.
	pairs = slices.Clone(pairs)
	slices.SortFunc(pairs, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
	args := make([]any, 0, insertBatch*3)
	for start := 0; start < len(pairs); start += insertBatch {
		batch := pairs[start:min(start+insertBatch, len(pairs))]
		args = args[:0]
		for _, p := range batch {
			args = append(args, tableID, p[0], p[1])
		}
		var err error
		if len(batch) == insertBatch {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, insertSQL(d, insertBatch)); err != nil {
					return fmt.Errorf("prepare insert: %w", err)
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insertSQL(d, len(batch)), args...)
		}
		if err != nil {
			return fmt.Errorf("insert pairs %d-%d: %w", start+1, start+len(batch), err)
		}
	}
	return nil
}

// insertSQL is a multi-row INSERT. SQLite gets anonymous "?" parameters:
// binding numbered ones looks each name up in a list, which is quadratic in
// the row count and made bulk loads four times slower.
func insertSQL(d storage.Dialect, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO idmap_pairs (table_id, a_id, b_id) VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		if d == storage.SQLite {
			b.WriteString("(?,?,?)")
		} else {
			fmt.Fprintf(&b, "($%d,$%d,$%d)", 3*i+1, 3*i+2, 3*i+3)
		}
	}
	return b.String()
}

func (s *sqlStore) Audit(ctx context.Context, namespace string, limit int) ([]*idmapv1.AuditRecord, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT seq, at, principal, namespace, action, detail FROM idmap_audit
WHERE $1 = '' OR namespace = $1 ORDER BY seq DESC LIMIT $2`, namespace, limit)
	return storage.ScanRows(rows, err, "list audit", func(row storage.Row) (*idmapv1.AuditRecord, error) {
		r := &idmapv1.AuditRecord{}
		var at string
		if err := row.Scan(&r.Sequence, &at, &r.Principal, &r.Namespace, &r.Action, &r.Detail); err != nil {
			return nil, fmt.Errorf("read audit row: %w", err)
		}
		if t, err := time.Parse(timeLayout, at); err == nil {
			r.Time = timestamppb.New(t)
		}
		return r, nil
	})
}

// Migrate applies idmap's schema migrations to db: versioned, forward-only,
// idempotent, and safe when replicas start at once. NewStore does it too;
// `seam migrate` calls it before a rollout.
func Migrate(ctx context.Context, db *storage.DB) error {
	return db.Migrate(ctx, "idmap", migrations)
}

func (s *sqlStore) AddCounters(ctx context.Context, counters []*idmapv1.Counter) error {
	if len(counters) == 0 {
		return nil
	}
	// No notification: counters change no snapshot.
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		for _, c := range counters {
			if _, err := tx.ExecContext(ctx, `INSERT INTO idmap_counters (namespace, from_format, to_format, hits, misses, invalid)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (namespace, from_format, to_format) DO UPDATE SET
hits = idmap_counters.hits + excluded.hits, misses = idmap_counters.misses + excluded.misses, invalid = idmap_counters.invalid + excluded.invalid`,
				c.GetNamespace(), c.GetFromFormat(), c.GetToFormat(), c.GetHits(), c.GetMisses(), c.GetInvalid()); err != nil {
				return fmt.Errorf("add counters of %s %s→%s: %w", c.GetNamespace(), c.GetFromFormat(), c.GetToFormat(), err)
			}
		}
		return nil
	})
}

func (s *sqlStore) Counters(ctx context.Context, namespace string) ([]*idmapv1.Counter, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT namespace, from_format, to_format, hits, misses, invalid FROM idmap_counters
WHERE $1 = '' OR namespace = $1 ORDER BY namespace, from_format, to_format`, namespace)
	return storage.ScanRows(rows, err, "read counters", func(row storage.Row) (*idmapv1.Counter, error) {
		c := &idmapv1.Counter{}
		err := row.Scan(&c.Namespace, &c.FromFormat, &c.ToFormat, &c.Hits, &c.Misses, &c.Invalid)
		return c, err
	})
}
