// Package idtable is idmap's in-memory lookup table: an immutable,
// one-to-one map between the ids of two formats, compact enough to hold tens
// of millions of pairs and fast enough to serve translation batches.
//
// Ids are stored in their typed form (int64, [16]byte UUID, or a string for
// STRING formats) in two open-addressing hash tables, one per direction, so
// a uuid↔int pair costs about 70 bytes for both directions and a lookup
// touches one or two cache lines instead of chasing string pointers.
package idtable

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"github.com/seamdata/seam/core/idrule"
)

// Kind is the value type of one side of a table.
type Kind uint8

const (
	// Int ids are canonical decimal int64.
	Int Kind = iota + 1
	// UUID ids are canonical lowercase UUIDs.
	UUID
	// String ids are any non-empty string.
	String
)

// ErrDuplicate is returned by Builder.Add when an id is already in the table
// on its side: the caller checks one-to-one before building.
var ErrDuplicate = errors.New("idtable: id already present")

// maxLoad keeps linear probes short: about 2 slots for a hit.
const maxLoad = 0.7

// Table is an immutable one-to-one table between side A and side B.
// Its methods are safe for concurrent use.
type Table struct {
	kindA, kindB Kind
	ab, ba       direction
}

// direction answers lookups from one side's ids to the other's.
type direction interface {
	// appendLookup parses id, looks it up and appends the translation to
	// dst. ok is false when id does not parse or is absent.
	appendLookup(dst []byte, id string) (_ []byte, ok bool)
	has(id string) bool
	len() int
	// each calls fn with every key and value, formatted, until fn is false.
	each(fn func(key, val string) bool)
	put(key, val string) error
	bytes() int
	mappedBytes() int
	translate(ids []string, dst []byte, status []idrule.Status, ends []int) ([]byte, int)
}

// Builder fills a new Table.
type Builder struct {
	t Table
}

// NewBuilder starts a table of at most capacity pairs between ids of kind a
// and kind b. Adding more than capacity pairs is an error, because the hash
// tables are sized once.
func NewBuilder(a, b Kind, capacity int) (*Builder, error) {
	ab, err := newDirection(a, b, capacity)
	if err != nil {
		return nil, err
	}
	ba, err := newDirection(b, a, capacity)
	if err != nil {
		return nil, err
	}
	return &Builder{t: Table{kindA: a, kindB: b, ab: ab, ba: ba}}, nil
}

// Add adds the pair (a, b). Ids must be canonical for their kind; an id
// already present on its side is ErrDuplicate.
func (b *Builder) Add(a, bID string) error {
	if err := b.t.ab.put(a, bID); err != nil {
		return fmt.Errorf("side A id %q: %w", a, err)
	}
	if err := b.t.ba.put(bID, a); err != nil {
		return fmt.Errorf("side B id %q: %w", bID, err)
	}
	return nil
}

// Build returns the finished table; the builder must not be used afterwards.
func (b *Builder) Build() *Table {
	t := b.t
	return &t
}

// Empty returns a table with no pairs.
func Empty(a, b Kind) *Table {
	builder, err := NewBuilder(a, b, 0)
	if err != nil {
		// Only unknown kinds fail, and callers pass constants.
		return &Table{kindA: a, kindB: b}
	}
	return builder.Build()
}

// Len returns the number of pairs.
func (t *Table) Len() int {
	if t.ab == nil {
		return 0
	}
	return t.ab.len()
}

// Kinds returns the kinds of side A and side B.
func (t *Table) Kinds() (a, b Kind) { return t.kindA, t.kindB }

// AppendAB appends the B id paired with A id a to dst.
func (t *Table) AppendAB(dst []byte, a string) ([]byte, bool) { return t.ab.appendLookup(dst, a) }

// AppendBA appends the A id paired with B id b to dst.
func (t *Table) AppendBA(dst []byte, b string) ([]byte, bool) { return t.ba.appendLookup(dst, b) }

