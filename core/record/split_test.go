package record_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// splitAll splits data and returns every chunk; reads go one byte at a
// time, so no record boundary depends on how the input arrives.
// splitAll splits data as seam validate does: each chunk's data is given
// back to the splitter (Recycle) once read, here once copied.
func splitAll(t testing.TB, data []byte, format recordv1.Format, n, maxBytes int) ([]record.Chunk, error) {
	t.Helper()
	return split(t, data, format, n, maxBytes, true)
}

func split(t testing.TB, data []byte, format recordv1.Format, n, maxBytes int, recycle bool) ([]record.Chunk, error) {
	t.Helper()
	s := record.NewSplitter(iotest.OneByteReader(bytes.NewReader(data)), format, n)
	s.LimitBytes(maxBytes)
	var out []record.Chunk
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if recycle {
			data := c.Data
			c.Data = bytes.Clone(data)
			s.Recycle(data)
		}
		out = append(out, c)
	}
}

// Chunks cut into recycled buffers are the chunks cut into new ones, and
// once its chunks are recycled an NDJSON splitter allocates nothing for
// them (a CSV splitter still allocates the rows encoding/csv reads).
func TestSplitterRecycle(t *testing.T) {
	for _, format := range []recordv1.Format{recordv1.Format_FORMAT_NDJSON, recordv1.Format_FORMAT_CSV} {
		var data []byte
		if format == recordv1.Format_FORMAT_CSV {
			data = append(data, "s,i\n"...)
		}
		for i := range 500 {
			if format == recordv1.Format_FORMAT_CSV {
				data = fmt.Appendf(data, "\"a\nb%d\",%d\n", i, i)
			} else {
				data = fmt.Appendf(data, "{\"s\":\"%s\",\"i\":%d}\n", strings.Repeat("x", i%17), i)
			}
		}
		fresh, err := split(t, data, format, 7, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		recycled, err := split(t, data, format, 7, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(recycled) != fmt.Sprint(fresh) {
			t.Errorf("%v: chunks in recycled buffers differ from chunks in new ones", format)
		}
		if format != recordv1.Format_FORMAT_NDJSON {
			continue
		}
		s := record.NewSplitter(bytes.NewReader(data), format, 7)
		allocs := testing.AllocsPerRun(20, func() {
			if c, err := s.Next(); err == nil {
				s.Recycle(c.Data)
			}
		})
		if allocs > 0.5 {
			t.Errorf("%v: %.1f allocations a chunk with its buffers recycled, want none", format, allocs)
		}
	}
}

// splitSchema is testSchema built once: the fuzz target decodes every
// input several times.
var splitSchema = func() func(testing.TB) *record.Schema {
	var once sync.Once
	var s *record.Schema
	return func(t testing.TB) *record.Schema {
		once.Do(func() { s = testSchema(t) })
		return s
	}
}()

var localPlace = regexp.MustCompile(`line \d+(, column \d+)?(, byte offset \d+)?`)

// seen is what a decoded record looks like from outside: where it is, its
// bytes, and whether and why it failed.
type seen struct {
	pos int64
	raw string
	err string
}

func decodeSeen(t testing.TB, data []byte, format recordv1.Format, first int64) ([]seen, error) {
	t.Helper()
	d := record.NewDecoder(splitSchema(t), record.Options{MaxRecordBytes: 4 << 10, MaxDepth: 8})
	b, err := d.Decode(format, data, first)
	var out []seen
	for _, r := range b.Records {
		// Messages name the line and byte offset within the batch decoded;
		// Position is what names the record in the whole input.
		out = append(out, seen{r.Position, string(r.Raw), localPlace.ReplaceAllString(r.Err.GetMessage(), "line L")})
	}
	return out, err
}

// checkSplit is the splitter's promise: decoding the chunks one by one
// gives exactly the records, positions and errors of decoding the whole
// input at once, no chunk holds more than n records, and no record is
// lost or repeated.
func checkSplit(t *testing.T, data []byte, format recordv1.Format, n, maxBytes int) []record.Chunk {
	t.Helper()
	chunks, err := splitAll(t, data, format, n, maxBytes)
	whole, wholeErr := decodeSeen(t, bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), format, 0)
	if err != nil {
		if format == recordv1.Format_FORMAT_CSV && wholeErr != nil {
			return chunks // a header the decoder refuses too
		}
		t.Fatalf("split: %v (the decoder said %v)", err, wholeErr)
	}
	if format == recordv1.Format_FORMAT_CSV && wholeErr != nil {
		// A header the decoder refuses: every chunk carries it, so every
		// chunk is refused the same way.
		for i, c := range chunks {
			if _, err := decodeSeen(t, c.Data, format, c.FirstOffset); fmt.Sprint(err) != fmt.Sprint(wholeErr) {
				t.Fatalf("chunk %d: %v, the whole input: %v", i, err, wholeErr)
			}
		}
		return chunks
	}
	var got []seen
	for i, c := range chunks {
		if c.Records > n || (format != recordv1.Format_FORMAT_JSON && c.Records < 1) {
			t.Fatalf("chunk %d holds %d records, want 1..%d", i, c.Records, n)
		}
		if maxBytes > 0 && c.Records > 1 && len(c.Data) > maxBytes {
			t.Fatalf("chunk %d holds %d records in %d bytes, over the bound of %d", i, c.Records, len(c.Data), maxBytes)
		}
		recs, err := decodeSeen(t, c.Data, format, c.FirstOffset)
		if err != nil && format != recordv1.Format_FORMAT_JSON {
			t.Fatalf("chunk %d does not decode alone: %v\n%q", i, err, c.Data)
		}
		if format != recordv1.Format_FORMAT_JSON && len(recs) != c.Records {
			t.Fatalf("chunk %d says %d records and decodes to %d\n%q", i, c.Records, len(recs), c.Data)
		}
		got = append(got, recs...)
	}
	if fmt.Sprint(got) != fmt.Sprint(whole) {
		t.Fatalf("chunks of %d decode to\n%v\nthe whole input to\n%v\ninput %q", n, got, whole, data)
	}
	return chunks
}

// chunkShape is each chunk's record count and its first record's line.
func chunkShape(t *testing.T, chunks []record.Chunk, format recordv1.Format) ([]int, []int64) {
	t.Helper()
	var records []int
	var lines []int64
	for _, c := range chunks {
		records = append(records, c.Records)
		d := record.NewDecoder(testSchema(t), record.Options{})
		b, _ := d.Decode(format, c.Data, c.FirstOffset)
		lines = append(lines, b.Records[0].Position)
	}
	return records, lines
}

func TestSplitter(t *testing.T) {
	t.Parallel()
	const (
		nd  = recordv1.Format_FORMAT_NDJSON
		csv = recordv1.Format_FORMAT_CSV
	)
	tests := []struct {
		name   string
		format recordv1.Format
		data   string
		n      int
		// records is the records per chunk; lines the first record's line
		// of each chunk.
		records []int
		lines   []int64
	}{
		{"ndjson escaped quotes do not merge lines", nd,
			`{"s":"say \"hi\""}` + "\n" + `{"s":"\""}` + "\n" + `{"s":"a"}` + "\n" + `{"s":"\"\""}` + "\n", 2, []int{2, 2}, []int64{1, 3}},
		{"ndjson a lone quote in a memo", nd, `{"s":"5\" screen"}` + "\n{\"i\":1}\n{\"i\":2}\n", 1, []int{1, 1, 1}, []int64{1, 2, 3}},
		{"ndjson blank lines counted", nd, "\n\n{\"i\":1}\n\n{\"i\":2}\n  \n{\"i\":3}\n\n", 2, []int{2, 1}, []int64{3, 7}},
		{"ndjson CRLF", nd, "{\"i\":1}\r\n{\"i\":2}\r\n{\"i\":3}", 2, []int{2, 1}, []int64{1, 3}},
		{"ndjson BOM", nd, "\xef\xbb\xbf{\"i\":1}\n{\"i\":2}\n", 5, []int{2}, []int64{1}},
		{"ndjson raw line break in a string is two bad lines", nd, "{\"s\":\"a\nb\"}\n{\"i\":1}\n", 1, []int{1, 1, 1}, []int64{1, 2, 3}},
		{"ndjson empty", nd, "\n \n", 3, nil, nil},
		{"csv quoted line breaks and doubled quotes", csv, "s,i\n\"a\nb\",1\n\"say \"\"hi\"\"\",2\nc,3\n", 2, []int{2, 1}, []int64{2, 5}},
		{"csv CRLF", csv, "s,i\r\na,1\r\nb,2\r\nc,3\r\n", 1, []int{1, 1, 1}, []int64{2, 3, 4}},
		{"csv BOM before the header", csv, "\xef\xbb\xbfs,i\na,1\n", 10, []int{1}, []int64{2}},
		{"csv blank lines between rows", csv, "s,i\na,1\n\n\nb,2\n", 1, []int{1, 1}, []int64{2, 5}},
		{"csv bare quote is one bad row", csv, "s,i\na\"b,1\nc,2\n", 1, []int{1, 1}, []int64{2, 3}},
		{"csv header only", csv, "s,i\n", 3, nil, nil},
		{"csv header without a line break", csv, "s,i", 3, nil, nil},
		{"csv empty", csv, "", 3, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			records, lines := chunkShape(t, checkSplit(t, []byte(tt.data), tt.format, tt.n, 0), tt.format)
			if fmt.Sprint(records) != fmt.Sprint(tt.records) || fmt.Sprint(lines) != fmt.Sprint(tt.lines) {
				t.Errorf("chunks of %v records starting at lines %v, want %v at %v", records, lines, tt.records, tt.lines)
			}
		})
	}
}

