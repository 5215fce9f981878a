package idtable

import (
	"fmt"

	"github.com/seamdata/seam/core/idrule"
)

// Index is an immutable one-to-one table made of a compact Table (the
// base) and an overlay of the pairs changed since the base was built.
// Apply returns a new Index in time proportional to the change, not to the
// table; Compact folds the overlay into a new base, which Rebase swaps in.
// Its methods are safe for concurrent use.
type Index struct {
	base *Table
	// ab and ba override the base by A id and by B id: a partner, or a
	// tombstone for an id whose pair was deleted.
	ab, ba overlay
	n      int
	// log holds the changes applied since base, newest last; an Index
	// derived by Apply links to its parent's log, which Rebase walks.
	log *opLog
}

// opLog is one Apply's operations, linked to the log of the Index it was
// applied to. Being immutable, two Indexes applied to one parent never
// see each other's operations.
type opLog struct {
	prev *opLog
	ops  []Op
	n    int // operations in this log and every one before it
}

// Op is one applied change: a pair deleted (by its A id) or inserted.
type Op struct {
	Delete bool
	A, B   string
}

// NewIndex returns an Index of base with an empty overlay.
func NewIndex(base *Table) *Index {
	return &Index{base: base, ab: newOverlay(), ba: newOverlay(), n: base.Len()}
}

// Base returns the compact table under the overlay.
func (x *Index) Base() *Table { return x.base }

// Len returns the number of pairs.
func (x *Index) Len() int { return x.n }

// Kinds returns the kinds of side A and side B.
func (x *Index) Kinds() (a, b Kind) { return x.base.Kinds() }

// Overlay returns how many ids (both sides counted) the overlay holds.
func (x *Index) Overlay() int { return x.ab.n + x.ba.n }

// Changes returns how many operations were applied since the base.
func (x *Index) Changes() int {
	if x.log == nil {
		return 0
	}
	return x.log.n
}

// LookupAB returns the B id paired with a.
func (x *Index) LookupAB(a string) (string, bool) {
	if e, ok := x.ab.get(a); ok {
		return e.val, !e.del
	}
	return x.base.LookupAB(a)
}

// LookupBA returns the A id paired with b.
func (x *Index) LookupBA(b string) (string, bool) {
	if e, ok := x.ba.get(b); ok {
		return e.val, !e.del
	}
	return x.base.LookupBA(b)
}

// HasA reports whether a is on side A.
func (x *Index) HasA(a string) bool {
	if e, ok := x.ab.get(a); ok {
		return !e.del
	}
	return x.base.HasA(a)
}

// HasB reports whether b is on side B.
func (x *Index) HasB(b string) bool {
	if e, ok := x.ba.get(b); ok {
		return !e.del
	}
	return x.base.HasB(b)
}

// Range calls fn for every pair until fn returns false: the base's pairs
// the overlay leaves alone, then the overlay's.
func (x *Index) Range(fn func(a, b string) bool) {
	more := true
	x.base.Range(func(a, b string) bool {
		if x.ab.n > 0 {
			if _, ok := x.ab.get(a); ok {
				return true
			}
		}
		more = fn(a, b)
		return more
	})
	if !more {
		return
	}
	x.ab.each(func(e oent) bool {
		if e.del {
			return true
		}
		return fn(e.key, e.val)
	})
}

// TranslateAB translates A ids to B ids, as Table.TranslateAB.
func (x *Index) TranslateAB(ids []string, dst []byte, status []idrule.Status, ends []int) []byte {
	if x.ab.n == 0 {
		return x.base.TranslateAB(ids, dst, status, ends)
	}
	return x.translate(&x.ab, x.base.TranslateAB, ids, dst, status, ends)
}

// TranslateBA translates B ids to A ids, as Table.TranslateBA.
func (x *Index) TranslateBA(ids []string, dst []byte, status []idrule.Status, ends []int) []byte {
	if x.ba.n == 0 {
		return x.base.TranslateBA(ids, dst, status, ends)
	}
	return x.translate(&x.ba, x.base.TranslateBA, ids, dst, status, ends)
}

