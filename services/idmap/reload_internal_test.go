package idmap

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// flakyStore fails the reads of a reload while fails is above zero, as a
// store does while its database restarts.
type flakyStore struct {
	Store
	fails atomic.Int64
}

func (f *flakyStore) Namespaces(ctx context.Context) ([]*idmapv1.Namespace, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, errors.New("read namespaces: connection reset by peer")
	}
	return f.Store.Namespaces(ctx)
}

// TestFailedReloadIsRetried: a replica whose reload after a committed
// change fails tries again, instead of serving its old snapshot until some
// other change happens to wake it.
func TestFailedReloadIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openSQLite(t)
	writer, err := New(ctx, Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writer.Close() })
	follower, err := New(ctx, Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follower.Close() })
	flaky := &flakyStore{Store: follower.store}
	flaky.fails.Store(2)
	follower.mu.Lock() // Reload reads the store under mu
	follower.store = flaky
	follower.mu.Unlock()

	if _, err := writer.CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "payer",
		Formats: []*idmapv1.Format{{Name: "iban", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING}, {Name: "account", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}}}}); err != nil {
		t.Fatalf("CreateNamespace: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for follower.snap.Load().namespaces["payer"] == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the follower still lacks namespace payer 5s after its reload failed %d times; want the reload retried", 2-max(flaky.fails.Load(), 0))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := flaky.fails.Load(); left > 0 {
		t.Errorf("the follower reloaded without going through the failures (%d left)", left)
	}
}
