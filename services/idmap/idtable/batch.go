package idtable

import "github.com/seamdata/seam/core/idrule"

// batchGroup is how many lookups are in flight at once. On a table much
// larger than the CPU caches each lookup is one memory miss; issuing the
// loads of a whole group before using any of them lets the misses overlap
// instead of queueing one behind the other.
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
// exists so the compiler keeps the early loads of home slots; callers
// behind the direction interface drop it.
func (d *dir[K, V]) translate(ids []string, dst []byte, status []idrule.Status, ends []int) ([]byte, int) {
	touched := 0
	var (
		keys  [batchGroup]K
		homes [batchGroup]int
	)
	var zero K
	for base := 0; base < len(ids); base += batchGroup {
		group := ids[base:min(base+batchGroup, len(ids))]
		empty := 0
		for j, id := range group {
			k, ok := d.parse(id)
			if !ok {
				status[base+j] = idrule.Invalid
				homes[j] = -1
				continue
			}
			keys[j] = k
			if k == zero || len(d.slots) == 0 {
				homes[j] = -2
				continue
			}
			h := d.home(d.hash(k))
			homes[j] = h
			// Touch the home slot now; the answer is used below only to keep
			// the load from being optimised away.
			if d.slots[h].key == zero {
				empty++
			}
		}
		touched += empty
		for j := range group {
			i := base + j
			if homes[j] == -1 {
				ends[i] = len(dst)
				continue
			}
			v, ok := d.find(keys[j])
			if ok {
				dst = d.fmtVal(dst, v)
				status[i] = idrule.Hit
			} else {
				status[i] = idrule.Miss
			}
			ends[i] = len(dst)
		}
	}
	return dst, touched
}
