package idtable

import (
	"unsafe"

	"github.com/seamdata/seam/core/idrule"
)

// batchGroup is how many lookups are in flight at once. On a table much
// larger than the CPU caches each lookup is two memory misses (its slot,
// then its key and value); issuing the loads of a whole group before using
// any of them lets the misses overlap instead of queueing one behind the
// other.
const batchGroup = 16

// TranslateAB translates A ids to B ids; see translate.
func (t *Table) TranslateAB(ids []string, dst []byte, status []idrule.Status, ends []int) []byte {
	dst, _ = t.ab.translate(ids, dst, status, ends)
	return dst
}

// TranslateBA translates B ids to A ids; see translate.
func (t *Table) TranslateBA(ids []string, dst []byte, status []idrule.Status, ends []int) []byte {
	dst, _ = t.ba.translate(ids, dst, status, ends)
	return dst
}

// translate looks up every id of ids, appending each translation to dst
// and recording where it ends in ends[i]; status[i] is Hit, Miss, or
// Invalid when the id is not a canonical id of the side's kind. status and
// ends must be at least len(ids) long. The count it also returns only
// exists so the compiler keeps the early loads; callers behind the
// direction interface drop it.
func (d *dir[K, V]) translate(ids []string, dst []byte, status []idrule.Status, ends []int) ([]byte, int) {
	touched := 0
	var (
		keys [batchGroup]K
		tags [batchGroup]uint32
		at   [batchGroup]int // slot probed next; -1 invalid, -2 absent
		pos  [batchGroup]int // candidate position; -1 none
	)
	for base := 0; base < len(ids); base += batchGroup {
		group := ids[base:min(base+batchGroup, len(ids))]
		// Stage 1: parse, hash and touch each home slot.
		for j, id := range group {
			k, ok := d.from.parse(id)
			if !ok {
				at[j] = -1
				continue
			}
			keys[j] = k
			if len(d.slots) == 0 {
				at[j] = -2
				continue
			}
			h := d.from.hash(k)
			i := d.home(h)
			at[j], tags[j] = i, uint32(h)
			touched += int(d.slots[i] & 1)
		}
		// Stage 2: walk each probe to its first slot with a matching tag
		// (the slots are in cache now) and touch that pair's key and value.
		for j := range group {
			pos[j] = -1
			i := at[j]
			if i < 0 {
				continue
			}
			for {
				s := d.slots[i]
				if s == 0 {
					break
				}
				if uint32(s) == tags[j] {
					p := int(s>>32) - 1
					pos[j], at[j] = p, i
					touched += int(firstByte(&d.keys.v[p]) & firstByte(&d.vals.v[p]) & 1)
					break
				}
				i++
				if i == len(d.slots) {
					i = 0
				}
			}
		}
		// Stage 3: confirm each candidate and format the answers.
		for j := range group {
			i := base + j
			if at[j] == -1 {
				status[i] = idrule.Invalid
				ends[i] = len(dst)
				continue
			}
			p := pos[j]
			if p >= 0 && d.keys.v[p] != keys[j] {
				// Another key with the same 32 hash bits: keep probing.
				next := at[j] + 1
				if next == len(d.slots) {
					next = 0
				}
				p = d.findFrom(next, tags[j], keys[j])
			}
			if p >= 0 {
				dst = d.to.format(dst, d.vals.v[p])
				status[i] = idrule.Hit
			} else {
				status[i] = idrule.Miss
			}
			ends[i] = len(dst)
		}
	}
	return dst, touched
}

// firstByte reads the first byte of *v, so a load of any element type can
// be issued early and kept by the compiler.
func firstByte[T any](v *T) byte { return *(*byte)(unsafe.Pointer(v)) }
