package contract_test

import (
	"errors"
	"testing"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
)

// FuzzLoad checks that no document makes Load panic or return a contract
// and an error together, and that every failure is a *LoadError.
func FuzzLoad(f *testing.F) {
	f.Add(examples.ShopOrdersV1YAML)
	f.Add(examples.ShopOrdersV2YAML)
	f.Add([]byte(`{"fields": [{"name": "a", "type": 3, "items": {"fields": []}}]}`))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("mapping: &x {fields: {a: {default: *x, constant: [*x, *x]}}}\n"))
	f.Add([]byte("fields: [{name: a, min: .inf, max: -.inf}]\nmapping: {fields: {a: {default: [[[{}]]]}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := contract.Load(data, "fuzz.yaml")
		if err != nil {
			var le *contract.LoadError
			if c != nil || !errors.As(err, &le) {
				t.Fatalf("Load = %v, %T %v; want nil and a *LoadError", c, err, err)
			}
			return
		}
		_ = contract.Validate(c)
	})
}
