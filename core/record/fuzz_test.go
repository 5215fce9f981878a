package record_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// fuzzSeeds are inputs that reach each branch of the scanner; the corpus
// under testdata/fuzz grows from them.
var fuzzSeeds = []string{
	`{"s":"x","i":1,"f":1.5,"b":true,"o":{"id":"y"},"a":[1,[2],{"k":null}]}`,
	`[{"i":1},{"i":[1,}, {"s":"]"}, {"i":3}]`,
	`{"s":"\ud83d\ude00\u00e9\n\"","i":-9223372036854775808,"f":1e400}`,
	"{\"s\":\"\xff\"}\n\n{\"i\":012}\r\n{\"zz\":[[[[[]]]]]}",
	`{"i":1,"i":2}`,
	`[1,"x",null,{}]`,
	"s,i,f,b,o,a\n\"q\"\"\nx\",1,2.5,true,\"{\"\"id\"\":\"\"z\"\"}\",[1]\nr,1\n",
}

func fuzzDecode(f *testing.F, format recordv1.Format) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add(recordtest.OrdersNDJSON(2))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := testSchema(t)
		d := record.NewDecoder(s, record.Options{MaxRecordBytes: 4 << 10, MaxDepth: 8})
		b, err := d.Decode(format, data, 3)
		if b == nil {
			t.Fatalf("Decode returned no batch (err %v)", err)
		}
		if err != nil {
			var be *record.BatchError
			if !errors.As(err, &be) {
				t.Fatalf("batch error %T %v, want *BatchError", err, err)
			}
		}
		checkAccounting(t, format, data, b, err)
		for i, r := range b.Records {
			if r.Index != int64(i) {
				t.Fatalf("record %d has index %d", i, r.Index)
			}
			if format == recordv1.Format_FORMAT_JSON && r.Position != 3+int64(i) {
				t.Fatalf("record %d has position %d, want %d", i, r.Position, 3+i)
			}
			if r.Err != nil {
				if r.Values != nil || r.Err.GetMessage() == "" {
					t.Fatalf("failed record %d keeps values or has no message: %v", i, r.Err)
				}
				continue
			}
			roundTrip(t, s, d, r)
		}
		packedRoundTrip(t, s, b.Records)
	})
}

// checkAccounting asserts that every input record is in the batch, counting
// records independently of the decoder.
func checkAccounting(t *testing.T, format recordv1.Format, data []byte, b *record.Batch, err error) {
	t.Helper()
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	want := -1
	switch format {
	case recordv1.Format_FORMAT_NDJSON:
		want = 0
		for line := range bytes.SplitSeq(data, []byte{'\n'}) {
			if len(bytes.Trim(line, " \t\r\n")) > 0 {
				want++
			}
		}
	case recordv1.Format_FORMAT_CSV:
		if err != nil {
			return
		}
		cr := csv.NewReader(bytes.NewReader(data))
		cr.FieldsPerRecord = -1
		want = 0
		for {
			_, rerr := cr.Read()
			if errors.Is(rerr, io.EOF) {
				break
			}
			want++
		}
		want = max(want-1, 0) // the header
	}
	if want >= 0 && len(b.Records) != want {
		t.Fatalf("got %d records, want %d", len(b.Records), want)
	}
}

// roundTrip encodes a decoded record, decodes it again and compares values.
func roundTrip(t *testing.T, s *record.Schema, d *record.Decoder, r record.Record) {
	t.Helper()
	enc := record.AppendJSON(nil, s, r.Values)
	if len(enc) > len(r.Raw) {
		// JSON escapes a control character in six bytes (\u0003), so a
		// record within the size limit as sent may pass it as JSON: the
		// limit is on what a source sends, the round trip is on values.
		d = record.NewDecoder(s, record.Options{MaxRecordBytes: max(4<<10, len(enc)), MaxDepth: 8})
	}
	b2, err := d.Decode(recordv1.Format_FORMAT_JSON, enc, 0)
	if err != nil || len(b2.Records) != 1 || b2.Records[0].Err != nil {
		t.Fatalf("re-decoding %q (from %q) failed: %v %v", enc, r.Raw, err, b2.Records)
	}
	for i := range s.Len() {
		got, want := b2.Records[0].Values[i], r.Values[i]
		if want.Kind() == record.KindString && !utf8.Valid(want.Bytes()) {
			t.Fatalf("slot %d: decoded string %q is not UTF-8", i, want.Bytes())
		}
		if want.Kind() == record.KindRaw {
			// CSV text that did not parse as its type is written as a string.
			if got.Kind() != record.KindString || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("slot %d: raw %q came back as %v %q", i, want.Bytes(), got.Kind(), got.Bytes())
			}
			continue
		}
		if s.Field(i).Path == "o" && want.Kind() == record.KindObject {
			// Rebuilt from its members, so its text differs; members compare.
			if got.Kind() != record.KindObject {
				t.Fatalf("slot o: got kind %v, want object", got.Kind())
			}
			continue
		}
		if !got.Equal(want) {
			t.Fatalf("slot %s: got %v %q after round trip of %q, want %v %q", s.Field(i).Path, got.Kind(), got.Bytes(), enc, want.Kind(), want.Bytes())
		}
	}
}

func FuzzDecodeJSON(f *testing.F)   { fuzzDecode(f, recordv1.Format_FORMAT_JSON) }
func FuzzDecodeNDJSON(f *testing.F) { fuzzDecode(f, recordv1.Format_FORMAT_NDJSON) }
func FuzzDecodeCSV(f *testing.F)    { fuzzDecode(f, recordv1.Format_FORMAT_CSV) }
