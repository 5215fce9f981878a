package registry

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/storage/storagetest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestNoticeEnforcement registers the seed's breaking change (customer_id
// from INT64 to a UUID) with every kind of notice, on both stores.
func TestNoticeEnforcement(t *testing.T) {
	t.Parallel()
	override := &registryv1.NoticeOverride{Reason: "INC-4711: source already sends UUIDs"}
	tests := []struct {
		name       string
		caller     string
		effective  time.Duration // from now
		override   *registryv1.NoticeOverride
		noMapping  bool
		wantCode   codes.Code
		wantReason string
		wantStatus registryv1.VersionStatus
	}{
		{name: "too early", caller: "checkout", effective: notice - time.Second,
			wantCode: codes.FailedPrecondition, wantReason: ReasonNeedsNotice},
		{name: "no effective time", caller: "checkout", effective: -1,
			wantCode: codes.FailedPrecondition, wantReason: ReasonNeedsNotice},
		{name: "exactly on time", caller: "checkout", effective: notice,
			wantCode: codes.OK, wantStatus: registryv1.VersionStatus_VERSION_STATUS_SCHEDULED},
		{name: "on time without migration", caller: "checkout", effective: notice, noMapping: true,
			wantCode: codes.FailedPrecondition, wantReason: ReasonNeedsMigration},
		{name: "admin override", caller: "admin", effective: -1, override: override,
			wantCode: codes.OK, wantStatus: registryv1.VersionStatus_VERSION_STATUS_ACTIVE},
		{name: "override by owner refused", caller: "checkout", effective: -1, override: override,
			wantCode: codes.PermissionDenied, wantReason: ReasonOverrideNeedsAdmin},
		{name: "override without reason", caller: "admin", effective: -1, override: &registryv1.NoticeOverride{},
			wantCode: codes.InvalidArgument},
	}
	storagetest.Each(t, func(t *testing.T, kind string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				url := freshURL(t, kind)
				e := newEnv(t, url, newFakeClock())
				e.seed(t)
				e.lineage(t)
				v2 := examples.ShopOrdersV2()
				if tt.noMapping {
					v2.Mapping = nil
				}
				req := &registryv1.RegisterContractRequest{Contract: v2, Override: tt.override}
				if tt.effective >= 0 {
					req.EffectiveTime = ts(start.Add(tt.effective))
				}
				resp, err := e.as(tt.caller).RegisterContract(context.Background(), req)
				wantCode(t, err, tt.wantCode)
				if got := errorReason(err); got != tt.wantReason {
					t.Errorf("reason = %q, want %q", got, tt.wantReason)
				}
				if tt.wantCode == codes.FailedPrecondition {
					// The details name each breaking change, so the source
					// team sees what it changed, not only what it owes.
					got := preconditionTypes(err)
					for _, rule := range []string{"FIELD_TYPE_CHANGED", "IDENTIFIER_FORMAT_CHANGED", tt.wantReason} {
						if !slices.Contains(got, rule) {
							t.Errorf("precondition violations = %v, want them to include %s", got, rule)
						}
					}
					list, lerr := e.as("viewer").ListContracts(context.Background(), &registryv1.ListContractsRequest{Subject: "shop.orders"})
					if lerr != nil || len(list.GetVersions()) != 1 {
						t.Errorf("after a refusal: %d versions (%v), want 1", len(list.GetVersions()), lerr)
					}
				}
				if err != nil {
					return
				}
				v := resp.GetVersion()
				if v.GetVersion() != 2 || v.GetStatus() != tt.wantStatus || !v.GetBreaking() {
					t.Errorf("registered v%d %s breaking=%v, want v2 %s breaking=true", v.GetVersion(), v.GetStatus(), v.GetBreaking(), tt.wantStatus)
				}
				// The consumers joining on customer_id are told at once,
				// and the one reading only amount and currency is not.
				if got, want := consumerNames(resp.GetAffectedConsumers()), []string{"features.customer_ltv", "reports.weekly", "marketing.segments"}; !sameStrings(got, want) {
					t.Errorf("affected consumers = %v, want %v", got, want)
				}
				ann := eventsOf(t, e.as("viewer"), registryv1.EventType_EVENT_TYPE_CHANGE_ANNOUNCED)
				if len(ann) != 1 || !slices.Contains(ann[0].GetConsumers(), "features.customer_ltv") {
					t.Errorf("CHANGE_ANNOUNCED events = %v, want one naming features.customer_ltv", ann)
				}
				hist, err := e.as("viewer").GetHistory(context.Background(), &registryv1.GetHistoryRequest{Subject: "shop.orders"})
				if err != nil {
					t.Fatalf("GetHistory: %v", err)
				}
				overridden := slices.ContainsFunc(hist.GetEntries(), func(a *registryv1.AuditEntry) bool {
					return a.GetAction() == auditOverride && a.GetPrincipal() == "admin" && a.GetVersion() == 2
				})
				if overridden != (tt.override != nil) {
					t.Errorf("history has override entry = %v, want %v; history: %v", overridden, tt.override != nil, hist.GetEntries())
				}
			})
		}
	})
}

