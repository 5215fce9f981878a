package contract_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// What MarshalYAML writes, Load reads back as the same contract: numbers
// stay numbers (a max_length of 11, not "11", which Load refuses).
func TestMarshalYAMLLoadsBack(t *testing.T) {
	t.Parallel()
	n, lo, hi := int64(11), 0.5, math.Inf(1)
	c := &contractv1.Contract{
		Subject: "shop.orders",
		Owner:   "team",
		Fields: []*contractv1.Field{
			{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_STRING, MaxLength: &n, Key: true, Required: true},
			{Name: "amount", Type: contractv1.FieldType_FIELD_TYPE_DOUBLE, Min: &lo, Max: &hi},
		},
	}
	out, back := roundTrip(t, c, "out.yaml")
	if !strings.Contains(string(out), "max_length: 11\n") {
		t.Errorf("got\n%s\nwant max_length: 11 as a number", out)
	}
	if !proto.Equal(back, c) {
		t.Errorf("got %v, want %v", back, c)
	}
}

// The reference contracts, with mappings, defaults (google.protobuf.Value)
// and checks, come back the same through MarshalYAML and Load.
func TestMarshalYAMLExamples(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string][]byte{"shop_orders_v1": examples.ShopOrdersV1YAML, "shop_orders_v2": examples.ShopOrdersV2YAML} {
		c := mustLoad(t, doc, name)
		_, back := roundTrip(t, c, name+" again")
		if !proto.Equal(back, c) {
			t.Errorf("%s: got %v, want %v", name, back, c)
		}
	}
}

// mustLoad loads doc, failing the test when it does not load.
func mustLoad(t *testing.T, doc []byte, source string) *contractv1.Contract {
	t.Helper()
	c, err := contract.Load(doc, source)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip writes c with MarshalYAML and loads what it wrote as source,
// failing the test when either fails; it returns the YAML and the
// contract read back.
func roundTrip(t *testing.T, c *contractv1.Contract, source string) ([]byte, *contractv1.Contract) {
	t.Helper()
	out, err := contract.MarshalYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := contract.Load(out, source)
	if err != nil {
		t.Fatalf("Load of what MarshalYAML wrote: %v\n%s", err, out)
	}
	return out, back
}
