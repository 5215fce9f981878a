package registry

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/core/examples"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestCheckContract is the dry run a source team runs in CI: each verdict,
// and nothing registered.
func TestCheckContract(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSeededEnv(t)
	e.lineage(t)

	additive := examples.ShopOrdersV1()
	additive.Fields = append(additive.Fields, &contractv1.Field{Name: "gift_wrap", Type: contractv1.FieldType_FIELD_TYPE_BOOL})
	badType := examples.ShopOrdersV1()
	badType.Fields[0].Pattern = "([" // an invalid regular expression

	tests := []struct {
		name          string
		contract      *contractv1.Contract
		effective     time.Time
		wantVerdict   registryv1.Verdict
		wantProblems  []string
		wantAffected  int
		wantNoticeDue bool
	}{
		{name: "unchanged", contract: examples.ShopOrdersV1(), wantVerdict: registryv1.Verdict_VERDICT_UNCHANGED},
		{name: "additive", contract: additive, wantVerdict: registryv1.Verdict_VERDICT_ADDITIVE},
		{name: "breaking without notice", contract: examples.ShopOrdersV2(),
			wantVerdict: registryv1.Verdict_VERDICT_REFUSED, wantProblems: []string{ReasonNeedsNotice}, wantAffected: 3, wantNoticeDue: true},
		{name: "breaking with notice", contract: examples.ShopOrdersV2(), effective: start.Add(notice),
			wantVerdict: registryv1.Verdict_VERDICT_BREAKING_SCHEDULABLE, wantAffected: 3, wantNoticeDue: true},
		{name: "invalid", contract: badType, wantVerdict: registryv1.Verdict_VERDICT_INVALID, wantProblems: []string{ReasonInvalidContract}},
	}
	// The group returns only when its parallel cases are done, so the
	// check below sees every dry run.
	t.Run("verdicts", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				req := &registryv1.CheckContractRequest{Contract: tt.contract}
				if !tt.effective.IsZero() {
					req.EffectiveTime = ts(tt.effective)
				}
				resp, err := e.as("viewer").CheckContract(ctx, req)
				if err != nil {
					t.Fatalf("CheckContract: %v", err)
				}
				if resp.GetVerdict() != tt.wantVerdict {
					t.Errorf("verdict = %s (problems %v), want %s", resp.GetVerdict(), resp.GetProblems(), tt.wantVerdict)
				}
				var reasons []string
				for _, p := range resp.GetProblems() {
					reasons = append(reasons, p.GetReason())
				}
				if !slices.Equal(reasons, tt.wantProblems) {
					t.Errorf("problems = %v, want %v", reasons, tt.wantProblems)
				}
				if got := len(resp.GetAffectedConsumers()); got != tt.wantAffected {
					t.Errorf("affected consumers = %d, want %d", got, tt.wantAffected)
				}
				if tt.wantNoticeDue {
					if resp.GetNoticeOwed() != "14d" || !resp.GetEarliestEffectiveTime().AsTime().Equal(start.Add(notice)) {
						t.Errorf("notice owed %q, earliest %s; want 14d, %s", resp.GetNoticeOwed(), resp.GetEarliestEffectiveTime().AsTime(), start.Add(notice))
					}
				}
			})
		}
	})
	t.Run("nothing registered", func(t *testing.T) {
		list, err := e.as("viewer").ListContracts(ctx, &registryv1.ListContractsRequest{Subject: "shop.orders"})
		if err != nil || len(list.GetVersions()) != 1 {
			t.Errorf("versions after dry runs = %d (%v), want 1", len(list.GetVersions()), err)
		}
	})
}

// TestErrorsNameWhatAndWhere checks the codes and details of bad requests.
func TestErrorsNameWhatAndWhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newSeededEnv(t)

	unknownModel := examples.ShopOrdersV1()
	unknownModel.Subject = "shop.returns"
	unknownModel.Mapping.Canonical = "commerce.refund"
	badMapping := examples.ShopOrdersV1()
	badMapping.Subject = "shop.exchanges"
	badMapping.Mapping.Fields["no_such_field"] = badMapping.Mapping.Fields["order_id"]

	tests := []struct {
		name       string
		call       func() error
		wantCode   codes.Code
		wantFields []string
		wantReason string
	}{
		{"mapping names an unregistered canonical model", func() error {
			_, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: unknownModel})
			return err
		}, codes.InvalidArgument, []string{"contract.mapping.canonical"}, ""},
		{"mapping names a missing canonical field", func() error {
			_, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: badMapping})
			return err
		}, codes.InvalidArgument, []string{"contract.mapping.fields.no_such_field"}, ""},
		{"unknown subject", func() error {
			_, err := e.as("viewer").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.nothing"})
			return err
		}, codes.NotFound, nil, ""},
		{"unknown version", func() error {
			_, err := e.as("viewer").GetContract(ctx, &registryv1.GetContractRequest{Subject: "shop.orders", Version: 9})
			return err
		}, codes.NotFound, nil, ""},
		{"unknown consumer", func() error {
			_, err := e.as("viewer").GetConsumer(ctx, &registryv1.GetConsumerRequest{Name: "nobody"})
			return err
		}, codes.NotFound, nil, ""},
		{"retiring the active version", func() error {
			_, err := e.as("checkout").SetVersionStatus(ctx, &registryv1.SetVersionStatusRequest{
				Subject: "shop.orders", Version: 1, Status: registryv1.VersionStatus_VERSION_STATUS_RETIRED})
			return err
		}, codes.FailedPrecondition, nil, ReasonVersionActive},
		{"consumer without inputs", func() error {
			_, err := e.as("operator").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "x"}})
			return err
		}, codes.InvalidArgument, []string{"consumer.inputs"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			wantCode(t, err, tt.wantCode)
			if got := fieldViolations(err); !slices.Equal(got, tt.wantFields) {
				t.Errorf("field violations = %v, want %v", got, tt.wantFields)
			}
			if tt.wantReason != "" {
				if got := errorReason(err); got != tt.wantReason {
					t.Errorf("reason = %q, want %q", got, tt.wantReason)
				}
			}
		})
	}
}
