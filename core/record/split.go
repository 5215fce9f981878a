package record

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sync"

	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Chunk is a run of whole records cut from a larger input, ready to be
// decoded (or sent to the gate) as one batch.
type Chunk struct {
	// Data holds the chunk's records; a CSV chunk starts with the input's
	// header row, so it decodes on its own.
	Data []byte
	// FirstOffset is what to pass to Decode so that every record's
	// Position is its line in the whole input (for a JSON document, its
	// index).
	FirstOffset int64
	// Records is how many records the chunk holds; -1 for a JSON document,
	// whose records are only known once decoded.
	Records int
	// Bytes is how much of the input the chunk accounts for, for progress.
	Bytes int64
}

// Splitter cuts an input into chunks of at most n records on record
// boundaries, reading it as a stream: memory holds one chunk, not the
// input. `seam validate` and `seam gate ingest` both cut files with it, so
// a file is judged in the same batches offline and at the gate.
//
// NDJSON is cut at line feeds and nowhere else (a JSON string cannot hold
// a raw line break, so quotes do not matter); blank lines are skipped and
// counted. CSV is cut where encoding/csv, the reader the decoder uses,
// ends a record: a quoted field may hold commas, doubled quotes and line
// breaks, and CRLF ends a line; the header row starts every chunk. A JSON
// document is one chunk. A UTF-8 byte order mark at the start of the input
// is dropped.
type Splitter struct {
	format recordv1.Format
	n      int
	src    *bufio.Reader
	err    error // sticky: io.EOF once the input is done
	lines  int64 // lines of the input before the next chunk

	// NDJSON: a record line read ahead that starts the next chunk, and
	// the size of the last chunk, which the next one's buffer starts at so
	// it is not grown (and copied) line by line.
	carry      []byte
	carryBytes int64
	carryBuf   []byte // carry's memory, reused chunk after chunk
	// maxBytes, when positive, bounds a chunk's data (see LimitBytes).
	maxBytes int
	sizeHint int

	// CSV: the reader, the bytes it consumed that no chunk has taken yet,
	// and the header row.
	cr         *csv.Reader
	tape       *tape
	header     []byte
	headerRead bool
	// pending is a row read past a chunk's byte bound: the first record
	// of the next chunk, ending at input offset pendingEnd.
	pending    bool
	pendingEnd int64

	// free holds chunk buffers given back with Recycle, for the next
	// chunks to fill instead of allocating.
	freeMu sync.Mutex
	free   [][]byte
}

// maxFree bounds the buffers a splitter keeps for reuse.
const maxFree = 8

// Recycle gives a chunk's Data back for a later chunk to fill, once
// nothing reads it any more. It is safe to call from other goroutines
// than the one calling Next; not calling it only costs allocations.
func (s *Splitter) Recycle(data []byte) {
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	if len(s.free) < maxFree && cap(data) > 0 {
		s.free = append(s.free, data[:0])
	}
}

// buffer returns an empty buffer for a chunk of about size bytes: a
// recycled one when it is large enough, else a new one (nil for size 0).
func (s *Splitter) buffer(size int) []byte {
	s.freeMu.Lock()
	var b []byte
	if n := len(s.free); n > 0 {
		b, s.free = s.free[n-1], s.free[:n-1]
	}
	s.freeMu.Unlock()
	if cap(b) >= size && b != nil {
		return b
	}
	if size == 0 {
		return nil
	}
	return make([]byte, 0, size)
}

// NewSplitter returns a splitter of r in format with at most perChunk
// records a chunk (at least one).
func NewSplitter(r io.Reader, format recordv1.Format, perChunk int) *Splitter {
	s := &Splitter{format: format, n: max(perChunk, 1), src: bufio.NewReaderSize(r, 64<<10)}
	if bom, err := s.src.Peek(3); err == nil && bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		_, _ = s.src.Discard(3)
	}
	if format == recordv1.Format_FORMAT_CSV {
		s.tape = &tape{r: s.src}
		s.cr = csv.NewReader(s.tape)
		s.cr.FieldsPerRecord = -1 // ragged rows are the decoder's to report
		s.cr.ReuseRecord = true
	}
	return s
}

// LimitBytes bounds a chunk's data to n bytes as well as to its record
// count: a chunk ends before the record that would take it past n. A
// chunk holds at least one record, however long. A JSON document stays
// one chunk.
func (s *Splitter) LimitBytes(n int) { s.maxBytes = n }

// over reports whether a chunk of size bytes passes the byte bound.
func (s *Splitter) over(size int) bool { return s.maxBytes > 0 && size > s.maxBytes }

// Header returns the CSV header row as read (with its line break), once
// the first chunk was returned; nil for other formats.
func (s *Splitter) Header() []byte { return s.header }

// Next returns the next chunk, or io.EOF after the last one. An input
// without a single record returns io.EOF at once. Other errors are the
// reader's, or a CSV header that cannot be read.
func (s *Splitter) Next() (Chunk, error) {
	if s.err != nil {
		return Chunk{}, s.err
	}
	var c Chunk
	var err error
	switch s.format {
	case recordv1.Format_FORMAT_NDJSON:
		c, err = s.nextNDJSON()
	case recordv1.Format_FORMAT_CSV:
		c, err = s.nextCSV()
	case recordv1.Format_FORMAT_JSON:
		c, err = s.nextJSON()
	default:
		err = fmt.Errorf("cannot split format %s; use NDJSON, CSV or JSON", s.format)
	}
	if err != nil {
		s.err = err
		if c.Records != 0 {
			// The chunk read before the input ended is still a chunk.
			return c, nil
		}
	}
	return c, err
}

