package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// replica is the target table of one source table: the canonical model's
// fields as columns, the primary key of the source, and a tombstone flag.
// It is maintained by upsert on the primary key, guarded by the source
// position so an older change never overwrites a newer row.
type replica struct {
	ident  string // quoted schema.table
	fields []*contractv1.Field
	keys   []int // indexes in fields of the primary key columns
	upsert string
	remove string
	hard   bool
}

// newReplica plans the statements for a canonical model.
func newReplica(schema, table string, model *contractv1.CanonicalModel, hardDeletes bool) (*replica, error) {
	r := &replica{ident: pgx.Identifier{schema, table}.Sanitize(), fields: model.GetFields(), hard: hardDeletes}
	for i, f := range r.fields {
		if f.GetKey() && !metaField(f.GetName()) {
			r.keys = append(r.keys, i)
		}
	}
	if len(r.keys) == 0 {
		return nil, fmt.Errorf("canonical model %s declares no key besides the position: the replica upserts by the table's primary key", model.GetName())
	}
	var cols, sel, args, set, keyCols []string
	for i, f := range r.fields {
		q := pgx.Identifier{f.GetName()}.Sanitize()
		cols = append(cols, q)
		sel = append(sel, fmt.Sprintf("u.c%d::%s", i, targetType(f.GetType())))
		args = append(args, fmt.Sprintf("$%d::text[]", i+1))
		set = append(set, fmt.Sprintf("%s = EXCLUDED.%s", q, q))
	}
	for _, k := range r.keys {
		keyCols = append(keyCols, pgx.Identifier{r.fields[k].GetName()}.Sanitize())
	}
	alias := make([]string, len(r.fields))
	for i := range alias {
		alias[i] = fmt.Sprintf("c%d", i)
	}
	del := len(r.fields) + 1
	r.upsert = fmt.Sprintf(`INSERT INTO %s AS t (%s, %s)
SELECT %s, u.del FROM unnest(%s, $%d::boolean[]) AS u(%s, del)
ON CONFLICT (%s) DO UPDATE SET %s, %s = EXCLUDED.%s
WHERE (t.%s, t.%s) <= (EXCLUDED.%s, EXCLUDED.%s)`,
		r.ident, strings.Join(cols, ", "), columnDeleted,
		strings.Join(sel, ", "), strings.Join(args, ", "), del, strings.Join(alias, ", "),
		strings.Join(keyCols, ", "), strings.Join(set, ", "), columnDeleted, columnDeleted,
		FieldLSN, FieldSeq, FieldLSN, FieldSeq)
	var kargs, ksel, kalias []string
	for j, k := range r.keys {
		kargs = append(kargs, fmt.Sprintf("$%d::text[]", j+1))
		ksel = append(ksel, fmt.Sprintf("u.k%d::%s", j, targetType(r.fields[k].GetType())))
		kalias = append(kalias, fmt.Sprintf("k%d", j))
	}
	r.remove = fmt.Sprintf("DELETE FROM %s WHERE (%s) IN (SELECT %s FROM unnest(%s) AS u(%s))",
		r.ident, strings.Join(keyCols, ", "), strings.Join(ksel, ", "), strings.Join(kargs, ", "), strings.Join(kalias, ", "))
	return r, nil
}

