package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// A column added with a DEFAULT fills the rows that already exist without
// a change event: PostgreSQL 11+ keeps a non-volatile default (a
// constant, or now(), evaluated once) in the catalog
// (pg_attribute.attmissingval) instead of rewriting the table, and
// rewrites it, silently for the stream, when the default is volatile
// (clock_timestamp(), gen_random_uuid()). The replica's existing rows take
// the catalog's missing value in the same version switch that adds the
// column; a default the catalog does not keep, on a table rewritten since
// its last shape was taken on, halts the table, because no value the
// source can read is the one each row got. A default without a missing
// value on a table not rewritten was set after the column was added
// (ALTER COLUMN … SET DEFAULT), which leaves existing rows NULL: nothing
// to fill, and no halt. The relation's relfilenode tells a rewrite: it
// changes with every rewrite (also VACUUM FULL, CLUSTER and TRUNCATE,
// which then halt too: the source cannot tell them apart).

// columnFill is the value the rows that predate an added column hold.
type columnFill struct {
	column string
	value  string // text form, as the column's type prints it
}

// addedColumnFills reads, for every column of next that prev lacks, what
// the rows that predate it hold: fills for the constant defaults, and a
// line for each default PostgreSQL evaluated row by row.
func (s *Source) addedColumnFills(ctx context.Context, t *table, prev, next Shape) (fills []columnFill, volatile []string, err error) {
	for _, c := range next {
		if prev.index(c.Name) >= 0 {
			continue
		}
		var hasMissing bool
		var missing, def *string
		q := fmt.Sprintf(`SELECT a.atthasmissing, CASE WHEN a.atthasmissing THEN (a.attmissingval::text::%s[])[1]::text END, pg_get_expr(d.adbin, d.adrelid)
  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = $1::regclass AND a.attname = $2 AND NOT a.attisdropped`, c.TypeName)
		err := s.source.QueryRow(ctx, q, t.name.ident(), c.Name).Scan(&hasMissing, &missing, &def)
		if err == pgx.ErrNoRows {
			continue // dropped again since: the next shape says so
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read the default of the added column %s.%s: %w", t.name, c.Name, err)
		}
		switch {
		case hasMissing && missing != nil:
			fills = append(fills, columnFill{column: c.Name, value: *missing})
		case def != nil:
			rewritten, err := s.rewrittenSince(ctx, t)
			if err != nil {
				return nil, nil, err
			}
			if rewritten {
				volatile = append(volatile, fmt.Sprintf("column %s has DEFAULT %s and the table was rewritten since its last change of columns (a volatile default, evaluated row by row, or a VACUUM FULL, CLUSTER or TRUNCATE); the values the existing rows got never travel the stream", c.Name, *def))
			}
		}
	}
	return fills, volatile, nil
}

// rewrittenSince reports whether PostgreSQL rewrote t's relation since the
// table's current shape was taken on: its relfilenode then and now
// differ, or either is unknown (a partitioned table has none of its own).
func (s *Source) rewrittenSince(ctx context.Context, t *table) (bool, error) {
	var then *int64
	if err := s.target.QueryRow(ctx, "SELECT filenode FROM seam_cdc.shapes WHERE connector = $1 AND source_table = $2 AND shape_id = $3",
		s.cfg.Name, t.key, t.shapeID).Scan(&then); err != nil {
		return false, fmt.Errorf("read the relfilenode of %s at shape %d: %w", t.name, t.shapeID, err)
	}
	now, err := relFilenode(ctx, s.source, t.name)
	if err != nil {
		return false, err
	}
	return then == nil || *then == 0 || now == 0 || *then != now, nil
}

// relFilenode is the relation's pg_class.relfilenode: the file that holds
// its rows, new after every rewrite.
func relFilenode(ctx context.Context, q queryer, t TableName) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, "SELECT relfilenode::bigint FROM pg_class WHERE oid = $1::regclass", t.ident()).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the relfilenode of %s: %w", t, err)
	}
	return n, nil
}

// fillReplica writes the added columns' missing values into the replica
// rows that lack them, in tx. A canonical field takes a fill when the
// mapping carries the column into it as it is (by name, no cast or
// expression); other mappings decide their own values.
func fillReplica(ctx context.Context, tx pgx.Tx, schema, table string, c *contractv1.Contract, model *contractv1.CanonicalModel, fills []columnFill) (int64, error) {
	types := map[string]contractv1.FieldType{}
	for _, f := range model.GetFields() {
		types[f.GetName()] = f.GetType()
	}
	ident := pgx.Identifier{schema, table}.Sanitize()
	var n int64
	for _, fl := range fills {
		for name, m := range c.GetMapping().GetFields() {
			typ, ok := types[name]
			if !ok || m.GetFrom() != fl.column || m.GetCast() != nil || m.GetExpr() != "" || m.GetTranslate() != nil || len(m.GetValues()) > 0 {
				continue
			}
			col := pgx.Identifier{name}.Sanitize()
			tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = $1::text::%s WHERE %s IS NULL", ident, col, targetType(typ), col), fl.value)
			if err != nil {
				return n, fmt.Errorf("fill the added column %s of %s with its default %q: %w", name, ident, fl.value, err)
			}
			n += tag.RowsAffected()
		}
	}
	return n, nil
}