// LookupAB returns the B id paired with a.
func (t *Table) LookupAB(a string) (string, bool) {
	out, ok := t.ab.appendLookup(nil, a)
	return string(out), ok
}

// LookupBA returns the A id paired with b.
func (t *Table) LookupBA(b string) (string, bool) {
	out, ok := t.ba.appendLookup(nil, b)
	return string(out), ok
}

// HasA reports whether a is on side A.
func (t *Table) HasA(a string) bool { return t.ab.has(a) }

// HasB reports whether b is on side B.
func (t *Table) HasB(b string) bool { return t.ba.has(b) }

// MappedBytes is the part of Bytes held outside the Go heap, which
// runtime.MemStats does not see.
func (t *Table) MappedBytes() int { return t.ab.mappedBytes() + t.ba.mappedBytes() }

// Range calls fn for every pair until fn returns false.
func (t *Table) Range(fn func(a, b string) bool) { t.ab.each(fn) }

// Bytes estimates the table's resident size.
func (t *Table) Bytes() int { return t.ab.bytes() + t.ba.bytes() }

func newDirection(from, to Kind, capacity int) (direction, error) {
	switch from {
	case Int:
		return newDirFrom[int64](to, capacity, parseInt, hashInt(), appendInt)
	case UUID:
		return newDirFrom[[16]byte](to, capacity, idrule.ParseUUID, hashUUID(), idrule.AppendUUID)
	case String:
		return newDirFrom[string](to, capacity, parseString, hashString(), appendString)
	default:
		return nil, fmt.Errorf("idtable: unknown kind %d", from)
	}
}

func newDirFrom[K comparable](to Kind, capacity int, parse func(string) (K, bool), hash func(K) uint64, fmtKey func([]byte, K) []byte) (direction, error) {
	switch to {
	case Int:
		return newDir(capacity, parse, hash, fmtKey, parseInt, appendInt), nil
	case UUID:
		return newDir(capacity, parse, hash, fmtKey, idrule.ParseUUID, idrule.AppendUUID), nil
	case String:
		return newDir(capacity, parse, hash, fmtKey, parseString, appendString), nil
	default:
		return nil, fmt.Errorf("idtable: unknown kind %d", to)
	}
}

func parseInt(s string) (int64, bool) { return idrule.ParseInt(s) }

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

func parseString(s string) (string, bool) { return s, s != "" }

func appendString(dst []byte, v string) []byte { return append(dst, v...) }

// hashUUID mixes both halves: UUIDs with an embedded integer share their
// high half, so the low half alone would not spread them.
func hashUUID() func([16]byte) uint64 {
	s0, s1 := rand.Uint64()|1, rand.Uint64()|1
	return func(k [16]byte) uint64 {
		lo := uint64(k[0]) | uint64(k[1])<<8 | uint64(k[2])<<16 | uint64(k[3])<<24 |
			uint64(k[4])<<32 | uint64(k[5])<<40 | uint64(k[6])<<48 | uint64(k[7])<<56
		hi := uint64(k[8]) | uint64(k[9])<<8 | uint64(k[10])<<16 | uint64(k[11])<<24 |
			uint64(k[12])<<32 | uint64(k[13])<<40 | uint64(k[14])<<48 | uint64(k[15])<<56
		h, l := bits.Mul64(lo^s0, hi^s1)
		return h ^ l
	}
}

func hashInt() func(int64) uint64 {
	s0, s1 := rand.Uint64()|1, rand.Uint64()|1
	return func(k int64) uint64 {
		h, l := bits.Mul64(uint64(k)^s0, s1)
		return h ^ l
	}
}

func hashString() func(string) uint64 {
	seed := maphash.MakeSeed()
	return func(k string) uint64 { return maphash.String(seed, k) }
}

// slot holds one key and its value inline, so a hit reads one cache line.
type slot[K comparable, V comparable] struct {
	key K
	val V
}