// freshURL returns a new, empty store of the same kind as like, for table
// cases that each need their own store inside storagetest.Each.
func freshURL(t *testing.T, like string) string {
	t.Helper()
	if strings.HasPrefix(like, "postgres") {
		return storagetest.PostgresURL(t)
	}
	return storagetest.SQLiteURL(t)
}

// TestScheduledVersionActivatesAtEffectiveTime moves the injected clock past
// a scheduled version's effective time and checks that it takes over then,
// and not a second earlier.
func TestScheduledVersionActivatesAtEffectiveTime(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		e := newEnv(t, url, newFakeClock())
		e.seed(t)
		effective := start.Add(notice)
		if _, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{
			Contract: examples.ShopOrdersV2(), EffectiveTime: ts(effective)}); err != nil {
			t.Fatalf("register v2: %v", err)
		}
		active := func() int32 {
			t.Helper()
			resp, err := e.as("gate").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders"})
			if err != nil {
				t.Fatalf("GetContract: %v", err)
			}
			return resp.GetVersion().GetVersion()
		}

		e.clock.Set(effective.Add(-time.Second))
		if n, err := e.srv.activateDue(ctx); err != nil || n != 0 {
			t.Fatalf("activateDue a second early = %d, %v; want 0, nil", n, err)
		}
		if got := active(); got != 1 {
			t.Fatalf("active version a second early = v%d, want v1", got)
		}

		e.clock.Set(effective)
		if n, err := e.srv.activateDue(ctx); err != nil || n != 1 {
			t.Fatalf("activateDue at the effective time = %d, %v; want 1, nil", n, err)
		}
		if got := active(); got != 2 {
			t.Fatalf("active version at the effective time = v%d, want v2", got)
		}
		v1, err := e.as("viewer").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders", Version: 1})
		if err != nil || v1.GetVersion().GetStatus() != registryv1.VersionStatus_VERSION_STATUS_SUPERSEDED {
			t.Errorf("v1 after activation: %s (%v), want SUPERSEDED", v1.GetVersion().GetStatus(), err)
		}
		// A second pass finds nothing to do: activation happens once.
		if n, err := e.srv.activateDue(ctx); err != nil || n != 0 {
			t.Errorf("second activateDue = %d, %v; want 0, nil", n, err)
		}
		if got := len(eventsOf(t, e.as("viewer"), registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED)); got != 2 {
			t.Errorf("VERSION_ACTIVATED events = %d, want 2 (v1 at once, v2 when due)", got)
		}
		// "The version active at time T" answers by effective time.
		for _, tc := range []struct {
			at   time.Time
			want int32
		}{{start, 1}, {effective.Add(-time.Nanosecond), 1}, {effective, 2}, {effective.Add(time.Hour), 2}} {
			resp, err := e.as("viewer").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders", AtTime: ts(tc.at)})
			if err != nil || resp.GetVersion().GetVersion() != tc.want {
				t.Errorf("version active at %s = v%d (%v), want v%d", tc.at, resp.GetVersion().GetVersion(), err, tc.want)
			}
		}
		if _, err := e.as("viewer").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders", AtTime: ts(start.Add(-time.Hour))}); err == nil {
			t.Errorf("version active before v1 existed: got one, want NotFound")
		}
	})
}

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

// TestRunActivatesOnItsOwn checks that the Run loop, not the test, activates
// a due version.
func TestRunActivatesOnItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSeededEnv(t)
	effective := start.Add(notice)
	if _, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{
		Contract: examples.ShopOrdersV2(), EffectiveTime: ts(effective)}); err != nil {
		t.Fatalf("register v2: %v", err)
	}
	e.run(t)
	e.clock.Set(effective)
	var got int32
	err := eventually(func() bool {
		resp, err := e.as("gate").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders"})
		got = resp.GetVersion().GetVersion()
		return err == nil && got == 2
	})
	if err != nil {
		t.Fatalf("active version = v%d after the effective time with Run going, want v2: %v", got, err)
	}
}