// translate answers from the base in one batch, then lets the overlay
// override: an id it holds is a hit on its new partner or a miss.
func (x *Index) translate(o *overlay, base func([]string, []byte, []idrule.Status, []int) []byte,
	ids []string, dst []byte, status []idrule.Status, ends []int) []byte {
	scratch := base(ids, make([]byte, 0, len(ids)*20), status, ends)
	start := 0
	for i, id := range ids {
		end := ends[i]
		if status[i] != idrule.Invalid {
			if e, ok := o.get(id); ok {
				if e.del {
					status[i] = idrule.Miss
				} else {
					status[i] = idrule.Hit
					dst = append(dst, e.val...)
				}
				ends[i], start = len(dst), end
				continue
			}
		}
		dst = append(dst, scratch[start:end]...)
		ends[i], start = len(dst), end
	}
	return dst
}

// Apply returns x with the pairs of deleteA (by A id) removed and then the
// pairs of insert (A, B) added. An A id that is absent is skipped; an
// inserted id already paired on its side is ErrDuplicate: the caller
// checks one-to-one first. Ids must be canonical for their kinds.
func (x *Index) Apply(deleteA []string, insert [][2]string) (*Index, error) {
	next := *x
	var ops []Op
	for _, a := range deleteA {
		b, ok := next.LookupAB(a)
		if !ok {
			continue
		}
		next.ab = next.ab.with(a, "", true)
		next.ba = next.ba.with(b, "", true)
		next.n--
		ops = append(ops, Op{Delete: true, A: a, B: b})
	}
	ka, kb := x.base.Kinds()
	for _, p := range insert {
		if err := checkID(ka, p[0]); err != nil {
			return nil, fmt.Errorf("side A id %q: %w", p[0], err)
		}
		if err := checkID(kb, p[1]); err != nil {
			return nil, fmt.Errorf("side B id %q: %w", p[1], err)
		}
		if next.HasA(p[0]) {
			return nil, fmt.Errorf("side A id %q: %w", p[0], ErrDuplicate)
		}
		if next.HasB(p[1]) {
			return nil, fmt.Errorf("side B id %q: %w", p[1], ErrDuplicate)
		}
		next.ab = next.ab.with(p[0], p[1], false)
		next.ba = next.ba.with(p[1], p[0], false)
		next.n++
		ops = append(ops, Op{A: p[0], B: p[1]})
	}
	if len(ops) > 0 {
		next.log = &opLog{prev: x.log, ops: ops, n: x.Changes() + len(ops)}
	}
	return &next, nil
}

func checkID(k Kind, id string) error {
	var ok bool
	switch k {
	case Int:
		_, ok = parseInt(id)
	case UUID:
		_, ok = idrule.ParseUUID(id)
	default:
		ok = id != ""
	}
	if !ok {
		return fmt.Errorf("idtable: not a canonical id of its kind")
	}
	return nil
}

// Compact builds a new compact table of every pair of x. It reads only
// immutable data, so it runs without any lock while x keeps serving.
func (x *Index) Compact() (*Table, error) {
	ka, kb := x.base.Kinds()
	b, err := NewBuilder(ka, kb, x.n)
	if err != nil {
		return nil, err
	}
	var addErr error
	x.Range(func(a, bID string) bool {
		addErr = b.Add(a, bID)
		return addErr == nil
	})
	if addErr != nil {
		return nil, fmt.Errorf("idtable: compact: %w", addErr)
	}
	return b.Build(), nil
}

// Rebase returns x over base, a compaction of since, which x must derive
// from by Apply: the operations applied after since are applied again on
// base, so only they stay in the overlay.
func (x *Index) Rebase(base *Table, since *Index) (*Index, error) {
	if x.base != since.base {
		return nil, fmt.Errorf("idtable: rebase: the index does not derive from the compacted one")
	}
	var later []*opLog
	for l := x.log; l != since.log; l = l.prev {
		if l == nil {
			return nil, fmt.Errorf("idtable: rebase: the index does not derive from the compacted one")
		}
		later = append(later, l)
	}
	next := NewIndex(base)
	for i := len(later) - 1; i >= 0; i-- {
		// One Apply's operations are its deletions, then its insertions.
		var deleteA []string
		var insert [][2]string
		for _, op := range later[i].ops {
			if op.Delete {
				deleteA = append(deleteA, op.A)
			} else {
				insert = append(insert, [2]string{op.A, op.B})
			}
		}
		var err error
		if next, err = next.Apply(deleteA, insert); err != nil {
			return nil, fmt.Errorf("idtable: rebase: %w", err)
		}
	}
	return next, nil
}
