package storage_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// TestPostgresPoolLimits: a PostgreSQL store's pool is bounded, by default
// and by the pool_* parameters of its URL, which never reach the driver
// (PostgreSQL would refuse them as unknown settings), LISTEN included.
func TestPostgresPoolLimits(t *testing.T) {
	t.Parallel()
	base := storagetest.PostgresURL(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	def := open(t, base)
	if got := def.SQL.Stats().MaxOpenConnections; got != storage.DefaultPoolMaxConns {
		t.Errorf("a URL without pool parameters opens at most %d connections, want the default %d", got, storage.DefaultPoolMaxConns)
	}

	db := open(t, base+sep+"pool_max_conns=2&pool_max_idle_conns=1&pool_max_conn_lifetime=1m&pool_max_conn_idle_time=10s")
	want := storage.Pool{MaxConns: 2, MaxIdleConns: 1, MaxConnLifetime: time.Minute, MaxConnIdleTime: 10 * time.Second}
	if db.Pool != want {
		t.Errorf("pool = %+v, want %+v", db.Pool, want)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := db.SQL.ExecContext(ctx, "SELECT pg_sleep(0.1)"); err != nil {
				t.Errorf("query: %v", err)
			}
		})
	}
	wg.Wait()
	if st := db.SQL.Stats(); st.MaxOpenConnections != 2 || st.WaitCount == 0 {
		t.Errorf("6 concurrent queries on a pool of 2: stats %+v, want at most 2 connections and callers waiting", st)
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := db.Listen(lctx, "pool_test"); err != nil {
		t.Errorf("Listen on a URL with pool parameters: %v", err)
	}

	for _, bad := range []string{"pool_max_conns=0", "pool_max_conns=many", "pool_max_conn_lifetime=forever"} {
		if db, err := storage.Open(ctx, base+sep+bad); err == nil {
			_ = db.Close()
			t.Errorf("Open with %s: accepted, want an error naming it", bad)
		} else if !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("Open with %s: %v, want an error naming the parameter", bad, err)
		}
	}
}
