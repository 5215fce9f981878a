package incident_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/core/record/recordtest"
	gateservice "github.com/seamdata/seam/services/gate"
)

func settlements(t *testing.T, day, n int, merchant func(i int) string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"settlement_id":"SET-%08d","merchant_id":%s,"amount":%d.25,"currency":"EUR","settled_at":"2026-03-%02dT10:%02d:00Z"}`+"\n",
			day*10000+i, merchant(i), 10+i, day, i%60)
	}
	return seamtest.WriteFile(t, fmt.Sprintf("day%d.ndjson", day), b.String())
}

// setupSettlements registers the feed and sends a good day 7 and a day 8
// whose merchant ids arrive as merchant(i).
func setupSettlements(t *testing.T, n *seamtest.Node, merchant func(i int) string) {
	t.Helper()
	n.MustCLI(t, 0, "idmap", "namespace", "create", "merchant", "--format", "legacy-int:int")
	var known strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&known, "%d\n", 1000+i)
	}
	n.MustCLI(t, 0, "idmap", "import", "merchant", seamtest.WriteFile(t, "known.csv", known.String()), "--members", "legacy-int", "--no-header")
	n.MustCLI(t, 0, "canonical", "register", "-f", seamtest.ExampleFile(t, "payments_settlement.yaml"))
	n.MustCLI(t, 0, "contract", "register", "-f", seamtest.ExampleFile(t, "pay_settlements_v1.yaml"))
	n.MustCLI(t, 0, "consumer", "register", "-f", seamtest.FixtureFile(t, "payouts_consumer.yaml"))
	n.MustCLI(t, 0, "gate", "ingest", settlements(t, 7, 50, func(i int) string { return fmt.Sprint(1000 + i) }), "--subject", "pay.settlements", "--partition", "2026-03-07")
	n.Seal(t, "pay.settlements", "2026-03-07")
	n.MustCLI(t, 0, "gate", "ingest", settlements(t, 8, 200, merchant), "--subject", "pay.settlements", "--partition", "2026-03-08")
	// The gate judges a day whole when it is sealed: then the change alert.
	n.Seal(t, "pay.settlements", "2026-03-08")
}

// uuidPairs is the merchant master's sync for merchants that arrive as
// random UUIDs: a CSV of the UUID and the integer id of each of the first
// n merchants.
func uuidPairs(n int) string {
	var b strings.Builder
	b.WriteString("uuid,legacy_int\n")
	for i := range n {
		fmt.Fprintf(&b, "%s,%d\n", recordtest.RandomUUID(i), 1000+i)
	}
	return b.String()
}

func changeRules(t *testing.T, changes any) []string {
	t.Helper()
	var out []string
	for _, c := range changes.([]any) {
		m := c.(map[string]any)
		out = append(out, m["rule"].(string)+" "+m["path"].(string))
	}
	slices.Sort(out)
	return out
}

func wantChanges(t *testing.T, what string, changes any, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := changeRules(t, changes); !slices.Equal(got, want) {
		t.Errorf("%s: changes = %q, want %q", what, got, want)
	}
}

func jsonOf(t *testing.T, out string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	return m
}

// applyReleasesAll runs `seam incident SUBJECT --apply -o json` with
// args and fails the test unless the replay released all want records it
// held and the window adds up; it returns the command's JSON.
func applyReleasesAll(t *testing.T, n *seamtest.Node, want float64, args ...string) map[string]any {
	t.Helper()
	res := jsonOf(t, n.MustCLI(t, 0, append(append([]string{"incident"}, args...), "--apply", "-o", "json")...))
	if rec := res["reconciliation"].(map[string]any); rec["released"] != want || rec["still_held"] != 0.0 || rec["adds_up"] != true {
		t.Errorf("reconciliation = %v, want all %v released", rec, want)
	}
	return res
}

// An integer id that becomes a zero-padded template string, fixed by
// hand with the commands infer prints: the rule is read off the values and
// verified on every record, the proposal passes contract check with
// exactly the expected changes once idmap has the format and the rule,
// and the dry run releases every held record.
func TestTemplateIdentifierByHand(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	setupSettlements(t, n, func(i int) string { return fmt.Sprintf(`"MER-%08d"`, 1000+i*7) })

	p := n.MustJSON(t, "contract", "infer", "pay.settlements")
	wantChanges(t, "infer", p["changes"],
		"FIELD_TYPE_CHANGED fields.merchant_id.type",
		"IDENTIFIER_FORMAT_CHANGED fields.merchant_id.identifier.format",
		"MAPPING_CHANGED mapping.fields.merchant_id")
	m := p["migrations"].([]any)[0].(map[string]any)
	if m["rule"] != "legacy-int→mer-code template MER-{int:08} (reversible)" || m["matched"] != 200.0 || m["wrong"] != 0.0 || m["table_only"] != false {
		t.Fatalf("migration = %v, want the MER-{int:08} rule verified on 200 of 200 values", m)
	}
	cf := m["create_format"].(map[string]any)
	if cf["name"] != "mer-code" || cf["pattern"] != "^MER-[0-9]{8}$" {
		t.Fatalf("format to create = %v", cf)
	}

	// Day 7 holds nothing: nothing to infer from, and it says so.
	if out := n.MustCLI(t, 1, "contract", "infer", "pay.settlements", "--partition", "2026-03-07"); !strings.Contains(out, "holds no records of pay.settlements in partitions 2026-03-07") {
		t.Errorf("infer on an empty partition:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "v2.yaml")
	text := n.MustCLI(t, 0, "contract", "infer", "pay.settlements", "--partition", "2026-03-08", "--out", file)
	for _, want := range []string{"seam idmap namespace add-format merchant --format 'mer-code:string:^MER-[0-9]{8}$'", "next: seam contract check -f " + file} {
		if !strings.Contains(text, want) {
			t.Errorf("infer's summary lacks %q:\n%s", want, text)
		}
	}
	// As it stands the registry refuses it: the format does not exist.
	out := n.MustCLI(t, 1, "contract", "check", "-f", file, "--override-reason", "INC-1")
	if !strings.Contains(out, "IDMAP_FORMAT_NOT_FOUND") || !strings.Contains(out, "seam idmap namespace add-format merchant") {
		t.Errorf("check before the format exists does not say how to add it:\n%s", out)
	}
	// The commands infer printed, then the check passes.
	n.MustCLI(t, 0, "idmap", "namespace", "add-format", "merchant", "--format", "mer-code:string:^MER-[0-9]{8}$")
	args := append([]string{"idmap", "rule", "set", "merchant"}, strings.Fields(strings.ReplaceAll(m["rule_flags"].(string), "'", ""))...)
	for _, s := range m["samples"].([]any) {
		args = append(args, "--sample", s.(string))
	}
	n.MustCLI(t, 0, args...)
	// With an admin's override no notice is owed any more, and check says
	// so; a viewer's override waives nothing.
	if out := n.MustCLI(t, 0, "contract", "check", "-f", file, "--override-reason", "INC-1"); !strings.Contains(out, "notice: none owed, the 14d notice is waived by the override (INC-1)") || strings.Contains(out, "notice owed") {
		t.Errorf("contract check with an override:\n%s", out)
	}
	if out, _, _ := n.CLI(t, "--token", n.Viewer, "contract", "check", "-f", file, "--override-reason", "INC-1"); strings.Contains(out, "waived") || !strings.Contains(out, "OVERRIDE_REQUIRES_ADMIN") {
		t.Errorf("contract check with a viewer's override:\n%s", out)
	}
	check := n.MustJSON(t, "contract", "check", "-f", file, "--override-reason", "INC-1: merchants arrive as MER codes")
	wantChanges(t, "check", check["changes"],
		"FIELD_TYPE_CHANGED fields.merchant_id.type",
		"IDENTIFIER_FORMAT_CHANGED fields.merchant_id.identifier.format",
		"MAPPING_CHANGED mapping.fields.merchant_id")
	dry := check["dry_run"].(map[string]any)
	if check["verdict"] != "VERDICT_BREAKING_SCHEDULABLE" || dry["passed"] != 200.0 || dry["sampled"] != 200.0 {
		t.Fatalf("check = %v, dry run %v; want BREAKING_SCHEDULABLE (notice waived), 200 of 200 passing", check["verdict"], dry)
	}
	n.MustCLI(t, 0, "contract", "register", "-f", file, "--override-reason", "INC-1: merchants arrive as MER codes")
	plan := n.MustJSON(t, "quarantine", "replay", "pay.settlements", "--from", "2026-03-08", "--to", "2026-03-08", "--dry-run")
	if seamtest.JSONInt(plan["would_release"]) != 200 {
		t.Errorf("replay plan = %v, want 200 would release", plan)
	}
}

// An integer id that becomes a random UUID: the incident says plainly that
// only a table will do, rule inference on the source's pairs agrees, a
// non-admin --apply changes nothing, and an admin's --apply with the
// pairs contains, loads the table, registers, releases and replays: what
// the table maps is released, the rest stays held, and it adds up.
func TestRandomUUIDIncident(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	setupSettlements(t, n, func(i int) string { return fmt.Sprintf("%q", recordtest.RandomUUID(i)) })

	view := n.MustCLI(t, 0, "incident", "pay.settlements")
	viewHas(t, view, "200 records held since partition 2026-03-08", "UNANNOUNCED_CHANGE merchant_id",
		"only a lookup table will do", "random (version 4)", "give the pairs with --pairs", "finance.merchant_payouts")
	// Without the pairs, --apply stops before changing anything.
	out := n.MustCLI(t, 1, "incident", "pay.settlements", "--apply", "--reason", "INC-2")
	if !strings.Contains(out, "nothing was changed") {
		t.Errorf("--apply without the pairs does not say nothing was changed:\n%s", out)
	}

	// The source's sync misses 20 merchants.
	file := seamtest.WriteFile(t, "pairs.csv", uuidPairs(180))
	n.MustCLI(t, 0, "idmap", "namespace", "add-format", "merchant", "--format", "uuid:uuid")
	out = n.MustCLI(t, 1, "idmap", "rule", "infer", "merchant", "--from", "uuid", "--to", "legacy-int", file)
	if !strings.Contains(out, "only a lookup table will do") || !strings.Contains(out, "random (version 4)") {
		t.Errorf("rule infer on random UUIDs:\n%s", out)
	}

	// A viewer may look but not fix.
	out, errOut, code := n.CLI(t, "--token", n.Viewer, "incident", "pay.settlements", "--pairs", file, "--apply", "--reason", "INC-2")
	if code == 0 || !strings.Contains(out+errOut, "nothing was changed") && !strings.Contains(out+errOut, "permission denied") {
		t.Errorf("a viewer's --apply exited %d:\n%s%s", code, out, errOut)
	}
	if c := n.MustJSON(t, "gate", "containments"); strings.Contains(fmt.Sprint(c), "pay.settlements") {
		t.Errorf("a viewer's --apply contained the source: %v", c)
	}

	v2 := filepath.Join(t.TempDir(), "v2.yaml")
	view = n.MustCLI(t, 0, "incident", "pay.settlements", "--pairs", file, "--out", v2)
	if !strings.Contains(view, "180 would be released (90.0%), 20 would stay (ID_UNMAPPED 20)") {
		t.Errorf("the dry run does not say 180 of 200 would be released:\n%s", view)
	}
	// The proposal written passes contract check once the table the
	// incident names is imported, with exactly the expected changes, and
	// the check's own dry run (through the adapter) agrees.
	n.MustCLI(t, 1, "contract", "check", "-f", v2, "--override-reason", "INC-2")
	n.MustCLI(t, 0, "idmap", "import", "merchant", file, "--from", "uuid", "--to", "legacy-int")
	check := n.MustJSON(t, "contract", "check", "-f", v2, "--override-reason", "INC-2")
	wantChanges(t, "check", check["changes"],
		"FIELD_TYPE_CHANGED fields.merchant_id.type",
		"IDENTIFIER_FORMAT_CHANGED fields.merchant_id.identifier.format",
		"MAPPING_CHANGED mapping.fields.merchant_id")
	if d := check["dry_run"].(map[string]any); d["passed"] != 180.0 || d["sampled"] != 200.0 {
		t.Errorf("check's dry run = %v, want 180 of 200", d)
	}
	res := jsonOf(t, n.MustCLI(t, 0, "incident", "pay.settlements", "--pairs", file, "--apply", "--reason", "INC-2: merchants arrive as UUIDs", "-o", "json"))
	wantChanges(t, "incident", res["proposal"].(map[string]any)["changes"],
		"FIELD_TYPE_CHANGED fields.merchant_id.type",
		"IDENTIFIER_FORMAT_CHANGED fields.merchant_id.identifier.format",
		"MAPPING_CHANGED mapping.fields.merchant_id")
	if m := res["migrations"].([]any)[0].(map[string]any); m["field"] != "merchant_id" || m["new"] != "uuid" || m["target"] != "legacy-int" || m["ready"] != true {
		t.Errorf("migration in JSON = %v", m)
	}
	rec := res["reconciliation"].(map[string]any)
	if rec["held_before"] != 200.0 || rec["released"] != 180.0 || rec["still_held"] != 20.0 || rec["adds_up"] != true {
		t.Fatalf("reconciliation = %v, want 200 = 180 + 20", rec)
	}
	// The incident's alerts no longer hold after the replay: its
	// re-judgment of the day resolved them, and says so.
	var after []string
	for _, a := range rec["alerts_after"].([]any) {
		a := a.(map[string]any)
		after = append(after, fmt.Sprintf("%s %v %s by %v", a["kind"], a["field"], a["state"], a["resolved_by"]))
	}
	slices.Sort(after)
	replayBy := "replay incident-pay.settlements-v2-2026-03-08..2026-03-08"
	if want := []string{"MATCH_RATE merchant_id RESOLVED by " + replayBy, "UNANNOUNCED_CHANGE merchant_id RESOLVED by " + replayBy}; !slices.Equal(after, want) {
		t.Errorf("the incident's alerts after --apply = %q, want %q", after, want)
	}
	// The day is judged again by v2: its version and check table are
	// v2's, and no check still counts the 180 records released, nor the
	// 20 held only for want of a pair as failing v1's type.
	day := n.MustJSON(t, "gate", "partition", "pay.settlements", "2026-03-08")
	st := day
	if p, ok := day["partition"].(map[string]any); ok {
		st = p
	}
	if st["contract_version"] != 2.0 {
		t.Errorf("partition after the fix judged by version %v, want 2:\n%v", st["contract_version"], st)
	}
	for _, c := range st["checks"].([]any) {
		c := c.(map[string]any)
		if strings.HasPrefix(c["check"].(string), "merchant_id.") && seamtest.JSONInt(c["failures"]) > 0 {
			t.Errorf("check %v of the day after the fix still counts failures: %v", c["check"], c)
		}
	}
	if out := n.MustCLI(t, 0, "alerts", "list", "pay.settlements"); strings.Contains(out, "2026-03-08") {
		t.Errorf("seam alerts list after the fix still lists the incident's alerts:\n%s", out)
	}
	var names []string
	for _, s := range res["steps"].([]any) {
		st := s.(map[string]any)
		names = append(names, st["name"].(string))
		if st["failed"] != nil && st["failed"] != "" {
			t.Errorf("step %v failed", st)
		}
	}
	// The table is loaded already, so no import step.
	if want := []string{"contain the source", "translate merchant/uuid→legacy-int", "register pay.settlements v2", "release the source", "replay 2026-03-08..2026-03-08 through v2"}; !slices.Equal(names, want) {
		t.Errorf("steps = %q, want %q", names, want)
	}
	if v := n.MustJSON(t, "contract", "get", "pay.settlements"); !strings.Contains(fmt.Sprint(v), "VERSION_STATUS_ACTIVE") || seamtest.JSONInt(v["version"].(map[string]any)["version"]) != 2 {
		t.Errorf("active version after --apply: %v", v)
	}
	// A second --apply finds nothing left to change a version for, and
	// releases nothing twice.
	again := n.MustCLI(t, 0, "incident", "pay.settlements", "--pairs", file)
	if !strings.Contains(again, "20 records held") || !strings.Contains(again, "need no change to v2") {
		t.Errorf("incident after the fix:\n%s", again)
	}
	// The change alerts the replay resolved are no longer what changed.
	if strings.Contains(again, "what changed:") {
		t.Errorf("incident after the fix still lists resolved alerts as what changed:\n%s", again)
	}
	// The day resent as it was, twice, holds each still unmapped record
	// once: the copies are duplicates of what is held, not held again.
	held := func() map[string]int64 {
		st := n.MustJSON(t, "quarantine", "stats", "pay.settlements", "--state", "held")
		out := map[string]int64{"total": seamtest.JSONInt(st["total"])}
		for _, r := range st["by_reason"].([]any) {
			r := r.(map[string]any)
			out[r["key"].(string)] = seamtest.JSONInt(r["count"])
		}
		return out
	}
	day8 := settlements(t, 8, 200, func(i int) string { return fmt.Sprintf("%q", recordtest.RandomUUID(i)) })
	time.Sleep(gateservice.DefaultContractRefresh + 100*time.Millisecond) // the gate judges by v2 from then on
	for _, batch := range []string{"resend-1", "resend-2"} {
		resp := n.MustJSON(t, "gate", "ingest", day8, "--subject", "pay.settlements", "--partition", "2026-03-08", "--batch-id", batch)
		if s := resp["summary"].(map[string]any); seamtest.JSONInt(s["duplicates"]) != 200 {
			t.Errorf("resend %s: %v, want all 200 duplicates (180 of released keys, 20 of held records)", batch, s)
		}
		if h := held(); h["ID_UNMAPPED"] != 20 {
			t.Errorf("after %s the unmapped records are held %d times over, want once each (20): %v", batch, h["ID_UNMAPPED"], h)
		}
	}
	// A replay that releases nothing (the 20 unmapped stay) gives no
	// consumer anything to rerun.
	nothing := n.MustJSON(t, "quarantine", "replay", "pay.settlements", "--from", "2026-03-08", "--to", "2026-03-08", "--summary-only")
	if seamtest.JSONInt(nothing["released"]) != 0 || nothing["rerun_consumers"] != nil {
		t.Errorf("a replay releasing nothing = %v, want no consumer to rerun", nothing)
	}
}

func shipments(t *testing.T, day, n int, carrierKey, weight string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"shipment_id":"S-%d-%d","%s":%q,"weight_kg":`+weight+"}\n", day, i, carrierKey, []string{"DHL", "UPS", "GLS"}[i%3], 1+i%40)
	}
	return seamtest.WriteFile(t, fmt.Sprintf("ship%d.ndjson", day), b.String())
}

