package idmap

import (
	"context"

	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/platform/storage/storagetest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"github.com/seamdata/seam/services/idmap/idtable"
)

// eachStore runs fn on each store kind; open returns a handle on that store:
// the one shared handle for SQLite (replicas in one process share it), a new
// pool each time for PostgreSQL.
func eachStore(t *testing.T, fn func(t *testing.T, open func() *storage.DB)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := openSQLite(t)
		fn(t, func() *storage.DB { return db })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := storagetest.PostgresURL(t)
		fn(t, func() *storage.DB {
			db, err := storage.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			return db
		})
	})
}

// openSQLite opens a fresh SQLite store, closed when the test ends.
func openSQLite(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "idmap.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newServer(t *testing.T, db *storage.DB, compactAt int) *Server {
	t.Helper()
	s, err := New(context.Background(), Config{DB: db, CompactAt: compactAt, CounterFlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func testUUID(i int) string {
	var u [16]byte
	u[0], u[6], u[8] = 0x42, 0x40, 0x80
	for j := 0; j < 8; j++ {
		u[15-j] = byte(i >> (8 * j))
	}
	return idrule.FormatUUID(u)
}

func createTestNamespace(t *testing.T, s *Server) {
	t.Helper()
	if _, err := s.CreateNamespace(context.Background(), &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "customer",
		Formats: []*idmapv1.Format{{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}, {Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}}}}); err != nil {
		t.Fatalf("CreateNamespace: %v", err)
	}
}

// importN imports uuid(i)→i for i in [from, to) through the service's
// commit path.
func importN(t *testing.T, s *Server, from, to int) {
	t.Helper()
	ns, err := s.namespace("customer")
	if err != nil {
		t.Fatal(err)
	}
	key, swapped, err := tableTarget(ns, "legacy-int", "uuid", false)
	if err != nil {
		t.Fatal(err)
	}
	pairs := make([][2]string, 0, to-from)
	for i := from; i < to; i++ {
		pairs = append(pairs, [2]string{strconv.Itoa(i), testUUID(i)})
	}
	resp, err := s.commitImport(context.Background(), ns, key, swapped, &idmapv1.ImportHeader{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid"}, pairs)
	if err != nil || !resp.GetCommitted() {
		t.Fatalf("import %d..%d = %v, %v", from, to, resp, err)
	}
}

func tableOf(s *Server) *tableState {
	ns := s.snap.Load().namespaces["customer"]
	if ns == nil {
		return nil
	}
	return ns.tables[[2]string{"legacy-int", "uuid"}]
}

func waitGeneration(t *testing.T, s *Server, gen int64) *tableState {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // the background compaction, on a loaded CI machine
	for {
		if ts := tableOf(s); ts != nil && ts.Generation >= gen {
			return ts
		}
		if time.Now().After(deadline) {
			ts := tableOf(s)
			t.Fatalf("replica still at %+v 10s later, want generation %d", ts, gen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantTranslations(t *testing.T, s *Server, want map[string]string) {
	t.Helper()
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	resp, err := s.Translate(context.Background(), &idmapv1.TranslateRequest{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid", Ids: ids})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		hit := resp.Statuses[i] == idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
		if w := want[id]; (w != "") != hit || resp.Values[i] != w {
			t.Errorf("translate %s = %q (%s), want %q", id, resp.Values[i], resp.Statuses[i], w)
		}
	}
}

// TestReplicaAppliesChangeLog: a replica brings a table forward by the
// logged changes of each generation (its compact index is the same one,
// not a reload), ends with the writer's answers, counts with the writer
// in GetStats, and a restarted server reads the same table from the store.
func TestReplicaAppliesChangeLog(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func() *storage.DB) {
		ctx := context.Background()
		w := newServer(t, open(), 1<<20)
		f := newServer(t, open(), 1<<20)
		createTestNamespace(t, w)
		importN(t, w, 1, 1001)
		base := waitGeneration(t, f, tableOf(w).Generation).table.Base()

		if _, err := w.UpsertPair(ctx, &idmapv1.UpsertPairRequest{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid",
			Pair: &idmapv1.Pair{From: "5", To: testUUID(5005)}, Reason: "re-pair"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.DeletePair(ctx, &idmapv1.DeletePairRequest{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int",
			From: testUUID(7), Reason: "gone"}); err != nil {
			t.Fatal(err)
		}
		importN(t, w, 1001, 1004)
		wt := tableOf(w)
		if wt.Generation != 4 || wt.Pairs != 1002 {
			t.Fatalf("writer at generation %d with %d pairs, want 4 and 1002", wt.Generation, wt.Pairs)
		}
		ft := waitGeneration(t, f, wt.Generation)
		if ft.table.Base() != base {
			t.Errorf("the replica rebuilt its index for 4 changes; want the changes applied over the same index")
		}
		if ft.Pairs != 1002 || ft.table.Len() != 1002 {
			t.Errorf("replica has %d pairs (index %d), want 1002", ft.Pairs, ft.table.Len())
		}
		want := map[string]string{"1": testUUID(1), "5": testUUID(5005), "7": "", "1003": testUUID(1003), "1004": ""}
		wantTranslations(t, f, want)
		wantTranslations(t, w, want)

		// Counters from both replicas, read the same on each.
		for _, s := range []*Server{w, f} {
			a, err := s.GetStats(ctx, &idmapv1.GetStatsRequest{Namespace: "customer"})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Counters) != 1 || a.Counters[0].Hits < 3 {
				t.Errorf("GetStats = %v, want one counter with the hits of both replicas", a.Counters)
			}
		}
		a, _ := w.GetStats(ctx, &idmapv1.GetStatsRequest{})
		b, _ := f.GetStats(ctx, &idmapv1.GetStatsRequest{})
		if len(a.Counters) != 1 || len(b.Counters) != 1 || a.Counters[0].Hits != 6 || b.Counters[0].Hits != 6 || a.Counters[0].Misses != 4 {
			t.Errorf("GetStats on the writer = %v, on the replica = %v, want 6 hits and 4 misses on both", a.Counters, b.Counters)
		}

		// A restart reads the table whole, overlay changes included.
		r := newServer(t, open(), 1<<20)
		if rt := tableOf(r); rt.Generation != 4 || rt.table.Len() != 1002 {
			t.Errorf("restarted at generation %d with %d pairs, want 4 and 1002", rt.Generation, rt.table.Len())
		}
		wantTranslations(t, r, want)
	})
}

// TestCatchUpWithoutLogReadsTable: a generation the log lacks makes a
// replica read the table whole, and it still ends with the writer's pairs.
func TestCatchUpWithoutLogReadsTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openSQLite(t)
	w := newServer(t, db, 1<<20)
	createTestNamespace(t, w)
	importN(t, w, 1, 11)
	key := TableKey{Namespace: "customer", A: "legacy-int", B: "uuid"}
	if _, err := w.store.TableChanges(ctx, key, 0, 1); err != nil {
		t.Fatalf("TableChanges of a logged generation: %v", err)
	}
	if _, err := db.SQL.ExecContext(ctx, "UPDATE idmap_changes SET ops = NULL"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.TableChanges(ctx, key, 0, 1); err == nil {
		t.Fatalf("TableChanges of an unlogged generation = nil, want ErrNoChangeLog")
	}
	prev := &snapshot{namespaces: map[string]*nsState{}}
	old, err := w.load(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the previous snapshot was at generation 0 with no pairs.
	ns := *old.namespaces["customer"]
	ns.tables = map[[2]string]*tableState{{"legacy-int", "uuid"}: {TableState: TableState{Key: key}, table: emptyTable(key, &ns)}}
	prev.namespaces["customer"] = &ns
	next, err := w.load(ctx, prev)
	if err != nil {
		t.Fatal(err)
	}
	if got := next.namespaces["customer"].tables[[2]string{"legacy-int", "uuid"}]; got.Generation != 1 || got.table.Len() != 10 {
		t.Errorf("after a gap in the log: generation %d, %d pairs; want 1 and 10", got.Generation, got.table.Len())
	}
}

// TestCompactionUnderConcurrentLookups changes a table many times with a
// tiny CompactAt, so compactions run and swap in while readers translate:
// every reader answer about pairs that never change must be right, and at
// the end the index, compacted, matches what was written.
func TestCompactionUnderConcurrentLookups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openSQLite(t)
	const compactAt = 16
	s := newServer(t, db, compactAt)
	createTestNamespace(t, s)
	importN(t, s, 1, 2001)
	stable := make([]string, 0, 1000)
	for i := 1; i <= 1000; i++ {
		stable = append(stable, strconv.Itoa(i))
	}
	var stop atomic.Bool
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				resp, err := s.Translate(ctx, &idmapv1.TranslateRequest{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid", Ids: stable})
				if err != nil {
					wrong.Add(1)
					return
				}
				for i, v := range resp.Values {
					if v != testUUID(i+1) {
						wrong.Add(1)
					}
				}
			}
		}()
	}
	bases := map[*idtable.Table]bool{}
	want := map[string]string{}
	for i := 1001; i <= 1200; i++ {
		id := strconv.Itoa(i)
		if i%3 == 0 {
			if _, err := s.DeletePair(ctx, &idmapv1.DeletePairRequest{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid", From: id, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
			want[id] = ""
		} else {
			if _, err := s.UpsertPair(ctx, &idmapv1.UpsertPairRequest{Namespace: "customer", FromFormat: "legacy-int", ToFormat: "uuid",
				Pair: &idmapv1.Pair{From: id, To: testUUID(100_000 + i)}, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
			want[id] = testUUID(100_000 + i)
		}
		// A write that fills the overlay starts a compaction in the
		// background; waiting for it to swap in makes every fill a
		// compaction that readers race, however slow the machine: the
		// writes alone can outrun every compaction on a loaded one.
		waitCompacted(t, s, compactAt)
		bases[tableOf(s).table.Base()] = true
	}
	stop.Store(true)
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Errorf("%d wrong answers about unchanged pairs during writes and compactions", n)
	}
	if len(bases) < 3 {
		t.Errorf("200 changes with CompactAt %d ran on %d compact indexes; want compactions to have swapped in new ones", compactAt, len(bases))
	}
	waitCompacted(t, s, compactAt)
	wantTranslations(t, s, want)
	if got, wantN := tableOf(s).table.Len(), 2000-67; got != wantN {
		t.Errorf("table has %d pairs, want %d", got, wantN)
	}
}

// waitCompacted waits until the table's overlay holds fewer than compactAt
// changes: the background compaction a full overlay starts has swapped in.
func waitCompacted(t *testing.T, s *Server, compactAt int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // compaction runs in the background, on a loaded CI machine too
	for tableOf(s).table.Changes() >= compactAt {
		if time.Now().After(deadline) {
			t.Fatalf("overlay still holds %d changes 60s after the write that filled it", tableOf(s).table.Changes())
		}
		time.Sleep(time.Millisecond)
	}
}
