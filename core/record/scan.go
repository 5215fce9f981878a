package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"

	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// scanError is a failure at a byte offset of the batch.
type scanError struct {
	off  int
	code recordv1.ErrorCode
	msg  string
}

func (e *scanError) Error() string { return fmt.Sprintf("byte offset %d: %s", e.off, e.msg) }

// scanner is a strict RFC 8259 JSON scanner over data. It never recurses on
// input nesting (only along the schema's declared OBJECT members), so deep
// input is a depth error, never a stack overflow.
type scanner struct {
	data     []byte
	pos      int
	base     int // offset of data[0] in the batch, for messages
	maxDepth int
	stack    []byte // open containers of skip, reused
	arena    *arena
}

func (s *scanner) fail(msg string, args ...any) *scanError {
	return &scanError{off: s.base + s.pos, code: recordv1.ErrorCode_ERROR_CODE_MALFORMED, msg: fmt.Sprintf(msg, args...)}
}

// found describes the byte at the scanner's position for messages.
func (s *scanner) found() string {
	if s.pos >= len(s.data) {
		return "end of input"
	}
	c := s.data[s.pos]
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// escapeText names the escape '\\' e in an error message, which must
// not carry the byte itself when it is not printable ASCII.
func escapeText(e byte) string {
	if e > 0x20 && e < 0x7f {
		return "'\\" + string(rune(e)) + "'"
	}
	return fmt.Sprintf("'\\' followed by byte 0x%02x", e)
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// plain marks string bytes that need no attention: printable ASCII other
// than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Bytes repeated in every lane of a word, for attention.
const (
	lanes1     = 0x0101010101010101
	lanesHigh  = 0x8080808080808080
	lanesQuote = lanes1 * '"'
	lanesSlash = lanes1 * '\\'
	lanesSpace = lanes1 * 0x20
)

// attention marks, in the high bit of its byte, each of the eight string
// bytes in x (little-endian) that is not plain: a quote, a backslash, a
// control character or a byte of a multi-byte UTF-8 sequence. The lowest
// mark is exact; marks above it may be spurious (borrows), so callers use
// only the lowest.
func attention(x uint64) uint64 {
	q, b := x^lanesQuote, x^lanesSlash
	return ((x-lanesSpace)&^x | (q-lanes1)&^q | (b-lanes1)&^b | x) & lanesHigh
}

// str scans a string at the opening quote and returns its unescaped content.
// Content without escapes refers into the input; escaped content is written
// to the arena. With keep false the content is validated but not unescaped.
func (s *scanner) str(keep bool) ([]byte, *scanError) {
	s.pos++ // opening quote
	start := s.pos
	d := s.data
	for s.pos < len(d) {
		// Eight bytes at a time while they are all plain; a chunk that is
		// not stops at its first byte needing attention.
		for s.pos+8 <= len(d) {
			if m := attention(binary.LittleEndian.Uint64(d[s.pos:])); m != 0 {
				s.pos += bits.TrailingZeros64(m) >> 3
				break
			}
			s.pos += 8
		}
		if s.pos >= len(d) {
			break
		}
		c := d[s.pos]
		if plain[c] {
			s.pos++
			continue
		}
		switch {
		case c == '"':
			s.pos++
			return d[start : s.pos-1], nil
		case c == '\\':
			return s.escaped(start, keep)
		case c < 0x20:
			return nil, s.fail("control character 0x%02x in a string; escape it as \\u%04x", c, c)
		default:
			r, n := utf8.DecodeRune(d[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, s.fail("invalid UTF-8 in a string; send UTF-8 text")
			}
			s.pos += n
		}
	}
	return nil, s.fail("unterminated string; expected a closing '\"'")
}

// escaped finishes a string that contains escapes, unescaping into the arena.
func (s *scanner) escaped(start int, keep bool) ([]byte, *scanError) {
	d := s.data
	var out []byte
	if keep {
		// Unescaped text is never longer than its escaped form, so reserving
		// the rest of the string bounds the arena write. Find the end first.
		end := start
		for end < len(d) && d[end] != '"' {
			if d[end] == '\\' {
				end++
			}
			end++
		}
		out = s.arena.reserve(end - start)
		out = append(out, d[start:s.pos]...)
	}
	for s.pos < len(d) {
		c := d[s.pos]
		switch {
		case c == '"':
			s.pos++
			if keep {
				s.arena.commit(len(out))
				out = out[:len(out):len(out)]
			}
			return out, nil
		case c == '\\':
			if s.pos+1 >= len(d) {
				s.pos++
				return nil, s.fail("unterminated escape; expected a character after '\\'")
			}
			e := d[s.pos+1]
			var b byte
			switch e {
			case '"', '\\', '/':
				b = e
			case 'b':
				b = '\b'
			case 'f':
				b = '\f'
			case 'n':
				b = '\n'
			case 'r':
				b = '\r'
			case 't':
				b = '\t'
			case 'u':
				r, err := s.unicodeEscape()
				if err != nil {
					return nil, err
				}
				if keep {
					out = utf8.AppendRune(out, r)
				}
				continue
			default:
				s.pos++
				return nil, s.fail("invalid escape %s; JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", escapeText(e))
			}
			if keep {
				out = append(out, b)
			}
			s.pos += 2
		case c < 0x20:
			return nil, s.fail("control character 0x%02x in a string; escape it as \\u%04x", c, c)
		case c < 0x80:
			if keep {
				out = append(out, c)
			}
			s.pos++
		default:
			r, n := utf8.DecodeRune(d[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, s.fail("invalid UTF-8 in a string; send UTF-8 text")
			}
			if keep {
				out = append(out, d[s.pos:s.pos+n]...)
			}
			s.pos += n
		}
	}
	return nil, s.fail("unterminated string; expected a closing '\"'")
}

// unicodeEscape reads \uXXXX (and its low surrogate partner) at the position.
// Unpaired surrogates are refused: they have no UTF-8 encoding, and replacing
// them would silently change the data.
func (s *scanner) unicodeEscape() (rune, *scanError) {
	r, ok := hex4(s.data, s.pos+2)
	if !ok {
		return 0, s.fail("invalid \\u escape; expected four hex digits")
	}
	at := s.pos
	s.pos += 6
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		s.pos = at
		return 0, s.fail("unpaired low surrogate \\u%04X; a JSON string must encode a complete UTF-16 pair", r)
	case r >= 0xD800 && r <= 0xDBFF:
		lo, ok := rune(0), false
		if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
			lo, ok = hex4(s.data, s.pos+2)
		}
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			s.pos = at
			return 0, s.fail("unpaired high surrogate \\u%04X; a JSON string must encode a complete UTF-16 pair", r)
		}
		s.pos += 6
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), nil
	}
	return r, nil
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// number scans a number per the RFC 8259 grammar into a Value.
func (s *scanner) number() (Value, *scanError) {
	var v Value
	err := s.numberInto(&v)
	return v, err
}

// numberInto scans a number per the RFC 8259 grammar into v, which it
// writes only when the number is well formed: the decoder fills a
// record's slot in place. Integer literals are parsed exactly into int64
// (or flagged when outside it); decimals with at most 15 significant
// digits take the exact fast path, the rest strconv.
func (s *scanner) numberInto(v *Value) *scanError {
	d := s.data
	start := s.pos
	neg := false
	if d[s.pos] == '-' {
		neg = true
		s.pos++
	}
	if s.pos >= len(d) {
		return s.fail("expected a digit after '-'")
	}
	var mant uint64
	digits := 0 // significant digits accumulated in mant
	over := false
	switch c := d[s.pos]; {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			x := uint64(d[s.pos] - '0')
			if mant > (math.MaxUint64-x)/10 {
				over = true
			} else {
				mant = mant*10 + x
			}
			digits++
			s.pos++
		}
	default:
		return s.fail("invalid number: expected a digit, found %s", s.found())
	}
	integer := true
	frac := 0
	if s.pos < len(d) && d[s.pos] == '.' {
		integer = false
		s.pos++
		fs := s.pos
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			if digits < 19 {
				mant = mant*10 + uint64(d[s.pos]-'0')
				if mant != 0 {
					digits++
				}
				frac++
			} else {
				digits++
			}
			s.pos++
		}
		if s.pos == fs {
			return s.fail("invalid number: expected a digit after '.', found %s", s.found())
		}
	}
	exp := false
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		integer, exp = false, true
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		es := s.pos
		for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
			s.pos++
		}
		if s.pos == es {
			return s.fail("invalid number: expected a digit in the exponent, found %s", s.found())
		}
	}
	text := d[start:s.pos]
	*v = Value{kind: KindNumber, b: text}
	if integer {
		switch {
		case !over && !neg && mant <= math.MaxInt64:
			v.flags, v.n = flagInt, mant
			return nil
		case !over && neg && mant <= 1<<63:
			v.flags, v.n = flagInt, -mant
			return nil
		}
	}
	if !over && !exp && digits <= 15 && frac < len(pow10) && mant < 1<<53 {
		f := float64(mant) / pow10[frac]
		if neg {
			f = -f
		}
		v.n = math.Float64bits(f)
		return nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || integer {
		// Out of range (±Inf) or an integer literal beyond int64.
		v.flags = flagOverflow
	}
	v.n = math.Float64bits(f)
	return nil
}

