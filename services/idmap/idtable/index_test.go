package idtable_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/services/idmap/idtable"
)

// TestIndexMatchesModel applies random deletes, re-pairings and inserts to
// an Index, compacting and rebasing now and then, and checks every answer
// against a pair of Go maps after each step.
func TestIndexMatchesModel(t *testing.T) {
	t.Parallel()
	const n = 2000
	uuids, ints := randomPairs(n, 21)
	ab, ba := map[string]string{}, map[string]string{}
	for i := range n / 2 {
		ab[uuids[i]], ba[ints[i]] = ints[i], uuids[i]
	}
	x := idtable.NewIndex(buildTable(t, idtable.UUID, idtable.Int, uuids[:n/2], ints[:n/2]))
	var err error
	r := rand.New(rand.NewPCG(5, 5))
	nextInt := n + 1
	var since *idtable.Index
	var compacted *idtable.Table
	for step := range 3000 {
		var del []string
		var ins [][2]string
		switch r.IntN(3) {
		case 0: // delete an existing or absent pair
			a := uuids[r.IntN(n)]
			del = []string{a}
			if old, ok := ab[a]; ok {
				delete(ab, a)
				delete(ba, old)
			}
		case 1: // re-pair an A id with a fresh B id
			a := uuids[r.IntN(n)]
			if old, ok := ab[a]; ok {
				del = []string{a}
				delete(ba, old)
			}
			bID := strconv.Itoa(nextInt)
			nextInt++
			ins = [][2]string{{a, bID}}
			ab[a], ba[bID] = bID, a
		default: // insert a pair of an absent A id
			a := uuids[r.IntN(n)]
			if _, ok := ab[a]; ok {
				break
			}
			bID := strconv.Itoa(nextInt)
			nextInt++
			ins = [][2]string{{a, bID}}
			ab[a], ba[bID] = bID, a
		}
		if x, err = x.Apply(del, ins); err != nil {
			t.Fatalf("step %d: Apply: %v", step, err)
		}
		switch {
		case step%500 == 100:
			since = x
			if compacted, err = x.Compact(); err != nil {
				t.Fatal(err)
			}
		case step%500 == 150:
			if x, err = x.Rebase(compacted, since); err != nil {
				t.Fatalf("step %d: Rebase: %v", step, err)
			}
		}
		if step%97 == 0 || step == 2999 {
			checkModel(t, step, x, ab, ba, uuids)
		}
	}
}

func checkModel(t *testing.T, step int, x *idtable.Index, ab, ba map[string]string, uuids []string) {
	t.Helper()
	if x.Len() != len(ab) {
		t.Fatalf("step %d: Len = %d, want %d", step, x.Len(), len(ab))
	}
	status := make([]idrule.Status, len(uuids))
	ends := make([]int, len(uuids))
	buf := x.TranslateAB(uuids, nil, status, ends)
	start := 0
	for i, a := range uuids {
		got := buf[start:ends[i]]
		start = ends[i]
		want, ok := ab[a]
		if ok != (status[i] == idrule.Hit) || string(got) != want {
			t.Fatalf("step %d: TranslateAB(%q) = %q, %s; want %q, hit=%v", step, a, got, status[i], want, ok)
		}
		if got, hit := x.LookupAB(a); hit != ok || got != want {
			t.Fatalf("step %d: LookupAB(%q) = %q, %v; want %q, %v", step, a, got, hit, want, ok)
		}
	}
	for bID, a := range ba {
		if got, ok := x.LookupBA(bID); !ok || got != a {
			t.Fatalf("step %d: LookupBA(%q) = %q, %v; want %q", step, bID, got, ok, a)
		}
	}
	seen := 0
	x.Range(func(a, b string) bool {
		seen++
		if ab[a] != b {
			t.Fatalf("step %d: Range gave (%q, %q), want %q", step, a, b, ab[a])
		}
		return true
	})
	if seen != len(ab) {
		t.Fatalf("step %d: Range saw %d pairs, want %d", step, seen, len(ab))
	}
}