// setupShipments registers the shipment model and v1 of fleet.shipments.
func setupShipments(t *testing.T, n *seamtest.Node) {
	t.Helper()
	n.MustCLI(t, 0, "canonical", "register", "-f", seamtest.FixtureFile(t, "shipment_model.yaml"))
	n.MustCLI(t, 0, "contract", "register", "-f", seamtest.FixtureFile(t, "shipments_v1.yaml"))
}

// containedShipments starts a node with fleet.shipments contained (a
// false alarm) and 40 shipments held on each day of March 2026 from
// first to last.
func containedShipments(t *testing.T, first, last int) *seamtest.Node {
	t.Helper()
	n := seamtest.StartNode(t)
	setupShipments(t, n)
	n.MustCLI(t, 0, "gate", "contain", "fleet.shipments", "--reason", "a false alarm")
	for day := first; day <= last; day++ {
		n.MustCLI(t, 0, "gate", "ingest", shipments(t, day, 40, "carrier", "%d"), "--subject", "fleet.shipments", "--partition", fmt.Sprintf("2026-03-%02d", day))
	}
	return n
}

// viewHas fails the test for each of want the incident view lacks.
func viewHas(t *testing.T, view string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(view, w) {
			t.Errorf("incident view lacks %q:\n%s", w, view)
		}
	}
}