// literal scans true, false or null.
func (s *scanner) literal() (Value, *scanError) {
	d := s.data[s.pos:]
	switch {
	case len(d) >= 4 && string(d[:4]) == "true":
		s.pos += 4
		return Value{kind: KindBool, n: 1}, nil
	case len(d) >= 5 && string(d[:5]) == "false":
		s.pos += 5
		return Value{kind: KindBool}, nil
	case len(d) >= 4 && string(d[:4]) == "null":
		s.pos += 4
		return Value{kind: KindNull}, nil
	}
	return Value{}, s.fail("invalid literal; expected true, false or null")
}

// scalar scans a string, number or literal as a Value.
func (s *scanner) scalar() (Value, *scanError) {
	switch c := s.peek(); {
	case c == '"':
		b, err := s.str(true)
		return Value{kind: KindString, b: b}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't' || c == 'f' || c == 'n':
		return s.literal()
	}
	return Value{}, s.fail("expected a value, found %s", s.found())
}

// skip validates one value of any shape without keeping it and, for an
// array, counts its elements. depth is the nesting of the value's container.
// It uses an explicit stack, so nesting costs no Go stack.
func (s *scanner) skip(depth int) (int, *scanError) {
	c := s.peek()
	if c != '{' && c != '[' {
		switch {
		case c == '"':
			_, err := s.str(false)
			return 0, err
		case c == '-' || (c >= '0' && c <= '9'):
			_, err := s.number()
			return 0, err
		case c == 't' || c == 'f' || c == 'n':
			_, err := s.literal()
			return 0, err
		}
		return 0, s.fail("expected a value, found %s", s.found())
	}
	stack := s.stack[:0]
	defer func() { s.stack = stack[:0] }()
	count := 0
	for {
		// At the start of a value.
		switch c := s.peek(); c {
		case '{', '[':
			if depth+len(stack)+1 > s.maxDepth {
				return 0, &scanError{off: s.base + s.pos, code: recordv1.ErrorCode_ERROR_CODE_MALFORMED,
					msg: fmt.Sprintf("nesting deeper than %d levels; flatten the record or raise the decoder's depth limit", s.maxDepth)}
			}
			stack = append(stack, c)
			s.pos++
			s.ws()
			if c == '{' {
				if s.peek() == '}' {
					s.pos++
					stack = stack[:len(stack)-1]
					break
				}
				if err := s.memberName(); err != nil {
					return 0, err
				}
			} else if s.peek() == ']' {
				s.pos++
				stack = stack[:len(stack)-1]
				break
			}
			continue
		default:
			if _, err := s.skip(depth); err != nil {
				return 0, err
			}
		}
		// After a value: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				return count, nil
			}
			top := stack[len(stack)-1]
			if len(stack) == 1 && top == '[' {
				count++
			}
			s.ws()
			c := s.peek()
			if c == ',' {
				s.pos++
				s.ws()
				if top == '{' {
					if err := s.memberName(); err != nil {
						return 0, err
					}
				}
				break
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				s.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			if top == '{' {
				return 0, s.fail("expected ',' or '}' after an object member, found %s", s.found())
			}
			return 0, s.fail("expected ',' or ']' after an array element, found %s", s.found())
		}
	}
}

