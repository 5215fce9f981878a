// Package avro converts an Avro schema of one record into a Seam contract,
// and decodes Avro binary records of such a schema into the JSON objects
// the gate judges. It is how a Kafka team's Avro schemas, registered
// through the Confluent-compatible API, become Seam contracts.
//
// Avro and Seam agree on most of a record: a field whose type is a union
// with null is optional (nullable), every other field is required;
// logical types map to Seam types (timestamp-millis and -micros to
// TIMESTAMP, date to DATE, decimal to DECIMAL with its precision and
// scale, uuid to UUID). Unions of several non-null types have no Seam
// equivalent and are refused; maps, bytes, fixed and time-of-day values
// are carried over with a note saying how.
package avro

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	hamba "github.com/hamba/avro/v2"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// ImportOptions tune Import. Avro has no word for a subject or an owner,
// so Subject and Owner must be given. Strict refuses the schema (a
// *interop.LossError) when anything is dropped or approximated.
type ImportOptions = interop.ImportOptions

// Result is the contract and the report of what did not carry over.
type Result = interop.Result

// Parse parses an Avro schema on its own (no shared cache of named types,
// so two documents never see each other's names).
func Parse(text string) (s hamba.Schema, err error) {
	// hamba/avro panics on some malformed schemas (an empty union with a
	// default, found by FuzzImport); a schema sent to the registry must
	// be refused, not crash it.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("avro: the schema cannot be parsed: %v", r)
		}
	}()
	return hamba.ParseWithCache(text, "", &hamba.SchemaCache{})
}