// A field renamed and a type widened, each fixed with --apply: the
// inferred version passes contract check with exactly the expected
// changes (additive both, so no notice is owed), and the replay releases
// every held record.
func TestRenameAndWidening(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		carrierKey string
		weight     string
		want       []string
	}{
		{"renamed", "carrier_code", "%d", []string{"FIELD_RENAMED fields.carrier_code", "CHECK_CHANGED checks.carrier_nulls.rule", "MAPPING_CHANGED mapping.fields.carrier"}},
		{"widened", "carrier", "%d.5", []string{"FIELD_TYPE_WIDENED fields.weight_kg.type"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := seamtest.StartNode(t)
			setupShipments(t, n)
			n.MustCLI(t, 0, "gate", "ingest", shipments(t, 7, 30, "carrier", "%d"), "--subject", "fleet.shipments", "--partition", "2026-03-07")
			n.MustCLI(t, 0, "gate", "ingest", shipments(t, 8, 120, tt.carrierKey, tt.weight), "--subject", "fleet.shipments", "--partition", "2026-03-08")

			file := filepath.Join(t.TempDir(), "v2.yaml")
			n.MustCLI(t, 0, "contract", "infer", "fleet.shipments", "--out", file)
			check := n.MustJSON(t, "contract", "check", "-f", file)
			wantChanges(t, "check", check["changes"], tt.want...)
			if check["verdict"] != "VERDICT_ADDITIVE" || check["dry_run"].(map[string]any)["passed"] != 120.0 {
				t.Errorf("check: %v, dry run %v; want ADDITIVE with 120 of 120 passing", check["verdict"], check["dry_run"])
			}
			res := applyReleasesAll(t, n, 120, "fleet.shipments", "--reason", "INC-3")
			if d := res["dry_run"].(map[string]any); d["passed"] != 120.0 {
				t.Errorf("incident dry run = %v, want 120 passed", d)
			}
		})
	}
}