// dir is an open-addressing (linear probing) hash table. The zero key marks
// an empty slot; a real zero key (id 0, the nil UUID) is kept beside the table.
type dir[K comparable, V comparable] struct {
	slots   []slot[K, V]
	n       int
	hasZero bool
	zeroVal V
	// mapped is the size of slots when they live outside the Go heap.
	mapped int

	parse    func(string) (K, bool)
	hash     func(K) uint64
	fmtKey   func([]byte, K) []byte
	parseVal func(string) (V, bool)
	fmtVal   func([]byte, V) []byte
}

func newDir[K comparable, V comparable](capacity int, parse func(string) (K, bool), hash func(K) uint64, fmtKey func([]byte, K) []byte,
	parseVal func(string) (V, bool), fmtVal func([]byte, V) []byte) *dir[K, V] {
	size := int(float64(capacity)/maxLoad) + 1
	d := &dir[K, V]{parse: parse, hash: hash, fmtKey: fmtKey, parseVal: parseVal, fmtVal: fmtVal}
	d.slots = allocSlots(d, size)
	return d
}

// home maps a hash onto [0, len(slots)) without a power-of-two size, so
// memory follows the pair count instead of doubling at each boundary.
func (d *dir[K, V]) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(d.slots)))
	return int(hi)
}

func (d *dir[K, V]) find(k K) (V, bool) {
	var zero K
	if k == zero {
		return d.zeroVal, d.hasZero
	}
	if len(d.slots) == 0 {
		var none V
		return none, false
	}
	i := d.home(d.hash(k))
	for {
		s := &d.slots[i]
		if s.key == k {
			return s.val, true
		}
		if s.key == zero {
			var none V
			return none, false
		}
		i++
		if i == len(d.slots) {
			i = 0
		}
	}
}

func (d *dir[K, V]) appendLookup(dst []byte, id string) ([]byte, bool) {
	k, ok := d.parse(id)
	if !ok {
		return dst, false
	}
	v, ok := d.find(k)
	if !ok {
		return dst, false
	}
	return d.fmtVal(dst, v), true
}

func (d *dir[K, V]) has(id string) bool {
	k, ok := d.parse(id)
	if !ok {
		return false
	}
	_, ok = d.find(k)
	return ok
}

func (d *dir[K, V]) len() int { return d.n }

func (d *dir[K, V]) put(key, val string) error {
	k, ok := d.parse(key)
	if !ok {
		return fmt.Errorf("idtable: not a canonical id of its kind")
	}
	v, ok := d.parseVal(val)
	if !ok {
		return fmt.Errorf("idtable: paired id %q is not a canonical id of its kind", val)
	}
	var zero K
	if k == zero {
		if d.hasZero {
			return ErrDuplicate
		}
		d.hasZero, d.zeroVal = true, v
		d.n++
		return nil
	}
	if float64(d.n+1) > float64(len(d.slots))*maxLoad+1 {
		return fmt.Errorf("idtable: more pairs than the capacity the builder was given (%d slots)", len(d.slots))
	}
	i := d.home(d.hash(k))
	for {
		s := &d.slots[i]
		if s.key == zero {
			s.key, s.val = k, v
			d.n++
			return nil
		}
		if s.key == k {
			return ErrDuplicate
		}
		i++
		if i == len(d.slots) {
			i = 0
		}
	}
}

func (d *dir[K, V]) each(fn func(key, val string) bool) {
	var kb, vb []byte
	if d.hasZero {
		var zero K
		if !fn(string(d.fmtKey(kb[:0], zero)), string(d.fmtVal(vb[:0], d.zeroVal))) {
			return
		}
	}
	var zero K
	for i := range d.slots {
		s := &d.slots[i]
		if s.key == zero {
			continue
		}
		kb, vb = d.fmtKey(kb[:0], s.key), d.fmtVal(vb[:0], s.val)
		if !fn(string(kb), string(vb)) {
			return
		}
	}
}

func (d *dir[K, V]) bytes() int {
	var s slot[K, V]
	return len(d.slots) * int(sizeOf(s))
}

func (d *dir[K, V]) mappedBytes() int { return d.mapped }