// Normalize returns a schema text's normal form, after checking that it
// parses: compact JSON with every object's keys in sorted order and
// numbers as written, so the same schema written with other spacing or key
// order has the same normal form. It is the text as sent otherwise:
// hamba/avro's own rendering is not used, since it rewrites defaults (a
// bytes default "0" comes back as "MA==", found by FuzzImport).
func Normalize(text string) (string, error) {
	if _, err := Parse(text); err != nil {
		return "", err
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("avro: normalize the schema: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("avro: normalize the schema: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// Import converts an Avro schema document (JSON) into a contract.
func Import(data []byte, opts ImportOptions) (*Result, error) {
	if opts.Source == "" {
		opts.Source = "avro"
	}
	s, err := Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid Avro schema: %w", opts.Source, err)
	}
	rec, ok := s.(*hamba.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("%s: the schema is a %s; a Seam contract is made from an Avro record schema", opts.Source, s.Type())
	}
	if opts.Subject == "" {
		return nil, fmt.Errorf("%s: an Avro schema does not name a subject; give one", opts.Source)
	}
	if opts.Owner == "" {
		return nil, fmt.Errorf("%s: an Avro schema does not name an owner; give one", opts.Source)
	}
	im := &importer{opts: opts, res: &Result{}}
	fields, err := im.fields(rec, "")
	if err != nil {
		return nil, err
	}
	c := &contractv1.Contract{Subject: opts.Subject, Owner: opts.Owner, Description: rec.Doc(), Fields: fields,
		Labels: map[string]string{"avro.name": rec.FullName()}}
	im.res.Report.Add("name", interop.Kept, "kept as label avro.name")
	if problems := contract.Validate(c); len(problems) > 0 {
		return nil, fmt.Errorf("%s: the schema does not make a valid Seam contract: %v", opts.Source, problems)
	}
	if _, err := check.Compile(c); err != nil {
		return nil, fmt.Errorf("%s: the checks made from the schema do not compile: %w", opts.Source, err)
	}
	im.res.Contract = c
	return im.res, im.res.Report.StrictIf(opts.Strict, interop.FormatAvro)
}

type importer struct {
	opts ImportOptions
	res  *Result
	// depth bounds recursion through named types that refer to
	// themselves (a linked list), which Seam's fields cannot express.
	depth int
}

const maxDepth = 32

func (im *importer) fields(rec *hamba.RecordSchema, prefix string) ([]*contractv1.Field, error) {
	im.depth++
	defer func() { im.depth-- }()
	if im.depth > maxDepth {
		return nil, fmt.Errorf("%s: record %s nests deeper than %d levels (a recursive type?); Seam fields cannot express it", im.opts.Source, rec.FullName(), maxDepth)
	}
	out := make([]*contractv1.Field, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		path := interop.Join(prefix, f.Name())
		sf, err := im.field(f.Type(), f.Name(), path)
		if err != nil {
			return nil, err
		}
		sf.Description = f.Doc()
		if f.HasDefault() {
			im.res.Report.Add(path+".default", interop.Dropped, "Avro defaults apply when a reader resolves an older writer's schema; every record Seam decodes carries the field, so the default is not used")
		}
		out = append(out, sf)
	}
	return out, nil
}

// primitiveTypes are the Avro types that are a Seam type as they are.
var primitiveTypes = map[hamba.Type]contractv1.FieldType{
	hamba.String:  contractv1.FieldType_FIELD_TYPE_STRING,
	hamba.Int:     contractv1.FieldType_FIELD_TYPE_INT32,
	hamba.Long:    contractv1.FieldType_FIELD_TYPE_INT64,
	hamba.Float:   contractv1.FieldType_FIELD_TYPE_FLOAT,
	hamba.Double:  contractv1.FieldType_FIELD_TYPE_DOUBLE,
	hamba.Boolean: contractv1.FieldType_FIELD_TYPE_BOOL,
}

// field converts one Avro type; a union with null makes the field
// optional, any other type required.
func (im *importer) field(t hamba.Schema, name, path string) (*contractv1.Field, error) {
	required := true
	if u, ok := t.(*hamba.UnionSchema); ok {
		var other []hamba.Schema
		for _, b := range u.Types() {
			if b.Type() != hamba.Null {
				other = append(other, b)
			}
		}
		if len(other) != 1 {
			names := make([]string, len(u.Types()))
			for i, b := range u.Types() {
				names[i] = typeName(b)
			}
			return nil, fmt.Errorf("%s: field %s is a union of %s; Seam reads a union only with null and one other type (a nullable field)",
				im.opts.Source, path, strings.Join(names, ", "))
		}
		required = len(other) == len(u.Types())
		t = other[0]
	}
	f, err := im.typed(t, name, path)
	if err != nil {
		return nil, err
	}
	f.Required = required
	return f, nil
}

func typeName(s hamba.Schema) string {
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

func (im *importer) typed(t hamba.Schema, name, path string) (*contractv1.Field, error) {
	f := &contractv1.Field{Name: name}
	if r, ok := t.(*hamba.RefSchema); ok {
		t = r.Schema()
	}
	var logical hamba.LogicalSchema
	if l, ok := t.(hamba.LogicalTypeSchema); ok && l.Logical() != nil {
		logical = l.Logical()
	}
	if logical != nil {
		switch logical.Type() {
		case hamba.TimestampMillis, hamba.TimestampMicros:
			f.Type = contractv1.FieldType_FIELD_TYPE_TIMESTAMP
			return f, nil
		case hamba.LocalTimestampMillis, hamba.LocalTimestampMicros:
			f.Type = contractv1.FieldType_FIELD_TYPE_TIMESTAMP
			im.res.Report.Add(path, interop.Approximated, "%s has no time zone; records carry it as an RFC 3339 time in UTC", logical.Type())
			return f, nil
		case hamba.Date:
			f.Type = contractv1.FieldType_FIELD_TYPE_DATE
			return f, nil
		case hamba.UUID:
			f.Type = contractv1.FieldType_FIELD_TYPE_UUID
			return f, nil
		case hamba.Decimal:
			d := logical.(*hamba.DecimalLogicalSchema)
			p, s := int32(d.Precision()), int32(d.Scale())
			f.Type, f.Precision, f.Scale = contractv1.FieldType_FIELD_TYPE_DECIMAL, &p, &s
			return f, nil
		case hamba.TimeMillis, hamba.TimeMicros:
			im.res.Report.Add(path, interop.Approximated, "%s (a time of day) has no Seam type; records carry it as an integer count since midnight", logical.Type())
		case hamba.Duration:
			im.res.Report.Add(path, interop.Approximated, "duration has no Seam type; records carry its 12 bytes as a base64 string")
			f.Type = contractv1.FieldType_FIELD_TYPE_STRING
			return f, nil
		}
	}
	if typ, ok := primitiveTypes[t.Type()]; ok {
		f.Type = typ
		return f, nil
	}
	switch t.Type() {
	case hamba.Bytes, hamba.Fixed:
		f.Type = contractv1.FieldType_FIELD_TYPE_STRING
		im.res.Report.Add(path, interop.Approximated, "%s becomes a STRING: records carry the bytes base64-encoded", t.Type())
	case hamba.Enum:
		f.Type = contractv1.FieldType_FIELD_TYPE_STRING
		f.Enum = append([]string(nil), t.(*hamba.EnumSchema).Symbols()...)
	case hamba.Record, hamba.Error:
		f.Type = contractv1.FieldType_FIELD_TYPE_OBJECT
		members, err := im.fields(t.(*hamba.RecordSchema), path)
		if err != nil {
			return nil, err
		}
		f.Fields = members
	case hamba.Array:
		f.Type = contractv1.FieldType_FIELD_TYPE_ARRAY
		items, err := im.field(t.(*hamba.ArraySchema).Items(), "items", path+"[]")
		if err != nil {
			return nil, err
		}
		items.Name, items.Required = "", false
		f.Items = items
	case hamba.Map:
		f.Type = contractv1.FieldType_FIELD_TYPE_OBJECT
		im.res.Report.Add(path, interop.Approximated, "a map becomes an OBJECT whose member names are free; the type of its values (%s) is not checked", typeName(t.(*hamba.MapSchema).Values()))
	case hamba.Null:
		return nil, fmt.Errorf("%s: field %s has type null, which holds no data; drop it or make it a union", im.opts.Source, path)
	default:
		return nil, fmt.Errorf("%s: field %s has type %s, which Seam does not read", im.opts.Source, path, t.Type())
	}
	return f, nil
}
