package idtable_test

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/services/idmap/idtable"
)

func TestTableBothDirections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		a, b  idtable.Kind
		pairs [][2]string
		miss  [2]string // an A id and a B id that are absent
	}{
		{"uuid-int", idtable.UUID, idtable.Int, [][2]string{
			{"0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c", "42"},
			{"00000000-0000-0000-0000-000000000000", "0"}, // zero keys on both sides
			{"ffffffff-ffff-ffff-ffff-ffffffffffff", "-9223372036854775808"},
		}, [2]string{"0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1d", "43"}},
		{"int-string", idtable.Int, idtable.String, [][2]string{
			{"1", "CUST-1"}, {"2", "CUST-2"},
		}, [2]string{"3", "CUST-3"}},
		{"string-uuid", idtable.String, idtable.UUID, [][2]string{
			{"crm-a", "0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c"},
		}, [2]string{"crm-b", "0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as, bs := make([]string, len(tt.pairs)), make([]string, len(tt.pairs))
			for i, p := range tt.pairs {
				as[i], bs[i] = p[0], p[1]
			}
			tab := buildTable(t, tt.a, tt.b, as, bs)
			if tab.Len() != len(tt.pairs) {
				t.Errorf("Len = %d, want %d", tab.Len(), len(tt.pairs))
			}
			for _, p := range tt.pairs {
				if got, ok := tab.LookupAB(p[0]); !ok || got != p[1] {
					t.Errorf("LookupAB(%q) = %q, %v, want %q, true", p[0], got, ok, p[1])
				}
				if got, ok := tab.LookupBA(p[1]); !ok || got != p[0] {
					t.Errorf("LookupBA(%q) = %q, %v, want %q, true", p[1], got, ok, p[0])
				}
			}
			if got, ok := tab.LookupAB(tt.miss[0]); ok {
				t.Errorf("LookupAB(%q) = %q, true, want a miss", tt.miss[0], got)
			}
			if got, ok := tab.LookupBA(tt.miss[1]); ok {
				t.Errorf("LookupBA(%q) = %q, true, want a miss", tt.miss[1], got)
			}
			seen := 0
			tab.Range(func(a, b string) bool {
				seen++
				if got, _ := tab.LookupAB(a); got != b {
					t.Errorf("Range gave (%q, %q) but LookupAB(%q) = %q", a, b, a, got)
				}
				return true
			})
			if seen != len(tt.pairs) {
				t.Errorf("Range visited %d pairs, want %d", seen, len(tt.pairs))
			}
		})
	}
}