// Chunk sizes are honoured on a real feed, in both formats, and a CSV
// chunk starts with the header.
func TestSplitterChunkSizes(t *testing.T) {
	t.Parallel()
	data := recordtest.OrdersNDJSON(2500)
	for _, n := range []int{1, 997, 1000, 2500, 5000} {
		chunks, err := splitAll(t, data, recordv1.Format_FORMAT_NDJSON, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for i, c := range chunks {
			want := min(n, 2500-total)
			if c.Records != want {
				t.Fatalf("chunk size %d: chunk %d holds %d records, want %d", n, i, c.Records, want)
			}
			total += c.Records
		}
	}
	csvData := "s,i\n" + strings.Repeat("\"x,\"\"y\"\"\nz\",1\r\n", 10)
	chunks, err := splitAll(t, []byte(csvData), recordv1.Format_FORMAT_CSV, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 4 || chunks[3].Records != 1 {
		t.Fatalf("10 rows in chunks of 3: %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if !bytes.HasPrefix(c.Data, []byte("s,i\n")) {
			t.Errorf("chunk %d does not start with the header: %q", i, c.Data)
		}
	}
}

// A reader that fails is an error of Next, not an early end.
func TestSplitterReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk on fire")
	s := record.NewSplitter(io.MultiReader(strings.NewReader("{\"i\":1}\n"), iotest.ErrReader(boom)), recordv1.Format_FORMAT_NDJSON, 10)
	c, err := s.Next()
	if err != nil || c.Records != 1 {
		t.Fatalf("first chunk: %d records, %v; want the record read before the failure", c.Records, err)
	}
	if _, err := s.Next(); !errors.Is(err, boom) {
		t.Fatalf("after the failure: %v, want %v", err, boom)
	}
}

// FuzzSplit: whatever the input, record count and byte bound, the chunks
// decode to the records of the whole input, in order, each chunk within
// both bounds (a single record may pass the byte bound).
func FuzzSplit(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(1), true)
		f.Add([]byte(s), uint8(2), false)
	}
	f.Add([]byte("\xef\xbb\xbfs,i\r\n\"a\r\nb\",1\r\n\r\n\"\"\"\",2\n"), uint8(1), true)
	f.Add([]byte("{\"s\":\"\\\"\"}\n\n{\"s\":\"\\\\\"}\r\n"), uint8(1), false)
	f.Fuzz(func(t *testing.T, data []byte, n uint8, csv bool) {
		format := recordv1.Format_FORMAT_NDJSON
		if csv {
			format = recordv1.Format_FORMAT_CSV
		}
		// n also picks a byte bound: none for n < 7, else 8 to 288 bytes.
		checkSplit(t, data, format, int(n%7)+1, int(n/7)*8)
	})
}