// An integer id that becomes the UUIDv5 of itself: no rule translates the
// UUIDs back, but the known merchants derive them, so the incident finds
// the namespace and --apply loads the table it generates from them.
func TestUUIDv5Incident(t *testing.T) {
	t.Parallel()
	url, _ := idrule.ParseUUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")
	n := seamtest.StartNode(t)
	setupSettlements(t, n, func(i int) string {
		return fmt.Sprintf("%q", idrule.FormatUUID(idrule.UUIDv5(url, fmt.Sprint(1000+i))))
	})
	view := n.MustCLI(t, 0, "incident", "pay.settlements")
	viewHas(t, view, "UUIDv5 of a known legacy-int id in namespace 6ba7b811-9dad-11d1-80b4-00c04fd430c8 (the RFC 9562 URL namespace)",
		"import the uuid→legacy-int table (5000 pairs)", "--apply generates the pairs: UUIDv5 of the 5000 known legacy-int ids", "200 would be released (100.0%)")
	applyReleasesAll(t, n, 200, "pay.settlements", "--reason", "INC-4")
}

// A source contained while nothing had changed: the incident proposes no
// version, only release and replay, and --apply releases every record.
func TestContainedWithoutChange(t *testing.T) {
	t.Parallel()
	n := containedShipments(t, 8, 8)
	view := n.MustCLI(t, 0, "incident", "fleet.shipments")
	viewHas(t, view, "CONTAINED", "need no change to v1", "release the source", "replay 2026-03-08..2026-03-08 through v1")
	if strings.Contains(view, "register fleet.shipments") {
		t.Errorf("a version is proposed where none is needed:\n%s", view)
	}
	applyReleasesAll(t, n, 40, "fleet.shipments", "--reason", "false alarm")
}

