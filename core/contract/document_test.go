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
	out, err := contract.MarshalYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "max_length: 11\n") {
		t.Errorf("got\n%s\nwant max_length: 11 as a number", out)
	}
	back, err := contract.Load(out, "out.yaml")
	if err != nil {
		t.Fatalf("Load of what MarshalYAML wrote: %v\n%s", err, out)
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
		c, err := contract.Load(doc, name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := contract.MarshalYAML(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := contract.Load(out, name+" again")
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if !proto.Equal(back, c) {
			t.Errorf("%s: got %v, want %v", name, back, c)
		}
	}
}
