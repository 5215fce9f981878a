package registry

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/core/examples"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// A version of a contract with a partition time judges partitions from a
// data date: by default its effective time (the first version: all earlier
// data). Only an admin, with a reason kept in the audit history, may make
// it judge partitions from a past data date, the usual fix when a source
// changed before anyone announced it.
func TestDataEffectiveTime(t *testing.T) {
	t.Parallel()
	e := newSeededEnv(t)
	ctx := context.Background()
	daily := func(description string) *contractv1.Contract {
		c := examples.ShopOrdersV1()
		c.Subject, c.Description = "shop.orders_daily", description
		c.PartitionTime = &contractv1.PartitionTime{Field: "created_at", Granularity: contractv1.Granularity_GRANULARITY_DAY, AllowedLateness: "2d"}
		return c
	}
	v1, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: daily("v1")})
	if err != nil || v1.GetVersion().GetDataEffectiveTime() != nil {
		t.Fatalf("v1 = %v (%v), want it registered without a data date (it applies to all earlier data)", v1.GetVersion(), err)
	}
	past := ts(start.AddDate(0, 0, -10))
	_, err = e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: daily("v2"), DataEffectiveTime: past, DataEffectiveReason: "INC-9"})
	wantCode(t, err, codes.PermissionDenied)
	if errorReason(err) != ReasonBackdateNeedsAdmin {
		t.Fatalf("owner backdating: reason %q, want %s", errorReason(err), ReasonBackdateNeedsAdmin)
	}
	_, err = e.as("admin").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: daily("v2"), DataEffectiveTime: past})
	wantCode(t, err, codes.InvalidArgument)
	v2, err := e.as("admin").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: daily("v2"), DataEffectiveTime: past,
		DataEffectiveReason: "INC-9: the source changed on the 20th"})
	if err != nil {
		t.Fatalf("admin backdating with a reason: %v", err)
	}
	if v := v2.GetVersion(); !v.GetDataEffectiveTime().AsTime().Equal(past.AsTime()) || v.GetDataEffectiveBy() != "admin" || v.GetDataEffectiveReason() == "" {
		t.Fatalf("v2 = %v, want the past data date, by admin, with the reason", v)
	}
	hist, err := e.as("viewer").GetHistory(ctx, &registryv1.GetHistoryRequest{Subject: "shop.orders_daily"})
	if err != nil {
		t.Fatalf("GetHistory: %v", err)
	}
	audited := false
	for _, a := range hist.GetEntries() {
		audited = audited || (a.GetAction() == auditBackdate && a.GetPrincipal() == "admin" && a.GetVersion() == 2)
	}
	if !audited {
		t.Fatalf("history %v lacks the backdating by admin", hist.GetEntries())
	}
	e.clock.Set(start.Add(time.Hour))
	v3, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: daily("v3")})
	if err != nil || !v3.GetVersion().GetDataEffectiveTime().AsTime().Equal(v3.GetVersion().GetEffectiveTime().AsTime()) {
		t.Fatalf("v3 = %v (%v), want its data date to be its effective time", v3.GetVersion(), err)
	}
	// A contract without a partition time has no data date to set.
	plain := examples.ShopOrdersV1()
	plain.Description = "changed"
	_, err = e.as("admin").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: plain, DataEffectiveTime: past, DataEffectiveReason: "x"})
	wantCode(t, err, codes.InvalidArgument)
}