// TestBlastRadius computes the radius of a change to customer_id through
// two levels of dataset lineage, by fields and by proposed contract.
func TestBlastRadius(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSeededEnv(t)
	e.lineage(t)

	want := []*registryv1.AffectedConsumer{
		{Consumer: "features.customer_ltv", Depth: 1, Path: []string{"shop.orders.customer_id", "features.customer_ltv"},
			Fields: []string{"customer_id"}, Usages: []registryv1.UsageKind{registryv1.UsageKind_USAGE_KIND_JOIN_KEY}, Owner: "team-ml"},
		{Consumer: "reports.weekly", Depth: 2, Path: []string{"shop.orders.customer_id", "features.customer_ltv", "ltv_daily", "reports.weekly"},
			Fields: []string{"ltv_daily"}, Usages: []registryv1.UsageKind{registryv1.UsageKind_USAGE_KIND_FEATURE}, Owner: "team-bi"},
		{Consumer: "marketing.segments", Depth: 3,
			Path:   []string{"shop.orders.customer_id", "features.customer_ltv", "ltv_daily", "reports.weekly", "weekly_report", "marketing.segments"},
			Fields: []string{"weekly_report"}, Usages: []registryv1.UsageKind{registryv1.UsageKind_USAGE_KIND_FILTER}, Owner: "team-growth"},
	}
	tests := []struct {
		name        string
		req         *registryv1.GetBlastRadiusRequest
		want        []*registryv1.AffectedConsumer
		wantChanged []string
	}{
		{name: "fields", req: &registryv1.GetBlastRadiusRequest{Subject: "shop.orders", Fields: []string{"customer_id"}},
			want: want, wantChanged: []string{"customer_id"}},
		{name: "proposed contract", req: &registryv1.GetBlastRadiusRequest{Proposed: examples.ShopOrdersV2()},
			want: want, wantChanged: []string{"customer_id"}},
		{name: "field nobody reads", req: &registryv1.GetBlastRadiusRequest{Subject: "shop.orders", Fields: []string{"coupon"}},
			wantChanged: []string{"coupon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := e.as("viewer").GetBlastRadius(ctx, tt.req)
			if err != nil {
				t.Fatalf("GetBlastRadius: %v", err)
			}
			if !protoEqualList(resp.GetConsumers(), tt.want) {
				t.Errorf("consumers:\n got %v\nwant %v", resp.GetConsumers(), tt.want)
			}
			if !sameStrings(resp.GetChangedFields(), tt.wantChanged) {
				t.Errorf("changed fields = %v, want %v", resp.GetChangedFields(), tt.wantChanged)
			}
		})
	}

	t.Run("whole subject", func(t *testing.T) {
		t.Parallel()
		resp, err := e.as("viewer").GetBlastRadius(ctx, &registryv1.GetBlastRadiusRequest{Subject: "shop.orders"})
		if err != nil {
			t.Fatalf("GetBlastRadius: %v", err)
		}
		if got, want := consumerNames(resp.GetConsumers()), []string{"features.customer_ltv", "finance.revenue", "reports.weekly", "marketing.segments"}; !sameStrings(got, want) {
			t.Errorf("consumers = %v, want %v", got, want)
		}
	})
	t.Run("rerun order", func(t *testing.T) {
		t.Parallel()
		resp, err := e.as("viewer").GetRerunOrder(ctx, &registryv1.GetRerunOrderRequest{Root: &registryv1.GetRerunOrderRequest_Subject{Subject: "shop.orders"}})
		if err != nil {
			t.Fatalf("GetRerunOrder: %v", err)
		}
		if got, want := resp.GetConsumers(), []string{"features.customer_ltv", "finance.revenue", "reports.weekly", "marketing.segments"}; !sameStrings(got, want) {
			t.Errorf("rerun order = %v, want %v", got, want)
		}
	})
}

// TestConsumerCycleRefused keeps the lineage a DAG so a rerun order exists.
func TestConsumerCycleRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	e.lineage(t)
	_, err := e.as("team-ml").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{
		Name: "features.customer_ltv", Produces: []string{"ltv_daily"},
		Inputs: []*registryv1.Input{{Source: &registryv1.Input_Dataset{Dataset: "weekly_report"}}},
	}})
	wantCode(t, err, codes.FailedPrecondition)
	if got := errorReason(err); got != ReasonLineageCycle {
		t.Errorf("reason = %q, want %q", got, ReasonLineageCycle)
	}
}

