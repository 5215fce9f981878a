// Package examples holds the reference contracts of the source document's
// incident — shop.orders v1 (integer customer_id), v2 (UUID customer_id with
// a migration back to the integer), and the commerce.order canonical model
// they map into — so the demo, the benchmarks and the tests use one copy.
package examples

import (
	_ "embed"
	"fmt"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// The YAML as people author it.
var (
	//go:embed shop_orders_v1.yaml
	ShopOrdersV1YAML []byte
	//go:embed shop_orders_v2.yaml
	ShopOrdersV2YAML []byte
	//go:embed commerce_order.yaml
	CommerceOrderYAML []byte
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
	m, err := contract.LoadCanonicalModel(CommerceOrderYAML, "commerce_order.yaml")
	if err != nil {
		panic(fmt.Sprintf("examples: embedded commerce_order.yaml does not load: %v", err))
	}
	return m
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
