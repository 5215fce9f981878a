package gate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/storage/storagetest"
)

func keyHashes(from, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(from+i))
		sum := sha256.Sum256(b[:])
		out[i] = sum[:16]
	}
	return out
}

func insertKeys(tb testing.TB, s *sqlStore, pid int64, hashes [][]byte) []bool {
	tb.Helper()
	var fresh []bool
	err := s.InTx(context.Background(), func(tx storeTx) error {
		var err error
		fresh, err = tx.InsertKeys(context.Background(), pid, hashes)
		return err
	})
	if err != nil {
		tb.Fatalf("InsertKeys: %v", err)
	}
	return fresh
}

// The key index says which keys are new to their partition: a key seen
// before in the partition (in an earlier batch, or earlier in the same
// batch) is not, the same key in another partition is.
func TestInsertKeys(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		s := openTestStore(t, url)
		first := keyHashes(0, 1010)
		if got := insertKeys(t, s, 1, first); slices.Contains(got, false) {
			t.Fatalf("fresh keys reported as seen: %v", got)
		}
		// Half old, half new, and one new key twice.
		batch := append(keyHashes(995, 20), keyHashes(5000, 1)[0], keyHashes(5000, 1)[0])
		got := insertKeys(t, s, 1, batch)
		var want []bool
		for i := range 20 {
			want = append(want, 995+i >= 1010)
		}
		want = append(want, true, false)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("fresh = %v, want %v", got, want)
		}
		if got := insertKeys(t, s, 2, first[:3]); fmt.Sprint(got) != "[true true true]" {
			t.Errorf("the same keys in another partition: fresh = %v, want all", got)
		}
		// Twice in one transaction: the second call sees the first's keys.
		var second []bool
		if err := s.InTx(context.Background(), func(tx storeTx) error {
			if _, err := tx.InsertKeys(context.Background(), 3, keyHashes(0, 2)); err != nil {
				return err
			}
			var err error
			second, err = tx.InsertKeys(context.Background(), 3, keyHashes(1, 2))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(second) != "[false true]" {
			t.Errorf("second call in one transaction: fresh = %v, want [false true]", second)
		}
	})
}

func openTestStore(t *testing.T, url string) *sqlStore {
	t.Helper()
	s, err := openStore(context.Background(), url, DefaultKeyCacheKeys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // after the checks
	return s
}

// The key sets held in memory are a cache of what is committed: a batch
// rolled back leaves no key behind, keys another store wrote on the same
// database (a replica, or this gate before a restart) count, a partition
// sent again starts empty, and sets evicted from the cache, or too large
// for it, are read back whole.
func TestKeyIndexCache(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		a, b := openTestStore(t, url), openTestStore(t, url)
		insertKeys(t, a, 1, keyHashes(0, 10))

		errRollback := errors.New("roll back")
		if err := a.InTx(ctx, func(tx storeTx) error {
			if _, err := tx.InsertKeys(ctx, 1, keyHashes(10, 10)); err != nil {
				return err
			}
			return errRollback
		}); !errors.Is(err, errRollback) {
			t.Fatalf("InTx = %v, want the rollback", err)
		}
		if got := insertKeys(t, a, 1, keyHashes(10, 1)); !got[0] {
			t.Errorf("a key of a rolled-back batch is reported as seen")
		}

		// The other store has never seen partition 1 and reads it whole;
		// then each sees the other's batches.
		if got := insertKeys(t, b, 1, keyHashes(0, 11)); slices.Contains(got, true) {
			t.Errorf("keys of another store's batches reported as new: %v", got)
		}
		insertKeys(t, b, 1, keyHashes(100, 1))
		if got := insertKeys(t, a, 1, keyHashes(100, 2)); fmt.Sprint(got) != "[false true]" {
			t.Errorf("after another store's batch: fresh = %v, want [false true]", got)
		}

		// A partition sent again: its runs are deleted, and a set cached
		// before reads as empty even once new runs have been written.
		if err := b.InTx(ctx, func(tx storeTx) error {
			_, err := tx.Supersede(ctx, partRow{pid: 1, subject: "s", part: "p"}, time.Now())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		insertKeys(t, b, 1, keyHashes(500, 1))
		if got := insertKeys(t, a, 1, keyHashes(0, 1)); !got[0] {
			t.Errorf("a key of the superseded sending is reported as seen")
		}

		// A cache of 15 keys: partitions 11 and 12 (10 keys and more) evict
		// each other, partition 13 (20 keys and more) never fits; each is
		// read back right every time.
		c, err := openStore(ctx, url, 15)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() }) // after the checks
		insertKeys(t, c, 11, keyHashes(0, 10))
		insertKeys(t, c, 12, keyHashes(0, 10))
		insertKeys(t, c, 13, keyHashes(0, 20))
		for round := range 3 {
			for _, pid := range []int64{11, 12, 13} {
				got := insertKeys(t, c, pid, [][]byte{keyHashes(5, 1)[0], keyHashes(1000+round, 1)[0]})
				if fmt.Sprint(got) != "[false true]" {
					t.Errorf("round %d, partition %d: fresh = %v, want [false true]", round, pid, got)
				}
			}
		}
		if c.keys.total > 15 {
			t.Errorf("the cache holds %d keys, over its bound of 15", c.keys.total)
		}
	})
}

// A store whose key index was a B-tree row per key (schema 6) opens with
// each partition's keys as its first run, and the gate goes on finding
// those keys duplicates.
func TestKeyIndexUpgradeFromSchema6(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db := storeAtSchema(t, url, 6)
		for pid, hashes := range map[int64][][]byte{1: keyHashes(0, 300), 2: keyHashes(0, 1)} {
			for _, h := range hashes {
				if _, err := db.SQL.ExecContext(ctx, `INSERT INTO gate_keys (pid, key_hash) VALUES ($1, $2)`, pid, h); err != nil {
					t.Fatalf("write schema-6 keys: %v", err)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		s := openTestStore(t, url)
		got := insertKeys(t, s, 1, keyHashes(298, 3))
		if fmt.Sprint(got) != "[false false true]" {
			t.Errorf("partition 1 after the upgrade: fresh = %v, want [false false true]", got)
		}
		if got := insertKeys(t, s, 2, keyHashes(0, 2)); fmt.Sprint(got) != "[false true]" {
			t.Errorf("partition 2 after the upgrade: fresh = %v, want [false true]", got)
		}
		if got := insertKeys(t, s, 3, keyHashes(0, 1)); !got[0] {
			t.Errorf("a partition without keys before the upgrade: fresh = %v, want new", got)
		}
	})
}

// BenchmarkInsertKeys indexes 1,000 keys (one batch) into a fresh
// partition per op, as the gate's commit does.
func BenchmarkInsertKeys(b *testing.B) {
	for _, store := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", storagetest.SQLiteURL}, {"postgres", storagetest.PostgresURL}} {
		b.Run(store.name, func(b *testing.B) {
			s, err := openStore(context.Background(), store.url(b), DefaultKeyCacheKeys)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }() // after the benchmark
			hashes := keyHashes(0, benchBatch)
			b.ReportAllocs()
			pid := int64(0)
			for b.Loop() {
				pid++
				insertKeys(b, s, pid, hashes)
			}
			b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
