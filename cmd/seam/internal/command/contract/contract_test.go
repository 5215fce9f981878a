package contract_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
)

// The source document's case through the CLI: shop.orders v2 switches
// customer_id from INT64 to UUID. Without notice it is refused and names
// the breaking rules and the consumers joining on customer_id; with enough
// notice and a migration it is SCHEDULED.
func TestCLIContractLifecycle(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	v1, v2 := seamtest.ExampleFile(t, "shop_orders_v1.yaml"), seamtest.ExampleFile(t, "shop_orders_v2.yaml")

	n.MustCLI(t, 0, "canonical", "register", "-f", seamtest.ExampleFile(t, "commerce_order.yaml"))
	if m := n.MustJSON(t, "canonical", "get", "commerce.order"); m["version"].(map[string]any)["name"] != "commerce.order" {
		t.Errorf("canonical get -o json = %v", m)
	}
	n.MustJSON(t, "canonical", "list")
	n.MustCLI(t, 0, "idmap", "namespace", "create", "customer", "--format", "legacy-int:int", "--format", "uuid:uuid")

	if out := n.MustCLI(t, 0, "contract", "check", "-f", v1); !strings.Contains(out, "shop.orders") {
		t.Errorf("check of a new subject says nothing of it:\n%s", out)
	}
	// The file as an argument, or by -f.
	n.MustCLI(t, 0, "contract", "register", v1)
	if out := n.MustCLI(t, 0, "contract", "register", "-f", v1); !strings.Contains(out, "unchanged") {
		t.Errorf("registering v1 again by -f: %s, want unchanged", out)
	}

	ltv := seamtest.WriteFile(t, "ltv.yaml", `
name: features.customer_ltv
owner: team-ml
inputs:
  - {subject: shop.orders, fields: [customer_id, amount], usage: JOIN_KEY}
produces: [features.customer_ltv]
`)
	dash := seamtest.WriteFile(t, "dash.yaml", `
name: dash.daily_revenue
owner: team-bi
inputs:
  - {subject: shop.orders, fields: [amount, currency], usage: FEATURE}
  - {dataset: features.customer_ltv, usage: PASSTHROUGH}
`)
	n.MustCLI(t, 0, "consumer", "register", "-f", ltv)
	n.MustCLI(t, 0, "consumer", "register", "-f", dash)
	if m := n.MustJSON(t, "consumer", "list", "--subject", "shop.orders"); len(m["consumers"].([]any)) != 2 {
		t.Errorf("consumer list --subject shop.orders = %v, want 2 consumers", m)
	}

	// Breaking without notice: refused, exit 1, names the rules and the
	// consumer that joins on customer_id.
	out := n.MustCLI(t, 1, "contract", "check", "-f", v2)
	for _, want := range []string{"FIELD_TYPE_CHANGED", "IDENTIFIER_FORMAT_CHANGED", "features.customer_ltv", "REFUSED"} {
		if !strings.Contains(out, want) {
			t.Errorf("contract check of v2 without notice does not mention %s:\n%s", want, out)
		}
	}
	check := map[string]any{}
	jsonOut, _, code := n.CLI(t, "contract", "check", "-f", v2, "-o", "json")
	if code != 1 || json.Unmarshal([]byte(jsonOut), &check) != nil || check["verdict"] != "VERDICT_REFUSED" {
		t.Errorf("contract check -o json: exit %d, verdict %v, want 1 and VERDICT_REFUSED\n%s", code, check["verdict"], jsonOut)
	}
	if out := n.MustCLI(t, 1, "contract", "register", "-f", v2); !strings.Contains(out, "notice") {
		t.Errorf("register of v2 without notice: error does not explain the notice:\n%s", out)
	}

	// With 15 days' notice (the subject owes 14) it is accepted as SCHEDULED.
	n.MustCLI(t, 0, "contract", "check", "-f", v2, "--effective", "+15d")
	reg := n.MustJSON(t, "contract", "register", "-f", v2, "--effective", "+15d")
	if st := reg["version"].(map[string]any)["status"]; st != "VERSION_STATUS_SCHEDULED" {
		t.Errorf("v2 with notice registered as %v, want VERSION_STATUS_SCHEDULED", st)
	}

	if m := n.MustJSON(t, "contract", "get", "shop.orders"); m["version"].(map[string]any)["version"].(float64) != 1 {
		t.Errorf("active version while v2 is scheduled = %v, want 1", m["version"].(map[string]any)["version"])
	}
	if out := n.MustCLI(t, 0, "contract", "list", "shop.orders"); !strings.Contains(out, "SCHEDULED") || !strings.Contains(out, "ACTIVE") {
		t.Errorf("contract list shows no ACTIVE v1 and SCHEDULED v2:\n%s", out)
	}
	n.MustJSON(t, "contract", "list")
	n.MustJSON(t, "contract", "history", "shop.orders")
	diff := n.MustJSON(t, "contract", "diff", "shop.orders", "1", "2")
	if diff["breaking"] != true {
		t.Errorf("contract diff 1 2: breaking = %v, want true", diff["breaking"])
	}

	radius := n.MustJSON(t, "blast-radius", "shop.orders", "--field", "customer_id")
	names := map[string]float64{}
	for _, c := range radius["consumers"].([]any) {
		c := c.(map[string]any)
		names[c["consumer"].(string)] = c["depth"].(float64)
	}
	if names["features.customer_ltv"] != 1 || names["dash.daily_revenue"] < 1 {
		t.Errorf("blast radius of customer_id = %v, want features.customer_ltv at depth 1 and dash.daily_revenue", names)
	}

	events := n.MustJSON(t, "events", "list", "--subject", "shop.orders")
	var types []string
	for _, e := range events["events"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	if !strings.Contains(strings.Join(types, " "), "EVENT_TYPE_CHANGE_ANNOUNCED") {
		t.Errorf("events of shop.orders = %v, want a CHANGE_ANNOUNCED", types)
	}
}

// "+14d" is counted from the registry's clock, not the client's: a
// breaking version owing exactly 14 days' notice is accepted with
// --effective +14d, as docs/walkthrough.md plans it, and SCHEDULED 14 days out.
func TestRelativeEffectiveTimeIsTheServers(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	v2 := seamtest.ExampleFile(t, "shop_orders_v2.yaml")

	n.MustCLI(t, 0, "contract", "check", v2, "--effective", "+14d")
	n.MustCLI(t, exit.Failed, "contract", "check", v2, "--effective", "+13d23h")
	before := time.Now()
	reg := n.MustJSON(t, "contract", "register", v2, "--effective", "+14d")
	v := reg["version"].(map[string]any)
	if v["status"] != "VERSION_STATUS_SCHEDULED" {
		t.Fatalf("v2 registered with --effective +14d as %v, want SCHEDULED", v["status"])
	}
	eff, err := time.Parse(time.RFC3339, v["effective_time"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := before.Add(14*24*time.Hour-time.Second), time.Now().Add(14*24*time.Hour+time.Second); eff.Before(lo) || eff.After(hi) {
		t.Errorf("effective %s, want 14 days after the registration (%s..%s)", eff, lo, hi)
	}
	n.MustCLI(t, exit.Usage, "contract", "check", v2, "--effective", "+soon")
}