func TestBuilderRefuses(t *testing.T) {
	t.Parallel()
	b, err := idtable.NewBuilder(idtable.UUID, idtable.Int, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add("0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c", "1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Add("0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1c", "2"); !errors.Is(err, idtable.ErrDuplicate) {
		t.Errorf("Add of a duplicate A id = %v, want ErrDuplicate", err)
	}
	if err := b.Add("0189c5e4-7f6a-7c3e-9b1a-2f4d6e8a0b1d", "1"); !errors.Is(err, idtable.ErrDuplicate) {
		t.Errorf("Add of a duplicate B id = %v, want ErrDuplicate", err)
	}
	if err := b.Add("0189C5E4-7F6A-7C3E-9B1A-2F4D6E8A0B1C", "3"); err == nil {
		t.Errorf("Add of an upper-case UUID = nil, want an error (not canonical)")
	}
}

func TestLargeTableRandomIDs(t *testing.T) {
	t.Parallel()
	const n = 200_000
	uuids, ints := randomPairs(n, 1)
	tab := buildTable(t, idtable.UUID, idtable.Int, uuids, ints)
	for i := range uuids {
		if got, ok := tab.LookupAB(uuids[i]); !ok || got != ints[i] {
			t.Fatalf("LookupAB(%q) = %q, %v, want %q", uuids[i], got, ok, ints[i])
		}
	}
	others, _ := randomPairs(1000, 2)
	for _, u := range others {
		if got, ok := tab.LookupAB(u); ok {
			t.Fatalf("LookupAB(%q) of an absent UUID = %q, want a miss", u, got)
		}
	}
}

// buildTable builds a table of the kinds a and b holding the pairs
// (as[i], bs[i]).
func buildTable(tb testing.TB, a, b idtable.Kind, as, bs []string) *idtable.Table {
	tb.Helper()
	builder, err := idtable.NewBuilder(a, b, len(as))
	if err != nil {
		tb.Fatal(err)
	}
	for i := range as {
		if err := builder.Add(as[i], bs[i]); err != nil {
			tb.Fatalf("Add(%q, %q): %v", as[i], bs[i], err)
		}
	}
	return builder.Build()
}

// benchTranslateBatches translates probes in batches of 10,000 with
// translate (a Table's or an Index's TranslateAB), every one a hit, and
// reports ids/s and ns/id.
func benchTranslateBatches(b *testing.B, translate func(ids []string, buf []byte, status []idrule.Status, ends []int) []byte, probes []string) {
	b.Helper()
	const batch = 10_000
	buf := make([]byte, 0, batch*20)
	status := make([]idrule.Status, batch)
	ends := make([]int, batch)
	done := 0
	for b.Loop() {
		off := (done * batch) & (len(probes) - 1)
		if off+batch > len(probes) {
			off = 0
		}
		buf = translate(probes[off:off+batch], buf[:0], status, ends)
		done++
		for _, st := range status {
			if st != idrule.Hit {
				b.Fatalf("status %s, want HIT", st)
			}
		}
	}
	ids := float64(done * batch)
	b.ReportMetric(ids/b.Elapsed().Seconds(), "ids/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ids, "ns/id")
}

// randomPairs returns n random UUIDs paired with the ints 1..n.
func randomPairs(n int, seed uint64) (uuids, ints []string) {
	r := rand.New(rand.NewPCG(seed, seed))
	uuids, ints = make([]string, n), make([]string, n)
	for i := range n {
		var u [16]byte
		for j := range u {
			u[j] = byte(r.Uint32())
		}
		uuids[i] = idrule.FormatUUID(u)
		ints[i] = strconv.Itoa(i + 1)
	}
	return uuids, ints
}

// benchPairs is the size the issue sets for the index benchmarks.
const benchPairs = 10_000_000

// BenchmarkLookup compares the table's UUID→int lookup with a plain Go
// map[string]int64 over the same 10,000,000 pairs and random probes.
//
//	go test -run '^$' -bench BenchmarkLookup -benchmem -cpu 1 ./idtable
func BenchmarkLookup(b *testing.B) {
	uuids, ints := randomPairs(benchPairs, 7)
	probes := contiguousProbes(uuids, 1<<20)
	b.Run("idtable", func(b *testing.B) {
		tab := buildTable(b, idtable.UUID, idtable.Int, uuids, ints)
		buf := make([]byte, 0, 32)
		b.ResetTimer()
		hits := 0
		for i := 0; b.Loop(); i++ {
			var ok bool
			buf, ok = tab.AppendAB(buf[:0], probes[i&(len(probes)-1)])
			if ok {
				hits++
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
		if hits != b.N {
			b.Fatalf("hits = %d, want %d", hits, b.N)
		}
	})
	b.Run("idtable-batch", func(b *testing.B) {
		tab := buildTable(b, idtable.UUID, idtable.Int, uuids, ints)
		b.ResetTimer()
		benchTranslateBatches(b, tab.TranslateAB, probes)
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[string]int64, benchPairs)
		for i := range uuids {
			v, _ := strconv.ParseInt(ints[i], 10, 64)
			m[uuids[i]] = v
		}
		buf := make([]byte, 0, 32)
		b.ResetTimer()
		hits := 0
		for i := 0; b.Loop(); i++ {
			v, ok := m[probes[i&(len(probes)-1)]]
			if ok {
				buf = strconv.AppendInt(buf[:0], v, 10)
				hits++
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
		if hits != b.N {
			b.Fatalf("hits = %d, want %d", hits, b.N)
		}
	})
}

// contiguousProbes picks n random ids and copies them into one buffer, as
// unmarshalling a request does, so the benchmark measures the table rather
// than misses on scattered input strings.
func contiguousProbes(ids []string, n int) []string {
	r := rand.New(rand.NewPCG(9, 9))
	buf := make([]byte, 0, n*36)
	offs := make([]int, n+1)
	for i := range n {
		buf = append(buf, ids[r.IntN(len(ids))]...)
		offs[i+1] = len(buf)
	}
	all := string(buf)
	probes := make([]string, n)
	for i := range probes {
		probes[i] = all[offs[i]:offs[i+1]]
	}
	return probes
}

// BenchmarkMemoryPerPair reports the heap a 10,000,000-pair uuid↔int table
// keeps for both directions, measured with runtime.MemStats after GC.
//
//	go test -run '^$' -bench BenchmarkMemoryPerPair -benchtime 1x ./idtable
func BenchmarkMemoryPerPair(b *testing.B) {
	uuids, ints := randomPairs(benchPairs, 11)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tab := buildTable(b, idtable.UUID, idtable.Int, uuids, ints)
		runtime.GC()
		runtime.ReadMemStats(&after)
		// Large slot arrays are mapped outside the Go heap; count them too.
		perPair := float64(after.HeapAlloc-before.HeapAlloc+uint64(tab.MappedBytes())) / benchPairs
		runtime.KeepAlive(tab)
		b.ReportMetric(perPair, "bytes/pair")
		if perPair > 48 {
			b.Errorf("resident %.1f bytes per pair, want at most 48", perPair)
		}
	}
}

func TestTranslateBatch(t *testing.T) {
	t.Parallel()
	uuids, ints := randomPairs(1000, 3)
	tab := buildTable(t, idtable.UUID, idtable.Int, uuids, ints)
	absent, _ := randomPairs(10, 4)
	ids := append(append([]string{"not-a-uuid", absent[0]}, uuids[:37]...), "00000000-0000-0000-0000-000000000000")
	status := make([]idrule.Status, len(ids))
	ends := make([]int, len(ids))
	buf := tab.TranslateAB(ids, nil, status, ends)
	start := 0
	for i, id := range ids {
		got := string(buf[start:ends[i]])
		start = ends[i]
		want, wantStatus := "", idrule.Miss
		switch {
		case i == 0:
			wantStatus = idrule.Invalid
		case i >= 2 && i < 39:
			want, wantStatus = ints[i-2], idrule.Hit
		}
		if status[i] != wantStatus || got != want {
			t.Errorf("ids[%d] %q = %q, %s, want %q, %s", i, id, got, status[i], want, wantStatus)
		}
	}
}