// blank reports whether an NDJSON line holds no record: the decoder skips
// lines of JSON whitespace.
func blank(line []byte) bool {
	return len(bytes.TrimLeft(line, " \t\r\n")) == 0
}

// readLine reads one line with its line feed, however long.
func (s *Splitter) readLine() ([]byte, error) {
	line, err := s.src.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = s.src.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

func (s *Splitter) nextNDJSON() (Chunk, error) {
	c := Chunk{FirstOffset: -1, Data: s.buffer(s.sizeHint)}
	var gap []byte // blank lines after the last record taken
	var gapLines int64
	take := func(line []byte, size int64) {
		if c.Records == 0 {
			c.FirstOffset = s.lines
		}
		c.Data = append(c.Data, gap...)
		c.Data = append(c.Data, line...)
		s.lines += gapLines + 1
		gap, gapLines = gap[:0], 0
		c.Records++
		c.Bytes += size
	}
	if s.carry != nil {
		take(s.carry, s.carryBytes)
		s.carry = nil
	}
	for {
		line, err := s.readLine()
		if len(line) > 0 {
			switch {
			case blank(line):
				c.Bytes += int64(len(line))
				if c.Records == 0 {
					s.lines++
				} else {
					gap = append(gap, line...)
					gapLines++
				}
			case c.Records == s.n || c.Records > 0 && s.over(len(c.Data)+len(gap)+len(line)):
				s.carryBuf = append(s.carryBuf[:0], line...)
				s.carry, s.carryBytes = s.carryBuf, int64(len(line))
				s.lines += gapLines
				s.sizeHint = len(c.Data) + len(c.Data)/8
				return c, nil
			default:
				take(line, int64(len(line)))
			}
		}
		if err != nil {
			s.lines += gapLines
			if c.Records == 0 {
				c.FirstOffset = 0
			}
			return c, err
		}
	}
}

func (s *Splitter) nextCSV() (Chunk, error) {
	var c Chunk
	if !s.headerRead {
		s.headerRead = true
		if _, err := s.cr.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				return c, io.EOF
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return c, fmt.Errorf("CSV header: %w", err)
			}
			return c, err
		}
		end := s.cr.InputOffset()
		s.header = append([]byte(nil), s.tape.slice(0, end)...)
		s.lines = int64(bytes.Count(s.header, []byte{'\n'}))
		s.tape.drop(end)
		c.Bytes = end
	}
	headerLines := int64(bytes.Count(s.header, []byte{'\n'}))
	if headerLines == 0 {
		// The header is the input's last line: there is no row.
		return c, io.EOF
	}
	// The chunk starts where the last one ended (the reader may be a row
	// further, when that row did not fit the last chunk's byte bound).
	start := s.tape.base
	end := start
	if s.pending {
		end, s.pending = s.pendingEnd, false
		c.Records++
	}
	var err error
	cut := false
	for c.Records < s.n {
		_, err = s.cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if err != nil && !errors.As(err, &pe) {
			return Chunk{}, err
		}
		// A row the reader refuses is still one record: the decoder
		// reports it as malformed at the same place.
		err = nil
		next := s.cr.InputOffset()
		if c.Records > 0 && s.over(len(s.header)+int(next-start)) {
			s.pending, s.pendingEnd, cut = true, next, true
			break
		}
		end = next
		c.Records++
	}
	body := s.tape.slice(start, end)
	if c.Records > 0 {
		c.Data = s.buffer(len(s.header) + len(body))
		c.Data = append(c.Data, s.header...)
		c.Data = append(c.Data, body...)
		// The chunk's first body line is line headerLines+1 of the chunk
		// and line s.lines+1 of the input.
		c.FirstOffset = s.lines - headerLines
	}
	s.lines += int64(bytes.Count(body, []byte{'\n'}))
	c.Bytes += end - start
	s.tape.drop(end)
	if err == nil && c.Records < s.n && !cut {
		err = io.EOF
	}
	return c, err
}

func (s *Splitter) nextJSON() (Chunk, error) {
	data, err := io.ReadAll(s.src)
	if err != nil {
		return Chunk{}, err
	}
	if len(bytes.TrimLeft(data, " \t\r\n")) == 0 {
		return Chunk{}, io.EOF
	}
	return Chunk{Data: data, Records: -1, Bytes: int64(len(data))}, io.EOF
}

// tape keeps the bytes a reader delivered until they are dropped, so the
// raw bytes of what encoding/csv read can be cut out by its offsets.
type tape struct {
	r    io.Reader
	buf  []byte
	base int64 // input offset of buf[0]
}

func (t *tape) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	return n, err
}

// slice returns the bytes between two input offsets not yet dropped.
func (t *tape) slice(from, to int64) []byte {
	return t.buf[from-t.base : to-t.base]
}

// drop forgets the bytes before offset upto.
func (t *tape) drop(upto int64) {
	n := copy(t.buf, t.buf[upto-t.base:])
	t.buf = t.buf[:n]
	t.base = upto
}
