package record

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Packed values carry records that one service decoded to another that
// reads them by the same contract, without writing them back as JSON and
// parsing them again. Record after record, each record holds one value per
// field named with the batch, in that order; a value is its Kind as one
// byte, then:
//
//   - absent, null: nothing more;
//   - bool: one byte, 0 or 1;
//   - string, number, object, array, text: a uvarint length and as many
//     bytes (a string's unescaped UTF-8 content, a number's literal, an
//     object's or array's JSON text, CSV text).
//
// The reader takes nothing on trust: it checks every kind, length and
// literal as the JSON decoder would have, so a packed batch can only hold
// values a decode could have produced.

// AppendPacked appends one record's values, in their order, to dst: a
// decoded record's Values are the fields of its schema in slot order.
func AppendPacked(dst []byte, vals []Value) []byte {
	for _, v := range vals {
		dst = append(dst, byte(v.kind))
		switch v.kind {
		case KindAbsent, KindNull:
		case KindBool:
			dst = append(dst, byte(v.n&1))
		default:
			dst = binary.AppendUvarint(dst, uint64(len(v.b)))
			dst = append(dst, v.b...)
		}
	}
	return dst
}

// DecodePacked reads count records of packed values (see AppendPacked)
// for the fields at paths, which name fields of d's schema; fields of the
// schema not named stay absent. Values refer into data. The records are
// numbered from 0, with positions from 1, and their Raw is empty: the
// sender keeps the records as they were sent. A batch that does not
// follow the layout, names a field the schema lacks or holds a value the
// JSON decoder would refuse is an error naming the record and field.
func (d *Decoder) DecodePacked(paths []string, data []byte, count int) (*Batch, error) {
	slots := make([]int, len(paths))
	seen := make(map[int]bool, len(paths))
	for i, p := range paths {
		slot, ok := d.schema.Lookup(p)
		if !ok {
			return nil, fmt.Errorf("decode packed records: field %q is not declared in the contract; sender and receiver must read the same contract version", p)
		}
		if seen[slot] {
			return nil, fmt.Errorf("decode packed records: field %q is named twice", p)
		}
		seen[slot], slots[i] = true, slot
	}
	// Every value takes a byte at least, so a count the data cannot hold
	// is refused before anything is allocated for it.
	if len(paths) == 0 {
		return nil, fmt.Errorf("decode packed records: no fields are named")
	}
	if count < 0 || count > len(data)/len(paths) {
		return nil, fmt.Errorf("decode packed records: %d records of %d fields cannot fit in %d bytes", count, len(paths), len(data))
	}
	d.forget()
	b := &Batch{}
	if d.recsFree {
		b.Records, d.recsFree = d.recs[:0], false
	}
	b.Records = slices.Grow(b.Records, count)
	off := 0
	for i := range count {
		vals := d.slots()
		for k, slot := range slots {
			n, err := d.packedValue(data[off:], &vals[slot])
			if err != nil {
				return nil, fmt.Errorf("decode packed records: record %d, field %s (byte %d): %s", i, paths[k], off, err)
			}
			off += n
		}
		b.Records = append(b.Records, Record{Index: int64(i), Position: int64(i) + 1, Values: vals})
	}
	if off != len(data) {
		return nil, fmt.Errorf("decode packed records: %d bytes after the last of %d records", len(data)-off, count)
	}
	d.recs = b.Records
	return b, nil
}

// packedValue reads one value at the start of p into dst, a zeroed
// slot, and returns the bytes it took.
func (d *Decoder) packedValue(p []byte, dst *Value) (int, error) {
	if len(p) == 0 {
		return 0, fmt.Errorf("the data ends before the value")
	}
	kind := Kind(p[0])
	switch kind {
	case KindAbsent, KindNull:
		dst.kind = kind
		return 1, nil
	case KindBool:
		if len(p) < 2 || p[1] > 1 {
			return 0, fmt.Errorf("a bool must be one byte, 0 or 1")
		}
		dst.kind, dst.n = KindBool, uint64(p[1])
		return 2, nil
	case KindString, KindNumber, KindObject, KindArray, KindRaw:
	default:
		return 0, fmt.Errorf("unknown value kind %d", p[0])
	}
	var size uint64
	n := 0
	switch {
	case len(p) > 1 && p[1] < 0x80:
		size, n = uint64(p[1]), 1 // most values are shorter than 128 bytes
	default:
		size, n = binary.Uvarint(p[1:])
	}
	if n <= 0 || size > uint64(len(p)-1-n) {
		return 0, fmt.Errorf("the %s value's length runs past the data", kind)
	}
	used := 1 + n + int(size)
	b := p[1+n : used : used]
	switch kind {
	case KindString, KindRaw:
		if !utf8.Valid(b) {
			return 0, fmt.Errorf("the %s value is not valid UTF-8", kind)
		}
		dst.kind, dst.b = kind, b
		return used, nil
	case KindNumber:
		s := &d.s
		s.data, s.pos, s.base = b, 0, 0
		if len(b) == 0 || !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
			return 0, fmt.Errorf("%q is not a JSON number", b)
		}
		v, err := s.number()
		if err != nil || s.pos != len(b) {
			return 0, fmt.Errorf("%q is not a JSON number", b)
		}
		*dst = v
		return used, nil
	}
	// An object or an array: valid JSON of that shape, nested no deeper
	// than the decoder allows.
	s := &d.s
	s.data, s.pos, s.base = b, 0, 0
	want := byte('{')
	if kind == KindArray {
		want = '['
	}
	if len(b) == 0 || b[0] != want {
		return 0, fmt.Errorf("the %s value does not start with %q", kind, want)
	}
	elems, err := s.skip(1)
	if err != nil {
		return 0, fmt.Errorf("the %s value is not valid JSON: %s", kind, err.msg)
	}
	if s.pos != len(b) {
		return 0, fmt.Errorf("the %s value has bytes after its end", kind)
	}
	dst.kind, dst.b = kind, b
	if kind == KindArray {
		dst.n = uint64(elems)
	}
	return used, nil
}