// A byte bound cuts a chunk before the record that would pass it, in
// both formats; a record longer than the bound is a chunk of its own.
func TestSplitterLimitBytes(t *testing.T) {
	t.Parallel()
	nd := "{\"i\":1}\n{\"i\":2}\n{\"s\":\"" + strings.Repeat("x", 40) + "\"}\n{\"i\":3}\n{\"i\":4}\n"
	csvData := "s,i\na,1\nb,2\n\"" + strings.Repeat("y", 40) + "\",3\nc,4\nd,5\n"
	tests := []struct {
		name     string
		format   recordv1.Format
		data     string
		maxBytes int
		records  []int
		lines    []int64
	}{
		{"ndjson", recordv1.Format_FORMAT_NDJSON, nd, 20, []int{2, 1, 2}, []int64{1, 3, 4}},
		{"ndjson unbounded", recordv1.Format_FORMAT_NDJSON, nd, 0, []int{5}, []int64{1}},
		{"csv", recordv1.Format_FORMAT_CSV, csvData, 16, []int{2, 1, 2}, []int64{2, 4, 5}},
		{"csv unbounded", recordv1.Format_FORMAT_CSV, csvData, 0, []int{5}, []int64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			records, lines := chunkShape(t, checkSplit(t, []byte(tt.data), tt.format, 100, tt.maxBytes), tt.format)
			if fmt.Sprint(records) != fmt.Sprint(tt.records) || fmt.Sprint(lines) != fmt.Sprint(tt.lines) {
				t.Errorf("chunks of %v records starting at lines %v, want %v at %v", records, lines, tt.records, tt.lines)
			}
		})
	}
}
