package record

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// decodeCSV decodes RFC 4180 CSV with a header row. Cells are typed by the
// contract: an empty cell is absent; numbers and booleans must be JSON
// literals of the declared type; OBJECT and ARRAY cells hold JSON text; a
// cell that does not parse as its type is kept as KindRaw for the type check
// to name. Columns the contract does not declare are ignored (listed in
// Record.Unknown when non-empty); declared fields without a column are
// absent. Only top-level fields map to columns.
func (d *Decoder) decodeCSV(b *Batch, data []byte, first int64) error {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1 // ragged rows are per-record errors, not reader errors
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return &BatchError{Msg: fmt.Sprintf("read CSV header: %v", err)}
	}
	for i, h := range header {
		if !utf8.ValidString(h) {
			return &BatchError{Msg: fmt.Sprintf("CSV header: column %d is not UTF-8; send UTF-8 text", i+1)}
		}
	}
	cols := make([]int, len(header)) // slot per column, -1 for unknown
	names := make([][]byte, len(header))
	seen := make(map[int]int, len(header))
	for i, h := range header {
		cols[i] = -1
		names[i] = []byte(h)
		slot, ok := d.schema.Lookup(h)
		if !ok || d.schema.fields[slot].Parent != -1 {
			continue
		}
		if j, dup := seen[slot]; dup {
			return &BatchError{Msg: fmt.Sprintf("CSV header: column %d %q repeats column %d; name each field once", i+1, h, j+1)}
		}
		seen[slot] = i
		cols[i] = slot
	}
	b.Records = make([]Record, 0, bytes.Count(data, []byte{'\n'}))
	for {
		start := cr.InputOffset()
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		end := cr.InputOffset()
		if end <= start {
			// The reader made no progress; stop rather than spin.
			return &BatchError{Offset: int(start), Index: len(b.Records), Msg: "CSV reader made no progress"}
		}
		raw := bytes.Trim(data[start:end], "\r\n") // the reader skips blank lines before a row
		r := Record{Index: int64(len(b.Records)), Raw: raw}
		var pe *csv.ParseError
		switch {
		case errors.As(err, &pe):
			r.Position = first + int64(pe.StartLine)
			r.Err = &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_MALFORMED,
				Message: fmt.Sprintf("line %d, column %d: %v; quote fields containing quotes, commas or line breaks and double inner quotes", pe.Line, pe.Column, pe.Err)}
		case err != nil:
			return &BatchError{Offset: int(start), Index: len(b.Records), Msg: fmt.Sprintf("read CSV: %v", err)}
		default:
			line, _ := cr.FieldPos(0)
			r.Position = first + int64(line)
			switch {
			case len(raw) > d.opts.MaxRecordBytes:
				r.Err = tooLarge(where{"line", int64(line)}, len(raw), d.opts.MaxRecordBytes)
			case !utf8.Valid(raw):
				r.Err = &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_MALFORMED,
					Message: fmt.Sprintf("line %d: invalid UTF-8; send UTF-8 text", line)}
			case len(fields) != len(header):
				r.Err = &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_MALFORMED,
					Message: fmt.Sprintf("line %d: %d columns, but the header has %d; every row needs one cell per header column", line, len(fields), len(header))}
			default:
				d.row(&r, fields, cols, names)
			}
		}
		b.Records = append(b.Records, r)
	}
}

// row types one CSV row's cells into a fresh slot set.
func (d *Decoder) row(r *Record, fields []string, cols []int, names [][]byte) {
	r.Values = d.slots()
	mark := len(d.names)
	for i, cell := range fields {
		if cell == "" {
			continue
		}
		slot := cols[i]
		if slot < 0 {
			d.names = append(d.names, names[i])
			continue
		}
		d.cell(&d.schema.fields[slot], d.copy(cell), r.Values)
	}
	if n := len(d.names); n > mark {
		r.Unknown = d.names[mark:n:n]
	}
}

// copy moves a cell into the arena: records refer to bytes, and the CSV
// reader's strings are reused per row.
func (d *Decoder) copy(cell string) []byte {
	b := d.a.reserve(len(cell))
	b = append(b, cell...)
	d.a.commit(len(b))
	return b[:len(b):len(b)]
}

// cell types one non-empty cell by its field's declared type.
func (d *Decoder) cell(f *Field, text []byte, vals []Value) {
	raw := Value{kind: KindRaw, b: text}
	s := &d.s
	s.data, s.pos, s.base = text, 0, 0
	switch f.Type() {
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64,
		contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		if c := text[0]; c == '-' || (c >= '0' && c <= '9') {
			if v, err := s.number(); err == nil && s.pos == len(text) {
				vals[f.Index] = v
				return
			}
		}
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		if c := text[0]; c == '-' || (c >= '0' && c <= '9') {
			if v, err := s.number(); err == nil && s.pos == len(text) {
				vals[f.Index] = v
				return
			}
		}
		vals[f.Index] = Value{kind: KindString, b: text}
		return
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		switch string(text) {
		case "true":
			vals[f.Index] = BoolValue(true)
			return
		case "false":
			vals[f.Index] = BoolValue(false)
			return
		}
	case contractv1.FieldType_FIELD_TYPE_OBJECT, contractv1.FieldType_FIELD_TYPE_ARRAY:
		s.ws()
		if c := s.peek(); c == '{' || c == '[' {
			if err := d.value(f, 1, vals); err == nil {
				if s.ws(); s.pos == len(text) {
					return
				}
			}
			clearMembers(d.schema, f, vals)
		}
	case contractv1.FieldType_FIELD_TYPE_JSON:
		// A cell that is one JSON value entirely is that value (1, true,
		// {"a": 1}, "quoted"); any other text is a string.
		s.ws()
		if err := d.value(f, 1, vals); err == nil {
			if s.ws(); s.pos == len(text) {
				return
			}
		}
		clearMembers(d.schema, f, vals)
		vals[f.Index] = Value{kind: KindString, b: text}
		return
	default:
		vals[f.Index] = Value{kind: KindString, b: text}
		return
	}
	vals[f.Index] = raw
}

// clearMembers resets the slots of an OBJECT field's members after a failed
// partial decode, so no half-decoded value survives.
func clearMembers(s *Schema, f *Field, vals []Value) {
	if f.members == nil {
		return
	}
	for _, slot := range f.members.slots {
		vals[slot] = Value{}
		clearMembers(s, &s.fields[slot], vals)
	}
}
