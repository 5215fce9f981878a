package adapter_test

import (
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// seam adapter preview shows what a registered or a proposed mapping makes
// of sample records, and says no (exit 1) when a sample fails.
func TestCLIAdapterPreview(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	n.MustCLI(t, 0, "canonical", "register", "-f", seamtest.ExampleFile(t, "commerce_order.yaml"))
	n.MustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")
	n.MustCLI(t, 0, "contract", "register", "-f", seamtest.ExampleFile(t, "shop_orders_v1.yaml"))
	samples := seamtest.WriteFile(t, "samples.ndjson", seamtest.OrderLines(2)[0]+"\n"+`{"order_id":"ORD-0000000009","customer_id":5,"amount":"12x","currency":"EUR","status":"paid","created_at":"2026-03-01T10:00:00Z","items":1}`+"\n")

	out := n.MustCLI(t, exit.Failed, "adapter", "preview", "--subject", "shop.orders", samples)
	for _, want := range []string{"item_count", "items", "channel", "record 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview output lacks %q:\n%s", want, out)
		}
	}
	good := seamtest.WriteFile(t, "good.ndjson", seamtest.OrderLines(1)[0]+"\n")
	resp := n.MustJSON(t, "adapter", "preview", "-f", seamtest.ExampleFile(t, "shop_orders_v1.yaml"), good)
	fields := resp["records"].([]any)[0].(map[string]any)["fields"].([]any)
	if len(fields) != 12 {
		t.Errorf("proposed preview shows %d fields, want the 12 of commerce.order", len(fields))
	}
	n.MustCLI(t, exit.Usage, "adapter", "preview", good)
}
