package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// syncBuffer is a log destination the server's goroutines may share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestNoticeWaiverIsInTheAuditLog: a version registered with its notice
// period waived is one audit line naming who waived it, for which
// version and why; a version on notice writes none.
func TestNoticeWaiverIsInTheAuditLog(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock(), func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.seed(t)
	reason := "INC-4711: source already sends UUIDs"
	if _, err := e.as("admin").RegisterContract(context.Background(), &registryv1.RegisterContractRequest{
		Contract: examples.ShopOrdersV2(), Override: &registryv1.NoticeOverride{Reason: reason}}); err != nil {
		t.Fatalf("RegisterContract: %v", err)
	}
	var waived []map[string]any
	for _, l := range logs.lines(t) {
		if l["event"] == "notice_waived" {
			waived = append(waived, l)
		}
	}
	if len(waived) != 1 {
		t.Fatalf("notice_waived lines = %v, want one", waived)
	}
	w := waived[0]
	if w["audit"] != true || w["principal"] != "admin" || w["subject"] != "shop.orders" || w["version"] != float64(2) || w["reason"] != reason {
		t.Errorf("notice_waived line = %v, want audit, admin, shop.orders, version 2 and the reason", w)
	}
}