// memberName scans `"name" :` and the whitespace after it.
func (s *scanner) memberName() *scanError {
	if s.peek() != '"' {
		return s.fail("expected a member name string, found %s", s.found())
	}
	if _, err := s.str(false); err != nil {
		return err
	}
	s.ws()
	if s.peek() != ':' {
		return s.fail("expected ':' after a member name, found %s", s.found())
	}
	s.pos++
	s.ws()
	return nil
}

// resync finds the end of the object or array starting at start by matching
// brackets outside strings, without validating. A closer that does not match
// the innermost opener closes the openers up to its match, which recovers
// from a missing bracket. It lets a JSON array decoder step over one
// malformed element and keep its neighbours, and returns -1 when the brackets
// never balance.
func resync(d []byte, start int) int {
	var open []byte
	for i := start; i < len(d); i++ {
		switch c := d[i]; c {
		case '"':
			for i++; i < len(d) && d[i] != '"'; i++ {
				if d[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			open = append(open, c)
		case '}', ']':
			want := byte('{')
			if c == ']' {
				want = '['
			}
			for len(open) > 0 && open[len(open)-1] != want {
				open = open[:len(open)-1]
			}
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			if len(open) == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// arena holds unescaped strings for one batch. It grows by whole chunks so
// earlier strings never move.
type arena struct {
	buf []byte
}

const arenaChunk = 32 << 10

// reserve returns an empty slice with capacity n in the current chunk.
func (a *arena) reserve(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(arenaChunk, n))
	}
	return a.buf[len(a.buf):len(a.buf)]
}

// commit marks n reserved bytes as used.
func (a *arena) commit(n int) { a.buf = a.buf[:len(a.buf)+n] }

// skipValid steps over one valid value and reports whether it was valid.
func (s *scanner) skipValid() bool {
	_, err := s.skip(0)
	return err == nil
}
