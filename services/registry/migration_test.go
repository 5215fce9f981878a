package registry

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/core/examples"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// A migration the adapter could not run is refused at registration, with
// the path of what is wrong: the registry compiles mappings and checks with
// the same compilers the adapter and the gate use.
func TestIncompleteMigrationRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(c *contractv1.Contract)
		want   string // a field violation path
	}{
		{"required canonical field not produced", func(c *contractv1.Contract) {
			delete(c.Mapping.Fields, "amount")
		}, "contract.mapping.fields.amount"},
		{"uuid copied into an int64 field without translation", func(c *contractv1.Contract) {
			c.Mapping.Fields["customer_id"].Translate = nil
		}, "contract.mapping.fields.customer_id"},
		{"check naming a missing field", func(c *contractv1.Contract) {
			c.Checks = append(c.Checks, &contractv1.Check{Name: "bad", Rule: "required(no_such_field)", Policy: contractv1.Policy_POLICY_BLOCK})
		}, "contract.checks["},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSeededEnv(t)
			v2 := examples.ShopOrdersV2()
			tc.change(v2)
			_, err := e.as("checkout").RegisterContract(context.Background(), &registryv1.RegisterContractRequest{Contract: v2, EffectiveTime: ts(start.Add(notice))})
			wantCode(t, err, codes.InvalidArgument)
			got := fieldViolations(err)
			if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, tc.want) }) {
				t.Errorf("field violations = %v, want one at %s…", got, tc.want)
			}
		})
	}
}
