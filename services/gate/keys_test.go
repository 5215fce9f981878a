package gate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

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
// batch) is not, the same key in another partition is, and statements
// longer than keysPerStatement lose nothing at their seams.
func TestInsertKeys(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		s, err := openStore(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		first := keyHashes(0, keysPerStatement+10)
		if got := insertKeys(t, s, 1, first); slices.Contains(got, false) {
			t.Fatalf("fresh keys reported as seen: %v", got)
		}
		// Half old, half new, and one new key twice.
		batch := append(keyHashes(keysPerStatement-5, 20), keyHashes(5000, 1)[0], keyHashes(5000, 1)[0])
		got := insertKeys(t, s, 1, batch)
		var want []bool
		for i := range 20 {
			want = append(want, keysPerStatement-5+i >= keysPerStatement+10)
		}
		want = append(want, true, false)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("fresh = %v, want %v", got, want)
		}
		if got := insertKeys(t, s, 2, first[:3]); fmt.Sprint(got) != "[true true true]" {
			t.Errorf("the same keys in another partition: fresh = %v, want all", got)
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
			s, err := openStore(context.Background(), store.url(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
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
