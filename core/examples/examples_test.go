package examples_test

import (
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

func TestExamplesLoadAndValidate(t *testing.T) {
	for name, c := range map[string]interface{ GetSubject() string }{"v1": examples.ShopOrdersV1(), "v2": examples.ShopOrdersV2()} {
		if c.GetSubject() != "shop.orders" {
			t.Errorf("%s subject = %q, want shop.orders", name, c.GetSubject())
		}
	}
	if p := contract.Validate(examples.ShopOrdersV1()); len(p) > 0 {
		t.Errorf("v1 is invalid: %v", p)
	}
	if p := contract.Validate(examples.ShopOrdersV2()); len(p) > 0 {
		t.Errorf("v2 is invalid: %v", p)
	}
	if p := contract.ValidateCanonicalModel(examples.CommerceOrder()); len(p) > 0 {
		t.Errorf("commerce.order is invalid: %v", p)
	}
	if c := examples.PaySettlementsV1(); c.GetSubject() != "pay.settlements" || len(contract.Validate(c)) > 0 {
		t.Errorf("pay.settlements v1: subject %q, problems %v; want pay.settlements and none", c.GetSubject(), contract.Validate(c))
	}
	if m := examples.PaymentsSettlement(); m.GetName() != "payments.settlement" || len(contract.ValidateCanonicalModel(m)) > 0 {
		t.Errorf("payments.settlement: name %q, problems %v; want payments.settlement and none", m.GetName(), contract.ValidateCanonicalModel(m))
	}
	if first, second := examples.ShopOrdersV1(), examples.ShopOrdersV1(); first == second {
		t.Error("ShopOrdersV1 returned the same pointer twice; callers may modify their copy")
	}
}

// TestCustomerCatalog: the shop.orders versions compile into commerce.order
// against the customer catalog, and each call returns its own copy.
func TestCustomerCatalog(t *testing.T) {
	for name, c := range map[string]*contractv1.Contract{"v1": examples.ShopOrdersV1(), "v2": examples.ShopOrdersV2()} {
		if _, err := mapping.Compile(c, examples.CommerceOrder(), examples.CustomerCatalog()); err != nil {
			t.Errorf("shop.orders %s does not compile against the customer catalog: %v", name, err)
		}
	}
	first, second := examples.CustomerCatalog(), examples.CustomerCatalog()
	first["customer"][0].Name = "changed"
	if second["customer"][0].GetName() != "legacy-int" {
		t.Error("CustomerCatalog returned shared formats; callers may modify their copy")
	}
}