// Without a change alert the window starts at the oldest of the newest
// run of partitions holding records of the shape the fix takes, found
// past the sample --limit bounds: three contained days, a sample of 50
// records, and the replay releases all three days.
func TestWindowWithoutAlertReachesPastTheSample(t *testing.T) {
	t.Parallel()
	n := containedShipments(t, 8, 10)
	view := n.MustCLI(t, 0, "incident", "fleet.shipments", "--limit", "50")
	viewHas(t, view, "the incident's window: 2026-03-08..2026-03-10 (3 partitions, 120 records held); the proposal read 50 of them",
		"replay 2026-03-08..2026-03-10 through v1", "the replay runs on all 120 held records of 2026-03-08..2026-03-10, not only on the 50 read")
	applyReleasesAll(t, n, 120, "fleet.shipments", "--limit", "50", "--reason", "false alarm")
}

// Bad input gets a message naming what and where, and a usage exit.
func TestIncidentBadInput(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"incident", "nope.subject"}, `subject "nope.subject" not found`},
		{[]string{"contract", "infer", "nope.subject"}, `subject "nope.subject" not found`},
		{[]string{"incident", "nope.subject", "--apply"}, "--apply needs --reason"},
		{[]string{"incident", "nope.subject", "--pairs", "/nonexistent.csv"}, `subject "nope.subject" not found`},
		{[]string{"contract", "infer", "x", "--min-share", "2"}, "--min-share 2: give a share from 0 to 1"},
		{[]string{"contract", "infer", "x", "--limit", "0"}, "--limit 0: give 1 to"},
		{[]string{"idmap", "rule", "infer", "nope", "--from", "a", "--to", "b"}, `namespace "nope" not found`},
		{[]string{"idmap", "rule", "infer", "nope"}, "give --from and --to"},
	} {
		out := n.MustCLI(t, exit.Usage, tt.args...)
		if !strings.Contains(out, tt.want) || strings.Contains(out, "rpc error") {
			t.Errorf("seam %s:\n%s\nwant it to say %q, without the transport's wording", strings.Join(tt.args, " "), out, tt.want)
		}
	}
}