// TestConsumersBelongToTheirTeam: one team cannot overwrite or delete
// another team's consumer, which would empty the blast radius of a subject
// that consumer reads; the owner team and admins can.
func TestConsumersBelongToTheirTeam(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSeededEnv(t)
	e.lineage(t) // features.customer_ltv, owned by team-ml, joins on shop.orders.customer_id
	readsNothing := func(owner string) *registryv1.RegisterConsumerRequest {
		return &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "features.customer_ltv", Owner: owner,
			Inputs: []*registryv1.Input{{Source: &registryv1.Input_Dataset{Dataset: "nothing"}}}}}
	}
	blast := func() []string {
		t.Helper()
		resp, err := e.as("viewer").GetBlastRadius(ctx, &registryv1.GetBlastRadiusRequest{Subject: "shop.orders", Fields: []string{"customer_id"}})
		if err != nil {
			t.Fatal(err)
		}
		return consumerNames(resp.GetConsumers())
	}
	steps := []struct {
		name     string
		call     func() error
		wantCode codes.Code
	}{
		{"another team overwrites it", func() error { _, err := e.as("team-bi").RegisterConsumer(ctx, readsNothing("")); return err }, codes.PermissionDenied},
		{"another team overwrites it claiming the owner", func() error {
			_, err := e.as("team-bi").RegisterConsumer(ctx, readsNothing("team-ml"))
			return err
		}, codes.PermissionDenied},
		{"another team deletes it", func() error {
			_, err := e.as("team-bi").DeleteConsumer(ctx, &registryv1.DeleteConsumerRequest{Name: "features.customer_ltv"})
			return err
		}, codes.PermissionDenied},
		{"an operator deletes it", func() error {
			_, err := e.as("operator").DeleteConsumer(ctx, &registryv1.DeleteConsumerRequest{Name: "features.customer_ltv"})
			return err
		}, codes.PermissionDenied},
		{"a team declares a consumer for another team", func() error {
			_, err := e.as("team-bi").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{
				Name: "features.churn", Owner: "team-ml", Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: "shop.orders"}}}}})
			return err
		}, codes.PermissionDenied},
	}
	for _, st := range steps {
		err := st.call()
		wantCode(t, err, st.wantCode)
		if st.wantCode == codes.PermissionDenied && errorReason(err) != ReasonNotConsumerOwner {
			t.Errorf("%s: reason %q, want %s", st.name, errorReason(err), ReasonNotConsumerOwner)
		}
	}
	if got := blast(); !slices.Contains(got, "features.customer_ltv") {
		t.Fatalf("blast radius of shop.orders.customer_id = %v after the refused changes, want it to keep features.customer_ltv", got)
	}

	// The owner team changes its own consumer; a new one without an owner
	// is the caller's team's.
	resp, err := e.as("team-ml").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "features.churn",
		Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: "shop.orders"}}}}})
	if err != nil || resp.GetConsumer().GetOwner() != "team-ml" {
		t.Fatalf("team-ml declares features.churn: %v, owner %q; want it declared for team-ml", err, resp.GetConsumer().GetOwner())
	}
	if _, err := e.as("team-ml").DeleteConsumer(ctx, &registryv1.DeleteConsumerRequest{Name: "features.churn"}); err != nil {
		t.Errorf("team-ml deletes its own consumer: %v", err)
	}
	if _, err := e.as("team-ml").RegisterConsumer(ctx, readsNothing("")); err != nil {
		t.Errorf("team-ml replaces its own consumer: %v", err)
	}
	if got := blast(); slices.Contains(got, "features.customer_ltv") {
		t.Errorf("blast radius = %v after team-ml's own change, want features.customer_ltv gone", got)
	}
	// An admin may change any team's.
	if _, err := e.as("admin").DeleteConsumer(ctx, &registryv1.DeleteConsumerRequest{Name: "reports.weekly"}); err != nil {
		t.Errorf("admin deletes team-bi's consumer: %v", err)
	}
}

