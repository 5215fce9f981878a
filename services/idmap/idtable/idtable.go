// Package idtable is idmap's in-memory lookup table: an immutable,
// one-to-one map between the ids of two formats, compact enough to hold tens
// of millions of pairs and fast enough to serve translation batches, and
// Index, which layers small changes over it so that changing k pairs costs
// O(k) instead of a rebuild.
//
// Ids are stored once, in their typed form (int64, [16]byte UUID, or a
// string for STRING formats), in two parallel arrays; each direction is an
// open-addressing hash table of 8-byte slots holding a pair's position and
// 32 bits of its key's hash. A uuid↔int pair costs 24 bytes of ids and about
// 21 bytes of slots for both directions, and a lookup reads one slot, then
// the key and the value it points at; the slot's hash bits make a probe
// past a foreign key almost never touch that key.
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

// ErrFull is returned by Builder.Add past the capacity the builder was given.
var ErrFull = errors.New("idtable: more pairs than the builder's capacity")

// maxLoad keeps linear probes short (about 2.5 slots for a hit, which
// share a cache line) while slots cost 8/0.75 bytes per pair and direction.
const maxLoad = 0.75

// maxPairs is what a slot's 32-bit position can address.
const maxPairs = 1<<32 - 2

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
	// put appends the pair (key, val) to the shared arrays and indexes it
	// on this side; the other side's direction then only indexes it.
	put(key, val string) error
	index() error
	bytes() int
	mappedBytes() int
	translate(ids []string, dst []byte, status []idrule.Status, ends []int) ([]byte, int)
}

// Builder fills a new Table.
type Builder struct {
	t Table
}

// NewBuilder starts a table of at most capacity pairs between ids of kind a
// and kind b. Adding more than capacity pairs is an error, because the
// arrays and hash tables are sized once.
func NewBuilder(a, b Kind, capacity int) (*Builder, error) {
	if capacity < 0 || capacity > maxPairs {
		return nil, fmt.Errorf("idtable: capacity %d is outside 0..%d", capacity, maxPairs)
	}
	ab, ba, err := newDirections(a, b, capacity)
	if err != nil {
		return nil, err
	}
	return &Builder{t: Table{kindA: a, kindB: b, ab: ab, ba: ba}}, nil
}

// Add adds the pair (a, b). Ids must be canonical for their kind; an id
// already present on its side is ErrDuplicate, and the table is unchanged.
func (b *Builder) Add(a, bID string) error {
	if b.t.ba.has(bID) {
		return fmt.Errorf("side B id %q: %w", bID, ErrDuplicate)
	}
	if err := b.t.ab.put(a, bID); err != nil {
		return fmt.Errorf("side A id %q: %w", a, err)
	}
	// The pair is stored; the B side indexes the position put used.
	if err := b.t.ba.index(); err != nil {
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

// Bytes estimates the table's resident size: ids once, slots per side.
func (t *Table) Bytes() int { return t.ab.bytes() + t.ba.bytes() }

func newDirections(a, b Kind, capacity int) (ab, ba direction, err error) {
	switch a {
	case Int:
		return newDirsFrom(b, capacity, side[int64]{parseInt, hashInt(), appendInt})
	case UUID:
		return newDirsFrom(b, capacity, side[[16]byte]{idrule.ParseUUID, hashUUID(), idrule.AppendUUID})
	case String:
		return newDirsFrom(b, capacity, side[string]{parseString, hashString(), appendString})
	default:
		return nil, nil, fmt.Errorf("idtable: unknown kind %d", a)
	}
}

func newDirsFrom[A comparable](b Kind, capacity int, sa side[A]) (ab, ba direction, err error) {
	switch b {
	case Int:
		ab, ba = newPair(capacity, sa, side[int64]{parseInt, hashInt(), appendInt})
	case UUID:
		ab, ba = newPair(capacity, sa, side[[16]byte]{idrule.ParseUUID, hashUUID(), idrule.AppendUUID})
	case String:
		ab, ba = newPair(capacity, sa, side[string]{parseString, hashString(), appendString})
	default:
		return nil, nil, fmt.Errorf("idtable: unknown kind %d", b)
	}
	return ab, ba, nil
}

// side is how one kind of id is parsed, hashed and formatted.
type side[K comparable] struct {
	parse  func(string) (K, bool)
	hash   func(K) uint64
	format func([]byte, K) []byte
}

// ids is one side's array of ids, shared by both directions: position i
// of side A and position i of side B are one pair.
type ids[K comparable] struct {
	v []K
	n int
}

// newPair allocates the shared id arrays and the two directions over them.
func newPair[A, B comparable](capacity int, sa side[A], sb side[B]) (*dir[A, B], *dir[B, A]) {
	size := int(float64(capacity)/maxLoad) + 1
	if capacity == 0 {
		size = 0
	}
	as, bs := &ids[A]{}, &ids[B]{}
	ab := &dir[A, B]{keys: as, vals: bs, from: sa, to: sb}
	ba := &dir[B, A]{keys: bs, vals: as, from: sb, to: sa}
	// Each direction counts the ids of its own side as mapped.
	as.v = allocArray[A](as, &ab.mapped, capacity)
	bs.v = allocArray[B](bs, &ba.mapped, capacity)
	ab.slots = allocArray[uint64](ab, &ab.mapped, size)
	ba.slots = allocArray[uint64](ba, &ba.mapped, size)
	return ab, ba
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

// dir is one direction: an open-addressing (linear probing) hash table of
// slots over the keys of one side. A slot is 0 when empty, else the pair's
// position plus one in its high 32 bits and the key hash's low 32 bits.
type dir[K, V comparable] struct {
	keys  *ids[K]
	vals  *ids[V]
	slots []uint64
	// mapped is the size of the arrays this direction allocated outside
	// the Go heap.
	mapped int

	from side[K]
	to   side[V]
}

// home maps a hash onto [0, len(slots)) without a power-of-two size, so
// memory follows the pair count instead of doubling at each boundary.
func (d *dir[K, V]) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(d.slots)))
	return int(hi)
}

