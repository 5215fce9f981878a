package idtable

import "hash/maphash"

// overlay is a persistent (immutable, path-copying) hash trie from an id
// to its override: a new partner, or a tombstone. Putting one id copies
// the few nodes on its path, about log16 of the overlay's size, so a
// snapshot that readers hold is never changed and a change of k ids costs
// O(k log n) for an overlay of n ids, which compaction keeps small.
type overlay struct {
	root *onode
	n    int
	seed maphash.Seed
}

type onode struct {
	kids *[16]*onode // nil for a leaf
	ents []oent      // a leaf's entries: one, or several whose hashes are equal
}

// oent is one override; del marks a tombstone (the id has no pair).
type oent struct {
	h        uint64
	key, val string
	del      bool
}

func newOverlay() overlay { return overlay{seed: maphash.MakeSeed()} }

func (o *overlay) get(key string) (oent, bool) {
	if o.n == 0 {
		return oent{}, false
	}
	h := maphash.String(o.seed, key)
	n := o.root
	for shift := 0; n != nil; shift += 4 {
		if n.kids == nil {
			for _, e := range n.ents {
				if e.h == h && e.key == key {
					return e, true
				}
			}
			return oent{}, false
		}
		n = n.kids[(h>>shift)&15]
	}
	return oent{}, false
}

// with returns o with key set to val (or a tombstone when del).
func (o overlay) with(key, val string, del bool) overlay {
	e := oent{h: maphash.String(o.seed, key), key: key, val: val, del: del}
	root, added := put(o.root, 0, e)
	o.root = root
	if added {
		o.n++
	}
	return o
}

func put(n *onode, shift uint, e oent) (*onode, bool) {
	if n == nil {
		return &onode{ents: []oent{e}}, true
	}
	if n.kids == nil {
		for i, old := range n.ents {
			if old.h == e.h && old.key == e.key {
				ents := append([]oent(nil), n.ents...)
				ents[i] = e
				return &onode{ents: ents}, false
			}
		}
		if shift >= 64 || n.ents[0].h == e.h {
			// Equal hashes share a leaf: no bits are left to tell them apart.
			return &onode{ents: append(append([]oent(nil), n.ents...), e)}, true
		}
		// Split the leaf: its entries and e go one level down.
		split := &onode{kids: &[16]*onode{}}
		for _, old := range n.ents {
			split.kids[(old.h>>shift)&15], _ = put(split.kids[(old.h>>shift)&15], shift+4, old)
		}
		n = split
	}
	kids := *n.kids
	var added bool
	kids[(e.h>>shift)&15], added = put(kids[(e.h>>shift)&15], shift+4, e)
	return &onode{kids: &kids}, added
}

// each calls fn for every entry until fn returns false.
func (o *overlay) each(fn func(e oent) bool) {
	var walk func(n *onode) bool
	walk = func(n *onode) bool {
		if n == nil {
			return true
		}
		if n.kids == nil {
			for _, e := range n.ents {
				if !fn(e) {
					return false
				}
			}
			return true
		}
		for _, k := range n.kids {
			if !walk(k) {
				return false
			}
		}
		return true
	}
	walk(o.root)
}