// --apply stops at the first step that fails, says what is done, and a
// second --apply once the cause is fixed finishes the job.
func TestApplyStopsAndResumes(t *testing.T) {
	t.Parallel()
	n := seamtest.StartNode(t)
	setupSettlements(t, n, func(i int) string { return fmt.Sprintf("%q", recordtest.RandomUUID(i)) })
	good := uuidPairs(200)
	// One line of the sync is broken: the import refuses the file whole.
	bad := seamtest.WriteFile(t, "bad.csv", good+"NOT-A-UUID,7\n")
	out := n.MustCLI(t, 1, "incident", "pay.settlements", "--pairs", bad, "--apply", "--reason", "INC-5")
	for _, want := range []string{"1. contain the source: contained", "2. add format merchant/uuid: format added", "3. import the uuid→legacy-int table (201 pairs): FAILED", "step 3 (import the uuid→legacy-int table (201 pairs)) failed", "steps 1 to 2 are done"} {
		if !strings.Contains(out, want) {
			t.Errorf("a failed --apply lacks %q:\n%s", want, out)
		}
	}
	if v := n.MustJSON(t, "contract", "get", "pay.settlements"); seamtest.JSONInt(v["version"].(map[string]any)["version"]) != 1 {
		t.Fatalf("a failed --apply went past the failing step: %v", v)
	}
	good2 := seamtest.WriteFile(t, "good.csv", good)
	out = n.MustCLI(t, 0, "incident", "pay.settlements", "--pairs", good2, "--apply", "--reason", "INC-5")
	for _, want := range []string{"1. contain the source: already done", "import the uuid→legacy-int table (200 pairs): 200 pairs received",
		"2026-03-08: 200 held, 200 released, 0 still held (1 of 1 partitions)", "200 held, 200 released, 0 still held; rerun in order: finance.merchant_payouts",
		"held before 200 = released 200 + still held 0  ✓"} {
		if !strings.Contains(out, want) {
			t.Errorf("the second --apply lacks %q:\n%s", want, out)
		}
	}
}