// findFrom probes from slot i for k with hash tag; it returns k's
// position, or -1.
func (d *dir[K, V]) findFrom(i int, tag uint32, k K) int {
	for {
		s := d.slots[i]
		if s == 0 {
			return -1
		}
		if uint32(s) == tag {
			if p := int(s>>32) - 1; d.keys.v[p] == k {
				return p
			}
		}
		i++
		if i == len(d.slots) {
			i = 0
		}
	}
}

func (d *dir[K, V]) find(k K) int {
	if len(d.slots) == 0 {
		return -1
	}
	h := d.from.hash(k)
	return d.findFrom(d.home(h), uint32(h), k)
}

func (d *dir[K, V]) appendLookup(dst []byte, id string) ([]byte, bool) {
	k, ok := d.from.parse(id)
	if !ok {
		return dst, false
	}
	p := d.find(k)
	if p < 0 {
		return dst, false
	}
	return d.to.format(dst, d.vals.v[p]), true
}

func (d *dir[K, V]) has(id string) bool {
	k, ok := d.from.parse(id)
	return ok && d.find(k) >= 0
}

func (d *dir[K, V]) len() int { return d.keys.n }

func (d *dir[K, V]) put(key, val string) error {
	k, ok := d.from.parse(key)
	if !ok {
		return fmt.Errorf("idtable: not a canonical id of its kind")
	}
	v, ok := d.to.parse(val)
	if !ok {
		return fmt.Errorf("idtable: paired id %q is not a canonical id of its kind", val)
	}
	if d.keys.n == len(d.keys.v) {
		return fmt.Errorf("%w (%d)", ErrFull, len(d.keys.v))
	}
	if d.find(k) >= 0 {
		return ErrDuplicate
	}
	p := d.keys.n
	d.keys.v[p], d.vals.v[p] = k, v
	d.keys.n++
	d.vals.n++
	return d.slot(k, p)
}

// index adds the newest pair's key to this direction's slots.
func (d *dir[K, V]) index() error {
	p := d.keys.n - 1
	return d.slot(d.keys.v[p], p)
}

func (d *dir[K, V]) slot(k K, p int) error {
	h := d.from.hash(k)
	i := d.home(h)
	for d.slots[i] != 0 {
		i++
		if i == len(d.slots) {
			i = 0
		}
	}
	d.slots[i] = uint64(p+1)<<32 | uint64(uint32(h))
	return nil
}

func (d *dir[K, V]) each(fn func(key, val string) bool) {
	var kb, vb []byte
	for p := range d.keys.n {
		kb, vb = d.from.format(kb[:0], d.keys.v[p]), d.to.format(vb[:0], d.vals.v[p])
		if !fn(string(kb), string(vb)) {
			return
		}
	}
}

// bytes counts this direction's slots and its own side's ids.
func (d *dir[K, V]) bytes() int {
	var k K
	return len(d.slots)*8 + len(d.keys.v)*int(sizeOf(k))
}

func (d *dir[K, V]) mappedBytes() int { return d.mapped }