func TestIndexApplyRefusesDuplicates(t *testing.T) {
	t.Parallel()
	x := idtable.NewIndex(buildTable(t, idtable.Int, idtable.String, []string{"1"}, []string{"one"}))
	for _, p := range [][2]string{{"1", "uno"}, {"2", "one"}} {
		if _, err := x.Apply(nil, [][2]string{p}); !errors.Is(err, idtable.ErrDuplicate) {
			t.Errorf("Apply insert %v = %v, want ErrDuplicate", p, err)
		}
	}
	if _, err := x.Apply(nil, [][2]string{{"x", "two"}}); err == nil {
		t.Errorf("Apply of a non-integer A id = nil, want an error")
	}
}

// TestIndexRebaseKeepsOnlyItsOwnChanges applies two changes to one parent,
// as a writer does when a commit fails and it plans again: rebasing either
// child carries its own change and not its sibling's.
func TestIndexRebaseKeepsOnlyItsOwnChanges(t *testing.T) {
	t.Parallel()
	parent, err := idtable.NewIndex(buildTable(t, idtable.Int, idtable.String, []string{"1"}, []string{"one"})).Apply(nil, [][2]string{{"2", "two"}})
	if err != nil {
		t.Fatal(err)
	}
	compacted, err := parent.Compact()
	if err != nil {
		t.Fatal(err)
	}
	first, err := parent.Apply(nil, [][2]string{{"3", "three"}})
	if err != nil {
		t.Fatal(err)
	}
	second, err := parent.Apply([]string{"1"}, [][2]string{{"4", "four"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		x         *idtable.Index
		has, lack []string
	}{
		{"first", first, []string{"1", "2", "3"}, []string{"4"}},
		{"second", second, []string{"2", "4"}, []string{"1", "3"}},
	} {
		r, err := c.x.Rebase(compacted, parent)
		if err != nil {
			t.Fatalf("%s: Rebase: %v", c.name, err)
		}
		if r.Changes() != c.x.Changes()-parent.Changes() {
			t.Errorf("%s: %d changes after rebase, want %d", c.name, r.Changes(), c.x.Changes()-parent.Changes())
		}
		for _, a := range c.has {
			if !r.HasA(a) {
				t.Errorf("%s: rebased index lacks A id %s", c.name, a)
			}
		}
		for _, a := range c.lack {
			if r.HasA(a) {
				t.Errorf("%s: rebased index has A id %s", c.name, a)
			}
		}
	}
	if _, err := first.Rebase(compacted, second); err == nil {
		t.Errorf("Rebase over a sibling's compaction = nil error, want one")
	}
}

// BenchmarkIndexTranslate is BenchmarkLookup's batch lookup through an
// Index, as idmap serves it: over a bare compact table, and with an overlay
// of DefaultCompactAt (65,536) changed pairs, the most it holds before a
// compaction folds it in.
//
//	go test -run '^$' -bench BenchmarkIndexTranslate -cpu 1 ./idtable
func BenchmarkIndexTranslate(b *testing.B) {
	uuids, ints := randomPairs(benchPairs, 7)
	probes := contiguousProbes(uuids, 1<<20)
	bare := idtable.NewIndex(buildTable(b, idtable.UUID, idtable.Int, uuids, ints))
	// Re-pair 65,536 A ids with new B ids, 1,000 a change as an import does.
	changed := bare
	const overlayPairs = 65_536
	for start := 0; start < overlayPairs; start += 1000 {
		var del []string
		var ins [][2]string
		for i := start; i < min(start+1000, overlayPairs); i++ {
			del = append(del, uuids[i])
			ins = append(ins, [2]string{uuids[i], strconv.Itoa(benchPairs + 1 + i)})
		}
		var err error
		if changed, err = changed.Apply(del, ins); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		x    *idtable.Index
	}{{"bare", bare}, {"overlay-65536", changed}} {
		b.Run(c.name, func(b *testing.B) {
			benchTranslateBatches(b, c.x.TranslateAB, probes)
		})
	}
}
