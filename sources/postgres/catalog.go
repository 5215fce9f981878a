package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Column is one column of a table as the stream or the catalog describes
// it.
type Column struct {
	Name   string `json:"name"`
	Type   uint32 `json:"type"`
	TypMod int32  `json:"typmod"`
	// Key marks the replica identity (primary key) columns.
	Key bool `json:"key,omitempty"`
	// NotNull comes from the catalog; the stream's Relation messages do
	// not carry it.
	NotNull bool `json:"not_null,omitempty"`
	// TypeName is the column's SQL type as the catalog prints it, for
	// messages.
	TypeName string `json:"type_name,omitempty"`
}

// Shape is a table's columns in order.
type Shape []Column

// sameAs reports whether two shapes describe the same columns: names,
// types, type modifiers and key membership. Nullability is not compared:
// the stream does not carry it.
func (s Shape) sameAs(o Shape) bool {
	return slices.EqualFunc(s, o, func(a, b Column) bool {
		return a.Name == b.Name && a.Type == b.Type && a.TypMod == b.TypMod && a.Key == b.Key
	})
}

func (s Shape) keys() []Column {
	var out []Column
	for _, c := range s {
		if c.Key {
			out = append(out, c)
		}
	}
	return out
}

func (s Shape) index(name string) int {
	return slices.IndexFunc(s, func(c Column) bool { return c.Name == name })
}

// TableName is a schema-qualified table.
type TableName struct{ Schema, Name string }

func (t TableName) String() string { return t.Schema + "." + t.Name }

// ident is the table quoted for SQL.
func (t TableName) ident() string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

// ParseTableName reads "schema.table" or "table" (in public).
func ParseTableName(s string) (TableName, error) {
	s = strings.TrimSpace(s)
	schema, name, ok := strings.Cut(s, ".")
	if !ok {
		schema, name = "public", s
	}
	if schema == "" || name == "" || strings.Contains(name, ".") {
		return TableName{}, fmt.Errorf("table %q: name it as schema.table or table", s)
	}
	return TableName{Schema: schema, Name: name}, nil
}

// errNoTable and errNoKey are what a configured table can be refused for.
var (
	errNoTable = errors.New("no such table")
	errNoKey   = errors.New("no primary key")
)

// queryer is what reading the catalog needs: a connection or transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readShape reads a table's columns from the catalog, in column order,
// with the primary key marked.
func readShape(ctx context.Context, q queryer, t TableName) (Shape, error) {
	rows, err := q.Query(ctx, `
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull,
       coalesce(a.attnum = ANY (i.indkey), false), format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
 WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')
   AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
 ORDER BY a.attnum`, t.Schema, t.Name)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", t, err)
	}
	var s Shape
	for rows.Next() {
		var c Column
		var oid uint32
		if err := rows.Scan(&c.Name, &oid, &c.TypMod, &c.NotNull, &c.Key, &c.TypeName); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the columns of %s: %w", t, err)
		}
		c.Type = oid
		s = append(s, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", t, err)
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%s: %w (or it has no columns); check the name and the source user's rights", t, errNoTable)
	}
	if len(s.keys()) == 0 {
		return nil, fmt.Errorf("%s: %w; the replica upserts by primary key, so add one (ALTER TABLE %s ADD PRIMARY KEY (...))", t, errNoKey, t.ident())
	}
	return s, nil
}

// Names of the fields every change record carries besides the table's
// columns. They are also columns of the replica.
const (
	// FieldOp is the operation: r (snapshot read), i, u, d.
	FieldOp = "_seam_op"
	// FieldLSN is the source position: the commit LSN of the change's
	// transaction, or the LSN of the snapshot a row was read in.
	FieldLSN = "_seam_lsn"
	// FieldSeq orders the changes of one transaction.
	FieldSeq = "_seam_seq"
	// FieldCommitTime is the transaction's commit time (absent for
	// snapshot reads).
	FieldCommitTime = "_seam_commit_time"
	// columnDeleted marks a tombstone in the replica.
	columnDeleted = "_seam_deleted"
)

