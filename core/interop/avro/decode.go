package avro

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/seamdata/seam/core/interop"
)

// Decoder decodes Avro binary records of one schema into JSON objects in
// the form Seam's checks read: timestamps as RFC 3339 strings in UTC,
// dates as YYYY-MM-DD, decimals as exact decimal strings, bytes and fixed
// as base64, enums as their symbols, a nullable union's value as the
// value itself (or null).
type Decoder struct {
	schema hamba.Schema
}

// Bounds on what one payload may make the decoder allocate: an array's
// item count is read from the payload before its items, so a few bytes
// could otherwise ask for terabytes. A Kafka message is 1 MiB by default,
// and every item Seam's contracts allow takes at least one byte.
const (
	maxArrayItems = 1 << 20
	maxBytesValue = 8 << 20
)

var decodeAPI = hamba.Config{MaxSliceAllocSize: maxArrayItems, MaxByteSliceSize: maxBytesValue}.Freeze()

// NewDecoder returns a decoder for the schema text.
func NewDecoder(text string) (*Decoder, error) {
	s, err := Parse(text)
	if err != nil {
		return nil, fmt.Errorf("avro: parse the schema: %w", err)
	}
	return &Decoder{schema: s}, nil
}

// Decode decodes one record (the whole of data) and returns it as JSON.
// A record that does not decode, or that leaves bytes over, is an error
// saying where.
func (d *Decoder) Decode(data []byte) ([]byte, error) {
	r := hamba.NewReader(nil, 0, hamba.WithReaderConfig(decodeAPI))
	r.Reset(data)
	var v any
	r.ReadVal(d.schema, &v)
	if r.Error != nil {
		return nil, fmt.Errorf("the Avro payload (%d bytes) does not decode with the schema: %w", len(data), r.Error)
	}
	// A payload with bytes left over after the record was written with
	// another schema; Peek sets io.EOF only at the end of the data.
	r.Peek()
	if r.Error == nil {
		return nil, fmt.Errorf("the Avro payload (%d bytes) has bytes left over after the record: it was written with another schema", len(data))
	}
	out, err := plain(d.schema, v, "")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode the decoded record as JSON: %w", err)
	}
	return b, nil
}

// plain turns a decoded value into one json.Marshal writes as Seam reads
// it, walking the schema alongside.
func plain(s hamba.Schema, v any, path string) (any, error) {
	if r, ok := s.(*hamba.RefSchema); ok {
		s = r.Schema()
	}
	if v == nil {
		return nil, nil
	}
	switch t := s.(type) {
	case *hamba.UnionSchema:
		// A union value decodes as a map of the branch's name to the
		// value when the union is not a plain nullable one.
		branch, val := s, v
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for k, x := range m {
				for _, b := range t.Types() {
					if unionKey(b) == k {
						branch, val = b, x
					}
				}
			}
		}
		if branch == s {
			for _, b := range t.Types() {
				if b.Type() != hamba.Null {
					branch = b
					break
				}
			}
		}
		return plain(branch, val, path)
	case *hamba.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %s: decoded as %T, not a record", path, v)
		}
		out := make(map[string]any, len(t.Fields()))
		for _, f := range t.Fields() {
			x, err := plain(f.Type(), m[f.Name()], interop.Join(path, f.Name()))
			if err != nil {
				return nil, err
			}
			out[f.Name()] = x
		}
		return out, nil
	case *hamba.ArraySchema:
		xs, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("field %s: decoded as %T, not an array", path, v)
		}
		out := make([]any, len(xs))
		for i, x := range xs {
			y, err := plain(t.Items(), x, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case *hamba.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %s: decoded as %T, not a map", path, v)
		}
		out := make(map[string]any, len(m))
		for k, x := range m {
			y, err := plain(t.Values(), x, interop.Join(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	}
	switch x := v.(type) {
	case time.Time:
		if l, ok := s.(hamba.LogicalTypeSchema); ok && l.Logical() != nil && l.Logical().Type() == hamba.Date {
			return x.UTC().Format(time.DateOnly), nil
		}
		return x.UTC().Format(time.RFC3339Nano), nil
	case time.Duration:
		if l, ok := s.(hamba.LogicalTypeSchema); ok && l.Logical() != nil && l.Logical().Type() == hamba.TimeMillis {
			return x.Milliseconds(), nil
		}
		return x.Microseconds(), nil
	case *big.Rat:
		scale := 0
		if l, ok := s.(hamba.LogicalTypeSchema); ok {
			if d, ok := l.Logical().(*hamba.DecimalLogicalSchema); ok {
				scale = d.Scale()
			}
		}
		return json.RawMessage(`"` + x.FloatString(scale) + `"`), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case [16]byte:
		return base64.StdEncoding.EncodeToString(x[:]), nil
	case hamba.LogicalDuration:
		return fmt.Sprintf("P%dM%dDT%dS", x.Months, x.Days, x.Milliseconds/1000), nil
	}
	return v, nil
}

// unionKey is the name hamba gives a union branch in a decoded map.
func unionKey(s hamba.Schema) string {
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.FullName()
	}
	if l, ok := s.(hamba.LogicalTypeSchema); ok && l.Logical() != nil {
		return string(s.Type()) + "." + string(l.Logical().Type())
	}
	return string(s.Type())
}
