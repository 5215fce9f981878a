package record

import (
	"bytes"
	"fmt"
	"math"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Default limits of Options.
const (
	DefaultMaxRecordBytes = 16 << 20
	DefaultMaxDepth       = 64
)

// Options bound what one record may cost. Zero values take the defaults.
type Options struct {
	// MaxRecordBytes is the largest record accepted (its JSON object, NDJSON
	// line or CSV row); larger records fail with TOO_LARGE.
	MaxRecordBytes int
	// MaxDepth is the deepest nesting of objects and arrays accepted, the
	// record's own object counting as 1.
	MaxDepth int
}

func (o Options) withDefaults() Options {
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

// Record is one decoded record of a batch.
type Record struct {
	// Index is the record's index in its batch, from 0, counting failed
	// records too.
	Index int64
	// Position is the record's source position: first_offset plus Index for
	// JSON and objects; first_offset plus the 1-based line number for NDJSON
	// and CSV (the line where a CSV row starts).
	Position int64
	// Raw is the record as sent: its JSON object, NDJSON line (without the
	// line break) or CSV row.
	Raw []byte
	// Values holds one value per schema slot; nil when Err is set.
	Values []Value
	// Unknown names the top-level fields that the contract does not declare.
	// They are not errors; checks count them.
	Unknown [][]byte
	// UnknownMembers names the members of declared OBJECT fields that the
	// contract does not declare, in the order they came. Members of
	// array elements are not looked at.
	UnknownMembers []UnknownMember
	// Err is the decoding failure (MALFORMED or TOO_LARGE), nil on success.
	Err *recordv1.RecordError
}

// UnknownMember is an undeclared member of a declared OBJECT field.
type UnknownMember struct {
	// Object is the slot of the OBJECT field the member was found in.
	Object int
	Name   []byte
}

// Batch is a decoded batch. Records are in input order; every input record
// appears exactly once, decoded or with Err set.
type Batch struct {
	Format  recordv1.Format
	Records []Record
}

// BatchError is a failure that leaves part of a batch unaccountable, such as
// a JSON array whose elements cannot be delimited after a byte offset. The
// records decoded before it are still returned, but the caller must refuse
// the batch: records after the offset cannot be counted, let alone decoded.
type BatchError struct {
	// Offset is the byte offset of the failure in the batch data.
	Offset int
	// Index is the index the next record would have had.
	Index int
	Msg   string
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("batch undecodable at byte offset %d (record %d): %s", e.Offset, e.Index, e.Msg)
}

// checkFirstOffset refuses a first offset that would make the position of
// one of up to n records negative or wrap past the largest int64. A
// record's position is first plus its line number (from 1) in NDJSON and
// CSV, so first may be -1 there (a stream's offset 0 is position 0); in
// JSON it is first plus its index (from 0).
func checkFirstOffset(format recordv1.Format, first, n int64) error {
	least := int64(0)
	if format == recordv1.Format_FORMAT_NDJSON || format == recordv1.Format_FORMAT_CSV {
		least = -1
	}
	if first < least || first > math.MaxInt64-n {
		return &BatchError{Msg: fmt.Sprintf("first_offset %d leaves no room for the positions of the batch's records: "+
			"a position is between 0 and %d, so first_offset is between %d and %d for this batch", first, int64(math.MaxInt64), least, math.MaxInt64-n)}
	}
	return nil
}

// Decoder decodes batches for one schema. It keeps scratch space between
// calls, so it is not safe for concurrent use; make one per goroutine.
// Batches it returns stay valid after later calls.
type Decoder struct {
	schema *Schema
	opts   Options
	s      scanner
	a      arena
	vals   []Value         // slab for record values, handed out in chunks
	names  [][]byte        // slab for unknown field names
	extras []UnknownMember // slab for unknown members of objects
	// slabs are every value slab handed out since the last Recycle, in
	// order; next is the first one Recycle made free for reuse. They are
	// tracked only once the caller has called Recycle (recycling): a
	// decoder whose caller never recycles must not keep every batch's
	// memory alive.
	slabs     [][]Value
	next      int
	recycling bool
	// slabRecords is how many records the last new slab held: slabs
	// start small and double up to maxSlabRecords, so a decoder of a
	// handful of records does not allocate for hundreds.
	slabRecords int
	// recs is the records slice of the last batch, reusable once Recycle
	// has been called (recsFree).
	recs     []Record
	recsFree bool
}

// Recycle lets the decoder reuse the memory of every batch it returned
// so far: a decoder kept for batch after batch then allocates nothing for
// record values. Records of those batches must not be used after it.
func (d *Decoder) Recycle() {
	for _, s := range d.slabs {
		clear(s)
	}
	d.next, d.vals = 0, nil
	d.names, d.extras = d.names[:0], d.extras[:0]
	d.recsFree, d.recycling = true, true
}

// forget drops the slabs of unknown names before a batch of a decoder
// whose caller does not recycle: the names refer into batch data, which
// the decoder must not keep alive. The batches keep their own slices.
func (d *Decoder) forget() {
	if !d.recycling {
		d.names, d.extras = nil, nil
	}
}

// NewDecoder returns a decoder for schema with opts.
func NewDecoder(schema *Schema, opts Options) *Decoder {
	opts = opts.withDefaults()
	d := &Decoder{schema: schema, opts: opts}
	d.s.maxDepth = opts.MaxDepth
	d.s.arena = &d.a
	return d
}

// Decode decodes data in format. firstOffset is the source position of the
// first record. Per-record failures are in Record.Err; the error is non-nil
// only for failures of the whole batch (an unsupported format, a CSV header
// that cannot be read, a JSON array that cannot be delimited: *BatchError).
func (d *Decoder) Decode(format recordv1.Format, data []byte, firstOffset int64) (*Batch, error) {
	// A batch of n bytes holds at most n+1 records.
	if err := checkFirstOffset(format, firstOffset, int64(len(data))+1); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark is not data
	d.forget()
	b := &Batch{Format: format}
	if d.recsFree {
		b.Records, d.recsFree = d.recs[:0], false
	}
	var err error
	switch format {
	case recordv1.Format_FORMAT_JSON:
		err = d.decodeJSON(b, data, firstOffset)
	case recordv1.Format_FORMAT_NDJSON:
		d.decodeNDJSON(b, data, firstOffset)
	case recordv1.Format_FORMAT_CSV:
		err = d.decodeCSV(b, data, firstOffset)
	default:
		return nil, fmt.Errorf("decode batch: format %v is not supported; send FORMAT_JSON, FORMAT_NDJSON or FORMAT_CSV", format)
	}
	d.recs = b.Records
	return b, err
}

// DecodeObjects decodes JSON objects sent as structpb. Each object is
// rendered to JSON and decoded like a JSON record, so limits and typing are
// the same as for raw bytes. structpb numbers are float64: an integral
// number renders as an integer literal, exactly while it is below 2^53. At
// or beyond 2^53 a double no longer holds every integer (9007199254740993
// arrives as 9007199254740992), so a record with such a value in an integer
// or identifier field fails with MALFORMED instead of passing with other
// digits; such records must travel as raw JSON, which keeps literals.
func (d *Decoder) DecodeObjects(objs []*structpb.Struct, firstOffset int64) (*Batch, error) {
	if err := checkFirstOffset(recordv1.Format_FORMAT_JSON, firstOffset, int64(len(objs))); err != nil {
		return nil, err
	}
	d.forget()
	b := &Batch{Records: make([]Record, 0, len(objs))}
	for i, o := range objs {
		raw, err := protojson.Marshal(o)
		if err != nil {
			return b, fmt.Errorf("decode objects: render record %d as JSON: %w", i, err)
		}
		r := Record{Index: int64(i), Position: firstOffset + int64(i), Raw: raw}
		d.s.data, d.s.pos, d.s.base = raw, 0, 0
		d.s.ws()
		d.one(&r, where{"record", int64(i)})
		if r.Err == nil {
			if msg := d.inexactIntegers(r.Values); msg != "" {
				r.Values, r.Unknown = nil, nil
				r.Err = &recordv1.RecordError{Code: recordv1.ErrorCode_ERROR_CODE_MALFORMED, Message: fmt.Sprintf("record %d, %s", i, msg)}
			}
		}
		b.Records = append(b.Records, r)
	}
	return b, nil
}

// maxExactDouble is 2^53: every integer of smaller magnitude is exactly a
// double; at and beyond it, neighbouring integers share one.
const maxExactDouble = 1 << 53

// inexactIntegers names the first integer or identifier field whose value
// (or array element) came through a double at or beyond 2^53.
func (d *Decoder) inexactIntegers(vals []Value) string {
	for i := range d.schema.fields {
		f := &d.schema.fields[i]
		decl := f.Decl
		intType := func(t contractv1.FieldType) bool {
			switch t {
			case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64, contractv1.FieldType_FIELD_TYPE_DECIMAL:
				return true
			}
			return false
		}
		v := vals[i]
		switch {
		case intType(decl.GetType()) || decl.GetIdentifier() != nil:
			if inexact(v) {
				return inexactMessage(f.Path, v)
			}
		case (decl.GetType() == contractv1.FieldType_FIELD_TYPE_ARRAY || decl.GetType() == contractv1.FieldType_FIELD_TYPE_JSON) && intType(decl.GetItems().GetType()):
			msg := ""
			_ = Elements(v, func(j int, e Value) bool {
				if inexact(e) {
					msg = inexactMessage(fmt.Sprintf("%s[%d]", f.Path, j), e)
				}
				return msg == ""
			})
			if msg != "" {
				return msg
			}
		}
	}
	return ""
}

func inexact(v Value) bool {
	f, ok := v.Float()
	return ok && f == math.Trunc(f) && math.Abs(f) >= maxExactDouble
}

func inexactMessage(path string, v Value) string {
	return fmt.Sprintf("field %s: number %s arrived as a protobuf Struct double, which cannot hold every integer at or beyond 2^53 (9007199254740992); its digits cannot be trusted — send such records as raw JSON (batch.raw, FORMAT_JSON or FORMAT_NDJSON) or over REST, which keep number literals exactly", path, v.Bytes())
}

// where names a record for messages ("line 7", "record 3"); it is formatted
// only when a message is needed, so the happy path does not allocate.
type where struct {
	unit string
	n    int64
}

func (w where) String() string { return fmt.Sprintf("%s %d", w.unit, w.n) }

// one fills r from the object at the scanner position, which must end the
// record's bytes (for NDJSON lines and single objects).
func (d *Decoder) one(r *Record, where where) {
	s := &d.s
	if len(r.Raw) > d.opts.MaxRecordBytes {
		r.Err = tooLarge(where, len(r.Raw), d.opts.MaxRecordBytes)
		return
	}
	if err := d.object(r); err != nil {
		r.Values, r.Unknown, r.UnknownMembers = nil, nil, nil
		r.Err = malformed(where, err)
		return
	}
	s.ws()
	if s.pos < len(s.data) {
		r.Values, r.Unknown, r.UnknownMembers = nil, nil, nil
		r.Err = malformed(where, s.fail("unexpected %s after the record's object; send one object per record", s.found()))
	}
}

func tooLarge(where where, n, limit int) *recordv1.RecordError {
	return &recordv1.RecordError{
		Code:    recordv1.ErrorCode_ERROR_CODE_TOO_LARGE,
		Message: fmt.Sprintf("%s: record is %d bytes, over the %d byte limit; split it or raise the limit", where, n, limit),
	}
}

func malformed(where where, err *scanError) *recordv1.RecordError {
	return &recordv1.RecordError{Code: err.code, Message: where.String() + ", " + err.Error()}
}

// object decodes the record object at the scanner position into a fresh
// value slot set.
func (d *Decoder) object(r *Record) *scanError {
	s := &d.s
	if s.peek() != '{' {
		return s.fail("expected a JSON object for the record, found %s", s.found())
	}
	r.Values = d.slots()
	mark, xmark := len(d.names), len(d.extras)
	err := d.members(d.schema.top, -1, 1, r.Values)
	if n := len(d.names); n > mark {
		r.Unknown = d.names[mark:n:n]
	}
	if n := len(d.extras); n > xmark {
		r.UnknownMembers = d.extras[xmark:n:n]
	}
	return err
}

// slots hands out one record's worth of zeroed values from the slab.
// A value slab holds the values of minSlabRecords records at first,
// twice as many each time the decoder needs another, up to
// maxSlabRecords.
const (
	minSlabRecords = 8
	maxSlabRecords = 256
)

func (d *Decoder) slots() []Value {
	n := d.schema.Len()
	if len(d.vals) < n {
		if d.next < len(d.slabs) && len(d.slabs[d.next]) >= n {
			d.vals = d.slabs[d.next]
		} else {
			d.slabRecords = min(max(2*d.slabRecords, minSlabRecords), maxSlabRecords)
			d.vals = make([]Value, d.slabRecords*max(n, 1))
			if d.recycling {
				d.slabs = append(d.slabs[:d.next], d.vals)
			}
		}
		if d.recycling {
			d.next++
		}
	}
	v := d.vals[:n:n]
	d.vals = d.vals[n:]
	return v
}

// members decodes the members of the object at the scanner position into
// vals, for the fields declared at lv. obj is the object's slot (-1 for the
// record itself); depth is its nesting level.
func (d *Decoder) members(lv *level, obj, depth int, vals []Value) *scanError {
	s := &d.s
	if depth > s.maxDepth {
		return s.fail("nesting deeper than %d levels; flatten the record or raise the decoder's depth limit", s.maxDepth)
	}
	s.pos++ // '{'
	s.ws()
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	guess := 0
	for {
		if s.peek() != '"' {
			return s.fail("expected a field name string, found %s", s.found())
		}
		var key []byte
		slot, next, known := 0, 0, false
		// The field after the previous one, named without escapes, is
		// recognised by comparing its bytes, without scanning the string.
		if guess < len(lv.slots) {
			f := &d.schema.fields[lv.slots[guess]]
			if q := f.quoted; q != nil && bytes.HasPrefix(s.data[s.pos+1:], q) {
				key = s.data[s.pos+1 : s.pos+len(q)]
				s.pos += 1 + len(q)
				slot, next, known = f.Index, guess+1, true
			}
		}
		if !known {
			var err *scanError
			if key, err = s.str(true); err != nil {
				return err
			}
			slot, next, known = lv.lookup(d.schema, key, guess)
		}
		s.ws()
		if s.peek() != ':' {
			return s.fail("expected ':' after field name %q, found %s", key, s.found())
		}
		s.pos++
		s.ws()
		if known {
			guess = next
			if vals[slot].kind != KindAbsent {
				return s.fail("field %q appears twice in one object; send it once", d.schema.fields[slot].Path)
			}
			if err := d.value(&d.schema.fields[slot], depth, vals); err != nil {
				return err
			}
		} else {
			if obj < 0 {
				d.names = append(d.names, key)
			} else {
				d.extras = append(d.extras, UnknownMember{Object: obj, Name: key})
			}
			if _, err := s.skip(depth); err != nil {
				return err
			}
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
			s.ws()
		case '}':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or '}' after field %q, found %s", key, s.found())
		}
	}
}

// value decodes the value of field f at the scanner position into its slot.
// depth is the nesting of the enclosing object.
func (d *Decoder) value(f *Field, depth int, vals []Value) *scanError {
	s := &d.s
	start := s.pos
	switch s.peek() {
	case '{':
		if f.members != nil {
			if err := d.members(f.members, f.Index, depth+1, vals); err != nil {
				return err
			}
		} else if _, err := s.skip(depth); err != nil {
			return err
		}
		vals[f.Index] = Value{kind: KindObject, b: s.data[start:s.pos]}
		return nil
	case '[':
		n, err := s.skip(depth)
		if err != nil {
			return err
		}
		vals[f.Index] = Value{kind: KindArray, n: uint64(n), b: s.data[start:s.pos]}
		return nil
	}
	// Strings and numbers are most values; fill the slot in place without
	// copying a Value through returns.
	dst := &vals[f.Index]
	if s.peek() == '"' {
		b, err := s.str(true)
		if err != nil {
			return err
		}
		dst.kind, dst.b = KindString, b
		return nil
	}
	if c := s.peek(); c == '-' || (c >= '0' && c <= '9') {
		return s.numberInto(dst)
	}
	v, err := s.scalar()
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// decodeNDJSON decodes one object per line. Blank lines are skipped but
// counted, so positions stay line numbers.
func (d *Decoder) decodeNDJSON(b *Batch, data []byte, first int64) {
	if n := bytes.Count(data, []byte{'\n'}) + 1; cap(b.Records) < n {
		// A recycled slice that holds the lines is used as is.
		b.Records = make([]Record, 0, n)
	}
	line := int64(0)
	for off := 0; off < len(data); {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end < 0 {
			end = len(data)
		} else {
			end += off
			next = end + 1
		}
		raw := data[off:end]
		if n := len(raw); n > 0 && raw[n-1] == '\r' {
			raw = raw[:n-1]
		}
		d.s.data, d.s.pos, d.s.base = raw, 0, off
		d.s.ws()
		if d.s.pos < len(raw) {
			r := Record{Index: int64(len(b.Records)), Position: first + line, Raw: raw}
			d.one(&r, where{"line", line})
			b.Records = append(b.Records, r)
		}
		off = next
	}
}

// decodeJSON decodes one object, or one array of objects. A malformed
// element is stepped over by bracket counting so its neighbours still decode;
// only when the elements cannot be delimited at all is the batch refused.
func (d *Decoder) decodeJSON(b *Batch, data []byte, first int64) error {
	s := &d.s
	s.data, s.pos, s.base = data, 0, 0
	s.ws()
	switch s.peek() {
	case 0:
		if s.pos == len(data) {
			return nil // an empty batch
		}
	case '{':
		r := Record{Position: first, Raw: bytes.TrimRight(data[s.pos:], " \t\r\n")}
		d.one(&r, where{"record", 0})
		b.Records = append(b.Records, r)
		return nil
	case '[':
		return d.decodeArray(b, data, first)
	}
	return &BatchError{Offset: s.pos, Msg: fmt.Sprintf("expected '[' or '{' to start the batch, found %s; send one JSON array of objects or one object", s.found())}
}

func (d *Decoder) decodeArray(b *Batch, data []byte, first int64) error {
	s := &d.s
	s.pos++
	s.ws()
	if s.peek() == ']' {
		s.pos++
		return d.arrayEnd(b)
	}
	for {
		i := len(b.Records)
		where := where{"record", int64(i)}
		start := s.pos
		r := Record{Index: int64(i), Position: first + int64(i)}
		err := d.object(&r)
		if err != nil {
			r.Values, r.Unknown, r.UnknownMembers = nil, nil, nil
			end := -1
			if start >= len(data) {
				// Nothing follows: the array is unterminated.
			} else if c := data[start]; c == '{' || c == '[' {
				end = resync(data, start)
			} else if s.pos = start; s.skipValid() {
				end = s.pos // a scalar where an object belongs
			}
			if end < 0 {
				return &BatchError{Offset: err.off, Index: i, Msg: err.msg + "; the array's remaining elements cannot be delimited"}
			}
			s.pos = end
			r.Err = malformed(where, err)
		}
		r.Raw = data[start:s.pos]
		if len(r.Raw) > d.opts.MaxRecordBytes {
			r.Values, r.Unknown, r.UnknownMembers = nil, nil, nil
			r.Err = tooLarge(where, len(r.Raw), d.opts.MaxRecordBytes)
		}
		b.Records = append(b.Records, r)
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
			s.ws()
		case ']':
			s.pos++
			return d.arrayEnd(b)
		default:
			return &BatchError{Offset: s.pos, Index: i + 1, Msg: fmt.Sprintf("expected ',' or ']' after array element %d, found %s", i, s.found())}
		}
	}
}

func (d *Decoder) arrayEnd(b *Batch) error {
	s := &d.s
	s.ws()
	if s.pos < len(s.data) {
		return &BatchError{Offset: s.pos, Index: len(b.Records), Msg: fmt.Sprintf("unexpected %s after the array; send one JSON array, or use NDJSON for a stream of objects", s.found())}
	}
	return nil
}