// metaField reports whether name is one of the fields above.
func metaField(name string) bool { return strings.HasPrefix(name, "_seam_") }

// metaFields are the change fields of every contract and canonical model.
// The key is the table's primary key plus the position, so every change is
// its own record: a later UPDATE of a row is not a duplicate of its INSERT.
func metaFields() []*contractv1.Field {
	return []*contractv1.Field{
		{Name: FieldOp, Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true, Enum: []string{"r", "i", "u", "d"},
			Description: "change operation: r snapshot read, i insert, u update, d delete"},
		{Name: FieldLSN, Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true, Key: true,
			Description: "source position: commit LSN of the transaction, or LSN of the snapshot"},
		{Name: FieldSeq, Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true, Key: true,
			Description: "order of the change in its transaction (-1 for snapshot reads)"},
		{Name: FieldCommitTime, Type: contractv1.FieldType_FIELD_TYPE_TIMESTAMP,
			Description: "commit time of the transaction (absent for snapshot reads)"},
	}
}

// columnField is the contract field of a column.
func columnField(c Column) *contractv1.Field {
	f := &contractv1.Field{Name: c.Name, Type: fieldType(c.Type), Required: c.NotNull || c.Key, Key: c.Key}
	if n := maxLength(c.Type, c.TypMod); n > 0 {
		f.MaxLength = proto.Int64(n)
	}
	if p, sc, ok := numericDigits(c.Type, c.TypMod); ok {
		f.Precision, f.Scale = proto.Int32(p), proto.Int32(sc)
	}
	if c.TypeName != "" {
		f.Description = "column " + c.Name + " " + c.TypeName
	}
	return f
}

// deriveContract is the first contract of a table: one field per column
// (type, nullability, length, primary key) plus the change fields, FULL
// compatibility so a dropped column or a changed type is breaking, and an
// identity mapping into a canonical model of the same name.
func deriveContract(subject, owner string, t TableName, s Shape) *contractv1.Contract {
	c := &contractv1.Contract{
		Subject:       subject,
		Owner:         owner,
		Description:   fmt.Sprintf("Changes of PostgreSQL table %s, captured by logical replication (derived from the catalog).", t),
		Compatibility: contractv1.Compatibility_COMPATIBILITY_FULL,
		Mapping:       &contractv1.Mapping{Canonical: subject, Fields: map[string]*contractv1.FieldMapping{}},
		Labels:        map[string]string{"source": "postgres", "table": t.String()},
	}
	for _, col := range s {
		c.Fields = append(c.Fields, columnField(col))
	}
	c.Fields = append(c.Fields, metaFields()...)
	for _, f := range c.Fields {
		c.Mapping.Fields[f.GetName()] = &contractv1.FieldMapping{From: f.GetName()}
	}
	return c
}

// deriveCanonical is the canonical model of a contract derived above: the
// same fields, so the replica and the pipelines read the table's columns.
func deriveCanonical(c *contractv1.Contract) *contractv1.CanonicalModel {
	m := &contractv1.CanonicalModel{Name: c.GetMapping().GetCanonical(), Owner: c.GetOwner(), Description: c.GetDescription()}
	for _, f := range c.GetFields() {
		cf := &contractv1.Field{Name: f.GetName(), Type: f.GetType(), Required: f.GetRequired(), Key: f.GetKey(), Description: f.GetDescription()}
		m.Fields = append(m.Fields, cf)
	}
	return m
}