// TestBadConsumerNamesRefused: consumer names follow the naming rule on
// SQLite and PostgreSQL: a look-alike with a trailing space, a path, a NUL,
// a zero-width space or 2,000 characters is InvalidArgument naming the
// field, and nothing is stored; namespace/job is a valid name.
func TestBadConsumerNamesRefused(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, newFakeClock())
		e.seed(t)
		ctx := context.Background()
		declare := func(name string) error {
			_, err := e.as("team-ml").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: name,
				Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: "shop.orders"}}}}})
			return err
		}
		if err := declare("features.ltv"); err != nil {
			t.Fatal(err)
		}
		if err := declare("team-ml/nightly"); err != nil {
			t.Errorf("namespace/job: %v, want valid", err)
		}
		for _, bad := range []string{"features.ltv ", "../x", "a\x00b", "a\u200bb", strings.Repeat("c", 2000), "ns//job"} {
			err := declare(bad)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error()+detailsText(err), "consumer.name") {
				t.Errorf("consumer %.20q: %v, want InvalidArgument naming consumer.name", bad, err)
			}
			_, err = e.as("team-ml").DeleteConsumer(ctx, &registryv1.DeleteConsumerRequest{Name: bad})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("delete consumer %.20q: %v, want InvalidArgument", bad, err)
			}
		}
		list, err := e.as("viewer").ListConsumers(ctx, &registryv1.ListConsumersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list.GetConsumers() {
			if c.GetName() != strings.TrimSpace(c.GetName()) || strings.ContainsAny(c.GetName(), "\x00\u200b") {
				t.Errorf("a bad name was stored: %q", c.GetName())
			}
		}
	})
}

func detailsText(err error) string {
	var b strings.Builder
	for _, d := range status.Convert(err).Details() {
		if s, ok := d.(interface{ String() string }); ok {
			b.WriteString(s.String())
		}
	}
	return b.String()
}

// TestAuthorizationPerSubject checks that owners register only their own
// subjects, that roles are enforced per method, and that admins may do all.
func TestAuthorizationPerSubject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSeededEnv(t)
	registerAs := func(principal, subject string) func() error {
		return func() error {
			c := examples.ShopOrdersV1()
			c.Subject = subject
			_, err := e.as(principal).RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: c})
			return err
		}
	}
	publishAs := func(principal string, typ registryv1.EventType) func() error {
		return func() error {
			_, err := e.as(principal).PublishEvent(ctx, &registryv1.PublishEventRequest{Event: &registryv1.Event{Type: typ, Subject: "shop.orders"}})
			return err
		}
	}
	tests := []struct {
		name       string
		call       func() error
		wantCode   codes.Code
		wantReason string
	}{
		{"owner registers own subject", registerAs("checkout", "shop.returns"), codes.OK, ""},
		{"owner registers another team's subject", registerAs("billing", "shop.refunds"), codes.PermissionDenied, ReasonNotOwner},
		{"other owner registers its own subject", registerAs("billing", "billing.invoices"), codes.OK, ""},
		{"admin registers any subject", registerAs("admin", "partner.feed"), codes.OK, ""},
		{"viewer cannot register", registerAs("viewer", "shop.viewed"), codes.PermissionDenied, ""},
		{"viewer reads", func() error {
			_, err := e.as("viewer").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders"})
			return err
		}, codes.OK, ""},
		{"owner cannot deprecate another team's version", func() error {
			_, err := e.as("billing").SetVersionStatus(ctx, &registryv1.SetVersionStatusRequest{
				Subject: "shop.orders", Version: 1, Status: registryv1.VersionStatus_VERSION_STATUS_DEPRECATED})
			return err
			// billing's token is limited to its subjects: the call is
			// refused before the handler, as out of its scope.
		}, codes.PermissionDenied, auth.ReasonOutOfScope},
		{"the gate service publishes an event", publishAs("gate", registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED), codes.OK, ""},
		// A pipeline token could announce a backfill that never ran, and
		// downstream teams would rerun on it.
		{"a pipeline cannot publish", publishAs("pipeline", registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED), codes.PermissionDenied, ""},
		{"an operator cannot publish", publishAs("operator", registryv1.EventType_EVENT_TYPE_SOURCE_RELEASED), codes.PermissionDenied, ""},
		{"viewer cannot publish", publishAs("viewer", registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED), codes.PermissionDenied, ""},
		{"registry events cannot be forged", publishAs("gate", registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED), codes.InvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			wantCode(t, err, tt.wantCode)
			if tt.wantReason != "" {
				if got := errorReason(err); got != tt.wantReason {
					t.Errorf("reason = %q, want %q", got, tt.wantReason)
				}
			}
		})
	}
}
