package record_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// allPaths names every field of s, in slot order, as a sender of packed
// records does.
func allPaths(s *record.Schema) []string {
	paths := make([]string, s.Len())
	for i := range paths {
		paths[i] = s.Field(i).Path
	}
	return paths
}

// packedRoundTrip packs decoded records and reads them back with another
// decoder: every value comes back equal, arrays with their element count.
func packedRoundTrip(t *testing.T, s *record.Schema, recs []record.Record) {
	t.Helper()
	paths := allPaths(s)
	var data []byte
	var sent []record.Record
	for _, r := range recs {
		if r.Err == nil {
			data = record.AppendPacked(data, r.Values)
			sent = append(sent, r)
		}
	}
	d := record.NewDecoder(s, record.Options{MaxDepth: 8})
	b, err := d.DecodePacked(paths, data, len(sent))
	if err != nil {
		t.Fatalf("DecodePacked of %d records: %v", len(sent), err)
	}
	if len(b.Records) != len(sent) {
		t.Fatalf("DecodePacked returned %d records, want %d", len(b.Records), len(sent))
	}
	for i, r := range sent {
		for slot, want := range r.Values {
			got := b.Records[i].Values[slot]
			if !got.Equal(want) || got.Len() != want.Len() || got.IsInt() != want.IsInt() || got.Overflow() != want.Overflow() {
				t.Fatalf("record %d field %s: got %v %q, want %v %q", i, s.Field(slot).Path, got.Kind(), got.Bytes(), want.Kind(), want.Bytes())
			}
		}
	}
}

func TestPackedRoundTrip(t *testing.T) {
	s := testSchema(t)
	d := record.NewDecoder(s, record.Options{})
	data := strings.Join([]string{
		`{"s":"plain","i":42,"f":-1.25e3,"b":true,"o":{"id":"x\"y\\z"},"a":[1,[2,3],{"k":null}]}`,
		`{"s":"caf\u00e9 \ud83d\ude00","i":-9223372036854775808,"f":1e400,"b":false,"o":{},"a":[]}`,
		`{"i":99999999999999999999,"s":null}`,
		`{"s":"","o":null,"a":null,"b":null}`,
		`{}`,
	}, "\n")
	b, err := d.Decode(recordv1.Format_FORMAT_NDJSON, []byte(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	packedRoundTrip(t, s, b.Records)

	orders := recordtest.OrderSchema()
	ob, err := record.NewDecoder(orders, record.Options{}).Decode(recordv1.Format_FORMAT_NDJSON, recordtest.OrdersNDJSON(50), 0)
	if err != nil {
		t.Fatal(err)
	}
	packedRoundTrip(t, orders, ob.Records)
}

// TestPackedSubsetOfFields reads records that name only some fields, in
// another order: the rest stay absent.
func TestPackedSubsetOfFields(t *testing.T) {
	s := testSchema(t)
	b := decode(t, s, recordv1.Format_FORMAT_NDJSON, []byte(`{"s":"x","i":7,"b":true}`), 0)
	iSlot, _ := s.Lookup("i")
	sSlot, _ := s.Lookup("s")
	vals := b.Records[0].Values
	data := record.AppendPacked(nil, []record.Value{vals[iSlot], vals[sSlot]})
	got, err := record.NewDecoder(s, record.Options{}).DecodePacked([]string{"i", "s"}, data, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := got.Records[0]
	if n, ok := r.Values[iSlot].Int(); !ok || n != 7 || string(r.Values[sSlot].Bytes()) != "x" {
		t.Errorf("values = %v %q", r.Values[iSlot], r.Values[sSlot].Bytes())
	}
	if v := value(t, s, r, "b"); v.Kind() != record.KindAbsent {
		t.Errorf("b = %v, want absent: it was not sent", v.Kind())
	}
}

func TestPackedErrors(t *testing.T) {
	s := testSchema(t)
	str := func(kind record.Kind, b string) []byte {
		out := []byte{byte(kind)}
		out = binary.AppendUvarint(out, uint64(len(b)))
		return append(out, b...)
	}
	tests := []struct {
		name  string
		paths []string
		data  []byte
		count int
		want  string
	}{
		{"unknown field", []string{"nope"}, []byte{0}, 1, `field "nope" is not declared`},
		{"field twice", []string{"s", "s"}, []byte{0, 0}, 1, `named twice`},
		{"no fields", nil, nil, 3, "no fields"},
		{"count beyond data", []string{"s"}, []byte{0}, 1 << 40, "cannot fit"},
		{"negative count", []string{"s"}, nil, -1, "cannot fit"},
		{"truncated", []string{"s", "i"}, str(record.KindString, "ab"), 1, "record 0, field i (byte 4): the data ends"},
		{"unknown kind", []string{"s"}, []byte{9}, 1, "unknown value kind 9"},
		{"bad bool", []string{"b"}, []byte{byte(record.KindBool), 2}, 1, "a bool must be"},
		{"length past end", []string{"s"}, []byte{byte(record.KindString), 5, 'a'}, 1, "runs past the data"},
		{"huge length", []string{"s"}, append([]byte{byte(record.KindString)}, binary.AppendUvarint(nil, 1<<63)...), 1, "runs past the data"},
		{"invalid UTF-8", []string{"s"}, str(record.KindString, "\xff"), 1, "not valid UTF-8"},
		{"not a number", []string{"i"}, str(record.KindNumber, "1x"), 1, `"1x" is not a JSON number`},
		{"empty number", []string{"i"}, str(record.KindNumber, ""), 1, "is not a JSON number"},
		{"leading zero", []string{"i"}, str(record.KindNumber, "01"), 1, "is not a JSON number"},
		{"object not JSON", []string{"o"}, str(record.KindObject, `{"a":}`), 1, "object value is not valid JSON"},
		{"array as object", []string{"o"}, str(record.KindObject, `[1]`), 1, "does not start with"},
		{"bytes after object", []string{"o"}, str(record.KindObject, `{} x`), 1, "bytes after its end"},
		{"too deep", []string{"a"}, str(record.KindArray, strings.Repeat("[", 20)+strings.Repeat("]", 20)), 1, "nesting deeper"},
		{"trailing bytes", []string{"s"}, []byte{0, 0}, 1, "1 bytes after the last of 1 records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := record.NewDecoder(s, record.Options{MaxDepth: 8}).DecodePacked(tt.paths, tt.data, tt.count)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// FuzzDecodePacked feeds arbitrary bytes as packed records of the test
// schema: never a panic, and what is accepted packs back to the same bytes.
func FuzzDecodePacked(f *testing.F) {
	s := testSchema(f)
	paths := allPaths(s)
	d := record.NewDecoder(s, record.Options{})
	for _, seed := range fuzzSeeds {
		b, _ := d.Decode(recordv1.Format_FORMAT_NDJSON, []byte(seed), 0)
		var data []byte
		n := 0
		for _, r := range b.Records {
			if r.Err == nil {
				data = record.AppendPacked(data, r.Values)
				n++
			}
		}
		f.Add(data, n)
	}
	f.Add([]byte{2, 1, 'x', 3, 1, '1'}, 1)
	f.Fuzz(func(t *testing.T, data []byte, count int) {
		rd := record.NewDecoder(s, record.Options{MaxDepth: 8})
		b, err := rd.DecodePacked(paths, data, count)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "decode packed records: ") {
				t.Fatalf("error without its prefix: %v", err)
			}
			return
		}
		var again []byte
		for _, r := range b.Records {
			again = record.AppendPacked(again, r.Values)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("packed %q read back and packed again as %q", data, again)
		}
	})
}