// ensureReplica creates the target table of a canonical model, or adds
// the columns of fields it lacks (an additive version). A column whose
// type differs from its field's is an error naming both: changing it
// would rewrite the replica, which is the operator's decision.
func ensureReplica(ctx context.Context, tx pgx.Tx, schema, table string, model *contractv1.CanonicalModel) error {
	ident := pgx.Identifier{schema, table}.Sanitize()
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create target schema %s: %w", schema, err)
	}
	existing := map[string]string{}
	rows, err := tx.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped`, schema, table)
	if err != nil {
		return fmt.Errorf("read target table %s: %w", ident, err)
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return fmt.Errorf("read target table %s: %w", ident, err)
		}
		existing[name] = typ
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read target table %s: %w", ident, err)
	}
	if len(existing) == 0 {
		var cols, keys []string
		for _, f := range model.GetFields() {
			col := pgx.Identifier{f.GetName()}.Sanitize() + " " + targetType(f.GetType())
			if f.GetKey() && !metaField(f.GetName()) {
				col += " NOT NULL"
				keys = append(keys, pgx.Identifier{f.GetName()}.Sanitize())
			}
			cols = append(cols, col)
		}
		cols = append(cols, columnDeleted+" boolean NOT NULL DEFAULT false")
		ddl := fmt.Sprintf("CREATE TABLE %s (%s, PRIMARY KEY (%s))", ident, strings.Join(cols, ", "), strings.Join(keys, ", "))
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("create target table %s: %w", ident, err)
		}
		return nil
	}
	for _, f := range model.GetFields() {
		want := targetType(f.GetType())
		have, ok := existing[f.GetName()]
		if !ok {
			if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", ident, pgx.Identifier{f.GetName()}.Sanitize(), want)); err != nil {
				return fmt.Errorf("add column %s to target table %s: %w", f.GetName(), ident, err)
			}
			continue
		}
		if have != want {
			return fmt.Errorf("target table %s: column %s is %s but canonical field %s is %s; alter the column (ALTER TABLE %s ALTER COLUMN %s TYPE %s USING ...) and restart",
				ident, f.GetName(), have, f.GetName(), f.GetType(), ident, pgx.Identifier{f.GetName()}.Sanitize(), want)
		}
	}
	return nil
}

// canonicalRow is one accepted change in canonical form.
type canonicalRow struct {
	op       byte
	lsn      uint64
	seq      int64
	recordID string
	json     []byte
	vals     []*string // per replica field; nil is NULL
	// resent: a snapshot row a resent chunk had applied before (see
	// change.resent).
	resent bool
}

// joinKeys is a FROM clause that joins the replica's rows, as r, to arrays
// of key values passed as $1, $2, … in the order of keys, each compared as
// its field's type; u.ord numbers the keys from 1.
func (r *replica) joinKeys(keys []*contractv1.Field) string {
	un, alias, on := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for j, k := range keys {
		un[j] = fmt.Sprintf("$%d::text[]", j+1)
		alias[j] = fmt.Sprintf("k%d", j)
		on[j] = fmt.Sprintf("r.%s = u.k%d::%s", pgx.Identifier{k.GetName()}.Sanitize(), j, targetType(k.GetType()))
	}
	return fmt.Sprintf("unnest(%s) WITH ORDINALITY AS u(%s, ord) JOIN %s r ON %s",
		strings.Join(un, ", "), strings.Join(alias, ", "), r.ident, strings.Join(on, " AND "))
}

// missing returns the rows whose primary key the replica does not hold.
func (r *replica) missing(ctx context.Context, q queryer, rows []canonicalRow) ([]canonicalRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	args := make([]any, len(r.keys))
	keys := make([]*contractv1.Field, len(r.keys))
	for j, k := range r.keys {
		col := make([]*string, len(rows))
		for i := range rows {
			col[i] = rows[i].vals[k]
		}
		args[j], keys[j] = col, r.fields[k]
	}
	res, err := q.Query(ctx, "SELECT u.ord FROM "+r.joinKeys(keys), args...)
	if err != nil {
		return nil, fmt.Errorf("look up rows of %s: %w", r.ident, err)
	}
	ords, err := pgx.CollectRows(res, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("look up rows of %s: %w", r.ident, err)
	}
	held := make(map[int64]bool, len(ords))
	for _, ord := range ords {
		held[ord] = true
	}
	var out []canonicalRow
	for i := range rows {
		if !held[int64(i+1)] {
			out = append(out, rows[i])
		}
	}
	return out, nil
}

// decodeCanonical reads a canonical record's values in the replica's
// field order. Strings lose their quotes; numbers, booleans, objects and
// arrays keep their JSON text, which PostgreSQL reads back exactly.
func (r *replica) decodeCanonical(data []byte) ([]*string, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("canonical record is not a JSON object: %w", err)
	}
	vals := make([]*string, len(r.fields))
	for i, f := range r.fields {
		raw, ok := obj[f.GetName()]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if len(raw) > 0 && raw[0] == '"' {
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("canonical field %s: %w", f.GetName(), err)
			}
		} else {
			s = string(raw)
		}
		vals[i] = &s
	}
	return vals, nil
}

// keyOf is a row's primary key as one comparable string.
func (r *replica) keyOf(vals []*string) string {
	var b strings.Builder
	for _, k := range r.keys {
		if vals[k] != nil {
			b.WriteString(*vals[k])
		}
		b.WriteByte(0)
	}
	return b.String()
}

// apply writes a batch of changes, in log order, to the replica: the last
// change of each key wins; deletes become tombstones (or are removed with
// hard deletes).
func (r *replica) apply(ctx context.Context, tx pgx.Tx, rows []canonicalRow) error {
	last := map[string]int{}
	var order []string
	for i := range rows {
		k := r.keyOf(rows[i].vals)
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = i
	}
	cols := make([][]*string, len(r.fields))
	var deleted []bool
	keyCols := make([][]*string, len(r.keys))
	for _, k := range order {
		row := &rows[last[k]]
		if row.op == 'd' && r.hard {
			for j, ki := range r.keys {
				keyCols[j] = append(keyCols[j], row.vals[ki])
			}
			continue
		}
		for i := range r.fields {
			cols[i] = append(cols[i], row.vals[i])
		}
		deleted = append(deleted, row.op == 'd')
	}
	if len(deleted) > 0 {
		args := make([]any, 0, len(cols)+1)
		for _, c := range cols {
			args = append(args, c)
		}
		args = append(args, deleted)
		if _, err := tx.Exec(ctx, r.upsert, args...); err != nil {
			return fmt.Errorf("upsert %d rows into %s: %w", len(deleted), r.ident, err)
		}
	}
	if len(keyCols) > 0 && len(keyCols[0]) > 0 {
		args := make([]any, len(keyCols))
		for j, c := range keyCols {
			args[j] = c
		}
		if _, err := tx.Exec(ctx, r.remove, args...); err != nil {
			return fmt.Errorf("delete %d rows from %s: %w", len(keyCols[0]), r.ident, err)
		}
	}
	return nil
}
