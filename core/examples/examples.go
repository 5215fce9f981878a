// Package examples holds the reference contracts of the source document's
// incident — shop.orders v1 (integer customer_id), v2 (UUID customer_id with
// a migration back to the integer), and the commerce.order canonical model
// they map into — and of the payments incident the tests of `seam incident`
// and of proposals play (pay.settlements v1 with an integer merchant_id and
// the payments.settlement model), so the demo, the benchmarks and the tests
// use one copy.
package examples

import (
	_ "embed"
	"fmt"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/mapping"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// The YAML as people author it.
var (
	//go:embed shop_orders_v1.yaml
	ShopOrdersV1YAML []byte
	//go:embed shop_orders_v2.yaml
	ShopOrdersV2YAML []byte
	//go:embed commerce_order.yaml
	CommerceOrderYAML []byte
	//go:embed pay_settlements_v1.yaml
	PaySettlementsV1YAML []byte
	//go:embed payments_settlement.yaml
	PaymentsSettlementYAML []byte
)

// ShopOrdersV1 returns a fresh copy of shop.orders v1.
func ShopOrdersV1() *contractv1.Contract {
	return mustContract(ShopOrdersV1YAML, "shop_orders_v1.yaml")
}

// ShopOrdersV2 returns a fresh copy of shop.orders v2.
func ShopOrdersV2() *contractv1.Contract {
	return mustContract(ShopOrdersV2YAML, "shop_orders_v2.yaml")
}

// CommerceOrder returns a fresh copy of the commerce.order canonical model.
func CommerceOrder() *contractv1.CanonicalModel {
	return mustModel(CommerceOrderYAML, "commerce_order.yaml")
}

// PaySettlementsV1 returns a fresh copy of pay.settlements v1.
func PaySettlementsV1() *contractv1.Contract {
	return mustContract(PaySettlementsV1YAML, "pay_settlements_v1.yaml")
}

// PaymentsSettlement returns a fresh copy of the payments.settlement
// canonical model.
func PaymentsSettlement() *contractv1.CanonicalModel {
	return mustModel(PaymentsSettlementYAML, "payments_settlement.yaml")
}

// CustomerCatalog returns a fresh copy of the customer namespace as idmap
// has it in the reference scenarios: the legacy-int and uuid formats that
// shop.orders v1 and v2 identify customers by, for compiling their
// mappings.
func CustomerCatalog() mapping.StaticCatalog {
	return mapping.StaticCatalog{"customer": {
		{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
		{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
	}}
}

// mustContract loads an embedded contract. The files are part of the
// binary and covered by this package's test, so failing here is a build
// defect, not bad input.
func mustContract(data []byte, name string) *contractv1.Contract {
	c, err := contract.Load(data, name)
	if err != nil {
		panic(fmt.Sprintf("examples: embedded %s does not load: %v", name, err))
	}
	return c
}

// mustModel loads an embedded canonical model, as mustContract does a
// contract.
func mustModel(data []byte, name string) *contractv1.CanonicalModel {
	m, err := contract.LoadCanonicalModel(data, name)
	if err != nil {
		panic(fmt.Sprintf("examples: embedded %s does not load: %v", name, err))
	}
	return m
}