// applyShape returns the contract the active one becomes for a new shape:
// the active contract's fields, checks and mapping, with fields of removed
// columns dropped, changed columns retyped, and new columns added (optional
// unless the catalog says NOT NULL) with an identity mapping. The registry
// classifies the difference.
func applyShape(active *contractv1.Contract, s Shape) *contractv1.Contract {
	next := proto.Clone(active).(*contractv1.Contract)
	byName := map[string]*contractv1.Field{}
	for _, f := range next.GetFields() {
		byName[f.GetName()] = f
	}
	var fields []*contractv1.Field
	for _, col := range s {
		derived := columnField(col)
		f, ok := byName[col.Name]
		if !ok {
			// A new column: required only when the catalog says so.
			derived.Required = col.NotNull
			fields = append(fields, derived)
			if next.Mapping != nil {
				if next.Mapping.Fields == nil {
					next.Mapping.Fields = map[string]*contractv1.FieldMapping{}
				}
				if _, mapped := next.Mapping.Fields[col.Name]; !mapped {
					next.Mapping.Fields[col.Name] = &contractv1.FieldMapping{From: col.Name}
				}
			}
			continue
		}
		if f.GetType() != derived.GetType() {
			f.Type = derived.GetType()
			f.Description = derived.GetDescription()
			f.Precision, f.Scale = derived.Precision, derived.Scale
		} else if f.Precision != nil || f.GetType() != contractv1.FieldType_FIELD_TYPE_DECIMAL {
			// A DECIMAL that states its digits follows the column's; one
			// registered without them (any digits) still takes every value.
			f.Precision, f.Scale = derived.Precision, derived.Scale
			if derived.GetDescription() != "" {
				f.Description = derived.GetDescription()
			}
		}
		f.MaxLength = derived.MaxLength
		f.Key = derived.GetKey()
		fields = append(fields, f)
	}
	for _, f := range next.GetFields() {
		if metaField(f.GetName()) {
			fields = append(fields, f)
			continue
		}
		if s.index(f.GetName()) < 0 && next.Mapping != nil {
			// A removed column maps to nothing: the canonical field is left
			// out unless the migration gives it a default or a constant.
			for name, m := range next.Mapping.Fields {
				if m.GetFrom() == f.GetName() {
					delete(next.Mapping.Fields, name)
				}
			}
		}
	}
	next.Fields = fields
	return next
}

// accepts reports whether a registered contract can carry records of
// shape s: every column has a field of its type (and a length at least the
// column's), and every other field is optional or a change field. It is
// how the source recognises the migration version of a halted table.
func accepts(c *contractv1.Contract, s Shape) (bool, string) {
	fields := map[string]*contractv1.Field{}
	for _, f := range c.GetFields() {
		fields[f.GetName()] = f
	}
	for _, col := range s {
		f, ok := fields[col.Name]
		want := columnField(col)
		switch {
		case !ok:
			return false, fmt.Sprintf("column %s (%s) has no field", col.Name, want.GetType())
		case f.GetType() != want.GetType():
			return false, fmt.Sprintf("column %s is %s but field %s is %s", col.Name, want.GetType(), col.Name, f.GetType())
		case f.MaxLength != nil && want.MaxLength != nil && f.GetMaxLength() < want.GetMaxLength():
			return false, fmt.Sprintf("column %s holds up to %d characters but field %s allows %d", col.Name, want.GetMaxLength(), col.Name, f.GetMaxLength())
		case f.MaxLength != nil && want.MaxLength == nil:
			return false, fmt.Sprintf("column %s is unbounded but field %s allows %d characters", col.Name, col.Name, f.GetMaxLength())
		case f.Precision != nil && want.Precision == nil:
			return false, fmt.Sprintf("column %s is %s but field %s allows DECIMAL(%d,%d)", col.Name, col.TypeName, col.Name, f.GetPrecision(), f.GetScale())
		case f.Precision != nil && (f.GetScale() < want.GetScale() || f.GetPrecision()-f.GetScale() < want.GetPrecision()-want.GetScale()):
			return false, fmt.Sprintf("column %s is %s but field %s allows DECIMAL(%d,%d)", col.Name, col.TypeName, col.Name, f.GetPrecision(), f.GetScale())
		}
		delete(fields, col.Name)
	}
	for name, f := range fields {
		if !metaField(name) && f.GetRequired() {
			return false, fmt.Sprintf("field %s is required but the table has no column %s", name, name)
		}
	}
	return true, ""
}
