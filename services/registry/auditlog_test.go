package registry

import (
	"context"
	"log/slog"
	"testing"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/platform/storage/storagetest"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestNoticeWaiverIsInTheAuditLog: a version registered with its notice
// period waived is one audit line naming who waived it, for which
// version and why; a version on notice writes none.
func TestNoticeWaiverIsInTheAuditLog(t *testing.T) {
	t.Parallel()
	var logs telemetrytest.LogBuffer
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
	for _, l := range logs.Lines(t) {
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
