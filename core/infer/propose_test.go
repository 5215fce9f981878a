package infer_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/infer"
	"github.com/seamdata/seam/core/record/recordtest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// A payments feed whose merchant_id is an integer of the merchant master,
// and the canonical model it maps into.
var (
	settlementsV1   = string(examples.PaySettlementsV1YAML)
	settlementModel = string(examples.PaymentsSettlementYAML)
)

var merchantNS = &idmapv1.Namespace{Name: "merchant", Formats: []*idmapv1.Format{
	{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
}}

func loadContract(t testing.TB, doc string) *contractv1.Contract {
	t.Helper()
	c, err := contract.Load([]byte(doc), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if ps := contract.Validate(c); len(ps) > 0 {
		t.Fatal(ps)
	}
	return c
}

func loadModel(t testing.TB, doc string) *contractv1.CanonicalModel {
	t.Helper()
	m, err := contract.LoadCanonicalModel([]byte(doc), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ndjson(partition string, lines ...string) []infer.Record {
	out := make([]infer.Record, len(lines))
	for i, l := range lines {
		out[i] = infer.Record{Format: recordv1.Format_FORMAT_NDJSON, Raw: []byte(l), Partition: partition, Position: int64(i + 1)}
	}
	return out
}

// propose runs Propose and checks what every proposal must be: a valid
// contract whose YAML loads back to the same message.
func propose(t *testing.T, in infer.Input) *infer.Proposal {
	t.Helper()
	p, err := infer.Propose(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := contract.Load(p.YAML, "proposal.yaml")
	if err != nil {
		t.Fatalf("the proposal's YAML does not load: %v\n%s", err, p.YAML)
	}
	if !proto.Equal(back, p.Contract) {
		t.Fatalf("the proposal's YAML loads as\n%v\nnot\n%v\n%s", back, p.Contract, p.YAML)
	}
	return p
}

// rules lists the changes as "RULE path", sorted.
func rules(p *infer.Proposal) []string {
	var out []string
	for _, c := range p.Changes {
		out = append(out, c.GetRule()+" "+c.GetPath())
	}
	slices.Sort(out)
	return out
}

func wantRules(t *testing.T, p *infer.Proposal, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := rules(p); !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q\n%s", got, want, p.YAML)
	}
}

func settlement(i int, merchant string) string {
	return fmt.Sprintf(`{"settlement_id":"SET-%08d","merchant_id":%s,"amount":%d.25,"currency":"EUR","settled_at":"2026-03-08T10:%02d:00Z"}`, i, merchant, 10+i, i%60)
}

// proposeNewMerchantIDs proposes a contract for settlements whose
// merchant_id values are the held lines' and checks that it changes the
// field's type, its identifier format and its mapping.
func proposeNewMerchantIDs(t *testing.T, lines []string) (infer.Input, *infer.Proposal) {
	t.Helper()
	in := infer.Input{Active: loadContract(t, settlementsV1), ActiveVersion: 1, Canonical: loadModel(t, settlementModel),
		Namespaces: []*idmapv1.Namespace{merchantNS}, Held: ndjson("2026-03-08", lines...)}
	p := propose(t, in)
	wantRules(t, p,
		"FIELD_TYPE_CHANGED fields.merchant_id.type",
		"IDENTIFIER_FORMAT_CHANGED fields.merchant_id.identifier.format",
		"MAPPING_CHANGED mapping.fields.merchant_id")
	return in, p
}

// withFormat is a copy of ns with f added, as once a migration created it.
func withFormat(ns *idmapv1.Namespace, f *idmapv1.Format) *idmapv1.Namespace {
	ns = proto.Clone(ns).(*idmapv1.Namespace)
	ns.Formats = append(ns.Formats, f)
	return ns
}

// simulate is the dry run of p over the held records of in.
func simulate(t *testing.T, p *infer.Proposal, in infer.Input, ns *idmapv1.Namespace, tr infer.Translator) *infer.Simulation {
	t.Helper()
	var namespaces []*idmapv1.Namespace
	if ns != nil {
		namespaces = []*idmapv1.Namespace{ns}
	}
	sim, err := infer.Simulate(p.Contract, in.Canonical, namespaces, tr, in.Held)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// An integer id that becomes a zero-padded template string: the field
// declares a new STRING format, the mapping translates it back, and the
// template rule is read off the values and verified on every one.
func TestIntegerBecomesTemplate(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 200 {
		lines = append(lines, settlement(i, fmt.Sprintf(`"MER-%08d"`, 1000+i*37)))
	}
	in, p := proposeNewMerchantIDs(t, lines)
	if !p.Breaking {
		t.Error("a changed identifier type is not breaking")
	}
	if len(p.Migrations) != 1 {
		t.Fatalf("migrations = %v, want one", p.Migrations)
	}
	m := p.Migrations[0]
	if m.Old != "legacy-int" || m.New != "mer-code" || m.Target != "legacy-int" {
		t.Errorf("migration %s %s→%s target %s, want legacy-int→mer-code target legacy-int", m.Field, m.Old, m.New, m.Target)
	}
	if cf := m.CreateFormat; cf == nil || cf.GetKind() != idmapv1.FormatKind_FORMAT_KIND_STRING || cf.GetPattern() != "^MER-[0-9]{8}$" {
		t.Errorf("format to create = %v, want mer-code STRING ^MER-[0-9]{8}$", cf)
	}
	r := m.Rule
	if r.TableOnly() || r.Rule.GetTemplate().GetTemplate() != "MER-{int:08}" || !r.Rule.GetReversible() || r.Matched != 200 || r.Wrong != 0 {
		t.Fatalf("rule = %+v, want MER-{int:08} reversible verified on 200 of 200", r)
	}
	if p.Before.Passed != 0 || p.After.Passed != 200 {
		t.Errorf("checks pass %d before and %d after, want 0 and 200", p.Before.Passed, p.After.Passed)
	}
	if want := "seam idmap rule set merchant --from legacy-int --to mer-code --template 'MER-{int:08}' --reversible --sample 1000"; !strings.Contains(strings.ReplaceAll(string(p.YAML), "\n# ", " "), want) {
		t.Errorf("the YAML does not give the command that sets the rule (%s):\n%s", want, p.YAML)
	}
	mf := p.Contract.GetMapping().GetFields()["merchant_id"]
	if tr := mf.GetTranslate(); tr.GetFrom() != "merchant/mer-code" || tr.GetTo() != "merchant/legacy-int" {
		t.Errorf("merchant_id mapping = %v, want translate merchant/mer-code → merchant/legacy-int", mf)
	}

	// The dry run: once the rule is set (simulated here), every record
	// maps, with the integer the canonical model holds.
	ns := withFormat(merchantNS, m.CreateFormat)
	var routes infer.LocalRoutes
	if err := routes.AddRule(ns, r.Rule); err != nil {
		t.Fatal(err)
	}
	sim := simulate(t, p, in, ns, routes.Translate)
	if sim.Passed != 200 {
		t.Errorf("simulation passes %d of %d (%v, %v), want all", sim.Passed, sim.Records, sim.Remain, sim.Examples)
	}
	// Without the rule nothing can pass, and the simulation says why.
	sim = simulate(t, p, in, ns, (&infer.LocalRoutes{}).Translate)
	if sim.Passed != 0 || sim.Remain["NO_ROUTE"] != 200 {
		t.Errorf("simulation without a route: %d passed, remain %v; want 0 and 200 NO_ROUTE", sim.Passed, sim.Remain)
	}
}

// An integer id that becomes a random UUID: no rule exists, the proposal
// says only a table will do, and the table makes the records pass.
func TestIntegerBecomesRandomUUID(t *testing.T) {
	t.Parallel()
	var lines []string
	var pairs []infer.Pair
	for i := range 100 {
		u := recordtest.RandomUUID(i)
		lines = append(lines, settlement(i, `"`+u+`"`))
		if i < 90 { // the source's sync misses ten merchants
			pairs = append(pairs, infer.Pair{From: u, To: fmt.Sprint(5000 + i)})
		}
	}
	in, p := proposeNewMerchantIDs(t, lines)
	m := p.Migrations[0]
	if m.New != "uuid" || m.CreateFormat.GetKind() != idmapv1.FormatKind_FORMAT_KIND_UUID {
		t.Errorf("migration to %s creating %v, want a new uuid format", m.New, m.CreateFormat)
	}
	if !m.Rule.TableOnly() || !strings.Contains(m.Rule.Why, "random (version 4)") || !strings.Contains(string(p.YAML), "needs a lookup table") {
		t.Errorf("rule finding %+v: want table only, saying the UUIDs are random\n%s", m.Rule, p.YAML)
	}
	var routes infer.LocalRoutes
	routes.AddPairs("merchant", "uuid", "legacy-int", pairs)
	sim := simulate(t, p, in, withFormat(merchantNS, m.CreateFormat), routes.Translate)
	if sim.Passed != 90 || sim.Remain["ID_UNMAPPED"] != 10 {
		t.Errorf("simulation with 90 pairs: %d passed, remain %v; want 90 passed, 10 ID_UNMAPPED", sim.Passed, sim.Remain)
	}
}

// The drill's change on the reference contract: the proposal is the
// hand-written v2 of core/examples, change for change.
func TestShopOrdersDrill(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf(`{"order_id":"ORD-%010d","customer_id":%q,"amount":%d.5,"currency":"EUR","status":"paid","created_at":"2026-03-08T10:00:00Z","country":"DE","items":2,"channel":"web"}`, i, recordtest.RandomUUID(i), i%90))
	}
	ns := &idmapv1.Namespace{Name: "customer", Formats: []*idmapv1.Format{{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}, {Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}}}
	p := propose(t, infer.Input{Active: examples.ShopOrdersV1(), ActiveVersion: 1, Canonical: examples.CommerceOrder(),
		Namespaces: []*idmapv1.Namespace{ns}, Held: ndjson("2026-03-08", lines...)})
	want := examples.ShopOrdersV2()
	if !proto.Equal(p.Contract, want) {
		t.Errorf("proposal differs from the hand-written v2:\n%s", p.YAML)
	}
	if p.Migrations[0].CreateFormat != nil {
		t.Errorf("the namespace has a uuid format, yet the proposal creates %v", p.Migrations[0].CreateFormat)
	}
}

// A shipment feed; carrier is renamed carrier_code without notice.
const shipmentsV1 = `
subject: fleet.shipments
owner: team-logistics
compatibility: BACKWARD
additional_fields: quarantine
fields:
  - {name: shipment_id, type: STRING, required: true, key: true}
  - {name: carrier, type: STRING, required: true, enum: [DHL, UPS, GLS]}
  - {name: weight_g, type: INT32, required: true, min: 0}
  - {name: units, type: INT32, required: true, min: 1}
  - name: address
    type: OBJECT
    required: true
    fields:
      - {name: zip, type: STRING, required: true}
      - {name: city, type: STRING}
checks:
  - {name: carrier_nulls, rule: "null_rate(carrier, max: 0.01)", policy: ALERT}
mapping:
  canonical: logistics.shipment
  fields:
    shipment_id: {from: shipment_id}
    carrier: {from: carrier}
    weight: {from: weight_g}
    units: {from: units}
    zip: {from: address.zip}
`

const shipmentModel = `
name: logistics.shipment
owner: team-data
fields:
  - {name: shipment_id, type: STRING, required: true, key: true}
  - {name: carrier, type: STRING, required: true}
  - {name: weight, type: DOUBLE, required: true}
  - {name: units, type: INT32, required: true}
  - {name: zip, type: STRING}
`

func shipment(i int, carrierKey, weight, units string) string {
	return fmt.Sprintf(`{"shipment_id":"S%d","%s":%q,"weight_g":%s,"units":%s,"address":{"zip":"%05d","city":"Lyon"}}`,
		i, carrierKey, []string{"DHL", "UPS", "GLS"}[i%3], weight, units, 69000+i)
}

// proposeShipments proposes a contract for the held shipment lines, the
// shipments contract being in force as the given version, and wants the
// proposal to make the changes given.
func proposeShipments(t *testing.T, version int32, lines []string, wantChanges ...string) (infer.Input, *infer.Proposal) {
	t.Helper()
	in := infer.Input{Active: loadContract(t, shipmentsV1), ActiveVersion: version, Canonical: loadModel(t, shipmentModel), Held: ndjson("2026-03-08", lines...)}
	p := propose(t, in)
	wantRules(t, p, wantChanges...)
	return in, p
}

// A field renamed: the missing field and the new one are paired by their
// values, the rename is declared, the mapping and the checks read the new
// name, and the canonical model does not move.
func TestFieldRenamed(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 60 {
		lines = append(lines, shipment(i, "carrier_code", fmt.Sprint(100+i), "2"))
	}
	in, p := proposeShipments(t, 3, lines,
		"FIELD_RENAMED fields.carrier_code",
		"CHECK_CHANGED checks.carrier_nulls.rule",
		"MAPPING_CHANGED mapping.fields.carrier")
	if got := p.Contract.GetMapping().GetRenamedFrom(); got["carrier_code"] != "carrier" {
		t.Errorf("renamed_from = %v, want carrier_code: carrier", got)
	}
	if got := p.Contract.GetChecks()[0].GetRule(); got != "null_rate(carrier_code, max: 0.01)" {
		t.Errorf("check rule = %q, want it on carrier_code", got)
	}
	if p.Before.Passed != 0 || p.After.Passed != 60 {
		t.Errorf("checks pass %d before and %d after, want 0 and 60", p.Before.Passed, p.After.Passed)
	}
	sim, err := infer.Simulate(p.Contract, in.Canonical, nil, (&infer.LocalRoutes{}).Translate, in.Held)
	if err != nil || sim.Passed != 60 {
		t.Errorf("simulation: %+v, %v; want all 60 passed", sim, err)
	}
}

// A type widened: a whole number that starts to carry fractions is a
// DOUBLE (INT32 → DOUBLE widens), and the mapping needs no cast since the
// canonical field is a DOUBLE already; a count that outgrows INT32 is an
// INT64, cast back to the canonical INT32, so values that do not fit stay
// held by the mapping rather than reaching consumers.
func TestTypeWidened(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 50 {
		units := "3"
		if i%10 == 0 {
			units = "3000000000" // beyond INT32
		}
		lines = append(lines, shipment(i, "carrier", fmt.Sprintf("%d.5", 100+i), units))
	}
	in, p := proposeShipments(t, 1, lines,
		"FIELD_TYPE_WIDENED fields.weight_g.type",
		"FIELD_TYPE_WIDENED fields.units.type",
		"MAPPING_CHANGED mapping.fields.units")
	if p.Breaking {
		t.Errorf("widenings under BACKWARD are additive, yet the proposal is breaking:\n%s", p.YAML)
	}
	if c := p.Contract.GetMapping().GetFields()["units"].GetCast(); c.GetTo() != contractv1.FieldType_FIELD_TYPE_INT32 {
		t.Errorf("units mapping cast = %v, want to INT32", c)
	}
	if c := p.Contract.GetMapping().GetFields()["weight"].GetCast(); c != nil {
		t.Errorf("weight mapping cast = %v, want none (DOUBLE into DOUBLE)", c)
	}
	if p.After.Passed != 50 {
		t.Errorf("checks pass %d of 50 after, want all", p.After.Passed)
	}
	sim := simulate(t, p, in, nil, (&infer.LocalRoutes{}).Translate)
	if sim.Passed != 45 || sim.Remain["CAST_FAILED"]+sim.Remain["OUT_OF_RANGE"] != 5 {
		t.Errorf("simulation: %d passed, remain %v; want 45 passed and the 5 records beyond INT32 held", sim.Passed, sim.Remain)
	}
}

// A few odd records are not a change of the source: one unknown currency
// and two negative amounts among 100 leave the contract as it is, and the
// proposal counts them as staying held.
func TestNoiseIsNotAChange(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 100 {
		s := settlement(i, fmt.Sprint(1000+i))
		switch i {
		case 7:
			s = strings.Replace(s, `"EUR"`, `"XXX"`, 1)
		case 8, 9:
			s = strings.Replace(s, `"amount":18.25`, `"amount":-1`, 1)
			s = strings.Replace(s, `"amount":19.25`, `"amount":-1`, 1)
		}
		lines = append(lines, s)
	}
	p := propose(t, infer.Input{Active: loadContract(t, settlementsV1), ActiveVersion: 1, Canonical: loadModel(t, settlementModel),
		Namespaces: []*idmapv1.Namespace{merchantNS}, Held: ndjson("2026-03-08", lines...)})
	wantRules(t, p)
	if p.After.Passed != 97 || p.After.ByCode["ENUM_MISMATCH"] != 1 || p.After.ByCode["OUT_OF_RANGE"] != 2 {
		t.Errorf("after: %+v; want 97 passed, 1 ENUM_MISMATCH, 2 OUT_OF_RANGE", p.After)
	}
	if !strings.Contains(string(p.YAML), "No change against v1") {
		t.Errorf("the YAML does not say there is no change:\n%s", p.YAML)
	}
}

// New enum values, a relaxed bound, a field that stopped arriving and a
// new one, nested and in CSV: each is the smallest change that lets the
// records pass.
func TestConstraintsAndFields(t *testing.T) {
	t.Parallel()
	active := loadContract(t, settlementsV1)
	var lines []string
	for i := range 40 {
		cur := []string{"EUR", "USD", "CHF", "SEK"}[i%4]
		lines = append(lines, fmt.Sprintf(`{"settlement_id":"SET-%08d","merchant_id":%d,"amount":%d,"currency":%q,"channel":"pos","fees":{"card":0.3}}`, i, 1000+i, i-5, cur))
	}
	p := propose(t, infer.Input{Active: active, ActiveVersion: 1, Canonical: loadModel(t, settlementModel),
		Namespaces: []*idmapv1.Namespace{merchantNS}, Held: ndjson("2026-03-09", lines...)})
	wantRules(t, p,
		"ENUM_VALUE_ADDED fields.currency.enum",
		"ENUM_VALUE_ADDED fields.currency.enum",
		"CONSTRAINT_RELAXED fields.amount.min",
		"FIELD_MADE_OPTIONAL fields.settled_at.required",
		"FIELD_ADDED_OPTIONAL fields.channel",
		"FIELD_ADDED_OPTIONAL fields.fees")
	if got := p.Contract.GetFields()[3].GetEnum(); !slices.Equal(got, []string{"EUR", "USD", "CHF", "SEK"}) {
		t.Errorf("currency enum = %v", got)
	}
	fees := contract.Lookup(p.Contract.GetFields(), "fees")
	if fees.GetType() != contractv1.FieldType_FIELD_TYPE_OBJECT || contract.Lookup(fees.GetFields(), "card").GetType() != contractv1.FieldType_FIELD_TYPE_DOUBLE {
		t.Errorf("fees = %v, want an OBJECT with a DOUBLE card", fees)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "canonical field settled_at is required") {
		t.Errorf("notes do not say that the canonical settled_at needs a default: %q", p.Notes)
	}

	// The same records as CSV rows, each under its header as the gate
	// holds them.
	var csv []infer.Record
	for i := range 40 {
		csv = append(csv, infer.Record{Format: recordv1.Format_FORMAT_CSV, Partition: "2026-03-09",
			Raw: fmt.Appendf(nil, "settlement_id,merchant_id,amount,currency,channel\nSET-%08d,%d,%d,%s,pos", i, 1000+i, i-5, []string{"EUR", "USD", "CHF", "SEK"}[i%4])})
	}
	p = propose(t, infer.Input{Active: active, ActiveVersion: 1, Namespaces: []*idmapv1.Namespace{merchantNS}, Held: csv})
	wantRules(t, p,
		"ENUM_VALUE_ADDED fields.currency.enum",
		"ENUM_VALUE_ADDED fields.currency.enum",
		"CONSTRAINT_RELAXED fields.amount.min",
		"FIELD_MADE_OPTIONAL fields.settled_at.required",
		"FIELD_ADDED_OPTIONAL fields.channel")
	if p.After.Passed != 40 {
		t.Errorf("CSV: %d of 40 pass after, want all: %+v", p.After.Passed, p.After)
	}
}

// A string identifier whose pattern-checked codes become UUIDs keeps its
// STRING type; only the format and the pattern move.
func TestStringIdentifierBecomesUUID(t *testing.T) {
	t.Parallel()
	active := loadContract(t, `
subject: bank.transactions
owner: team-payments
fields:
  - {name: txn_id, type: STRING, required: true, key: true}
  - {name: account_ref, type: STRING, required: true, pattern: "^ACC-[0-9]{8}$", identifier: {namespace: account, format: acc-ref}}
`)
	ns := &idmapv1.Namespace{Name: "account", Formats: []*idmapv1.Format{
		{Name: "acc-ref", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: "^ACC-[0-9]{8}$"},
		{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}}}
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf(`{"txn_id":"TX-%d","account_ref":%q}`, i, recordtest.RandomUUID(i)))
	}
	p := propose(t, infer.Input{Active: active, ActiveVersion: 1, Namespaces: []*idmapv1.Namespace{ns}, Held: ndjson("2026-03-01", lines...)})
	wantRules(t, p,
		"IDENTIFIER_FORMAT_CHANGED fields.account_ref.identifier.format",
		"PATTERN_CHANGED fields.account_ref.pattern")
	if f := p.Contract.GetFields()[1]; f.GetType() != contractv1.FieldType_FIELD_TYPE_STRING || f.GetIdentifier().GetFormat() != "uuid" {
		t.Errorf("account_ref = %v, want STRING with format uuid", f)
	}
	if p.After.Passed != 30 {
		t.Errorf("%d of 30 pass after, want all: %+v\n%s", p.After.Passed, p.After, p.YAML)
	}
}

func TestProposeRefusesWhatItCannotUse(t *testing.T) {
	t.Parallel()
	if _, err := infer.Propose(infer.Input{}); err == nil {
		t.Error("Propose without an active version gave no error")
	}
	bad := &contractv1.Contract{Subject: "x"}
	if _, err := infer.Propose(infer.Input{Active: bad}); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("Propose of an invalid active version: %v, want an error saying it is not valid", err)
	}
	// Unreadable records are counted, never a panic or a change.
	p := propose(t, infer.Input{Active: loadContract(t, settlementsV1), ActiveVersion: 1, Held: []infer.Record{
		{Format: recordv1.Format_FORMAT_NDJSON, Raw: []byte(`{"settlement_id":`)},
		{Format: recordv1.Format_FORMAT_CSV, Raw: []byte(`no header line`)},
		{Format: recordv1.Format_FORMAT_JSON, Raw: []byte("\xff\xfe")},
	}})
	if p.Profile.Malformed != 3 || len(p.Changes) != 0 {
		t.Errorf("malformed = %d, changes %v; want 3 and none", p.Profile.Malformed, p.Changes)
	}
}

// An optional field that is not sent and a new one of the same type are
// not a rename unless their names say so; a required one missing is.
func TestRenameNeedsEvidence(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"order_id":"ORD-%010d","customer_id":%d,"amount":%d.5,"currency":"EUR","status":"paid","created_at":"2026-03-08T10:00:00Z","items":2,"promo":"P%d","mail":"a%d@b.example"}`, i, 1000+i, i, i, i))
	}
	ns := &idmapv1.Namespace{Name: "customer", Formats: []*idmapv1.Format{{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}}}
	p := propose(t, infer.Input{Active: examples.ShopOrdersV1(), ActiveVersion: 1, Canonical: examples.CommerceOrder(),
		Namespaces: []*idmapv1.Namespace{ns}, Held: ndjson("2026-03-08", lines...)})
	// coupon is not sent and promo is new: two fields, not a rename. email
	// is not sent and mail is new: the names say rename.
	wantRules(t, p,
		"FIELD_ADDED_OPTIONAL fields.promo",
		"FIELD_RENAMED fields.mail",
		"MAPPING_CHANGED mapping.fields.email")
}

// Where no valid contract can declare what the values became — a key
// turned into objects, a field into objects with no members — the
// proposal leaves the field as it was, says why, and the records stay
// held. (Found by FuzzPropose: the proposal was an invalid contract.)
func TestTypeNoContractCanDeclareStaysHeld(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"settlement_id":{"n":%d},"merchant_id":"MER-%08d","amount":1.5,"currency":"EUR","settled_at":{}}`, i, i))
	}
	p := propose(t, infer.Input{Active: loadContract(t, settlementsV1), ActiveVersion: 1, Canonical: loadModel(t, settlementModel),
		Namespaces: []*idmapv1.Namespace{merchantNS}, Held: ndjson("2026-03-08", lines...)})
	for _, f := range p.Contract.GetFields() {
		switch f.GetName() {
		case "settlement_id":
			if f.GetType().String() != "FIELD_TYPE_STRING" || !f.GetKey() {
				t.Errorf("settlement_id became %v (key %v); want the STRING key it was", f.GetType(), f.GetKey())
			}
		case "settled_at":
			if f.GetType().String() != "FIELD_TYPE_TIMESTAMP" {
				t.Errorf("settled_at became %v; want the TIMESTAMP it was", f.GetType())
			}
		}
	}
	notes := strings.Join(p.Notes, "\n")
	for _, want := range []string{
		"key field settlement_id now carries OBJECT values, and a key must be a single value; those 20 records stay held",
		"settled_at now carries objects, but its objects have no members with values",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not say %q:\n%s", want, notes)
		}
	}
	if p.After.Passed != 0 {
		t.Errorf("after: %+v; want every record still held", p.After)
	}
}

// A field that became an object is declared with its members once: the
// retype declares them, and they are not added a second time as members
// the active version did not know. (Found by FuzzPropose.)
func TestRetypeToObjectDeclaresMembersOnce(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"settlement_id":"SET-%08d","merchant_id":"MER-%08d","amount":{"value":%d.5,"unit":"cent"},"currency":"EUR","settled_at":"2026-03-08T10:00:00Z"}`, i, i, i))
	}
	p := propose(t, infer.Input{Active: loadContract(t, settlementsV1), ActiveVersion: 1, Canonical: loadModel(t, settlementModel),
		Namespaces: []*idmapv1.Namespace{merchantNS}, Held: ndjson("2026-03-08", lines...)})
	var amount *contractv1.Field
	for _, f := range p.Contract.GetFields() {
		if f.GetName() == "amount" {
			amount = f
		}
	}
	var members []string
	for _, m := range amount.GetFields() {
		members = append(members, m.GetName()+" "+contract.ShortName(m.GetType()))
	}
	if amount.GetType() != contractv1.FieldType_FIELD_TYPE_OBJECT || !slices.Equal(members, []string{"value DOUBLE", "unit STRING"}) {
		t.Errorf("amount: %v with members %q; want OBJECT with value DOUBLE, unit STRING", amount.GetType(), members)
	}
}

// An account reference that becomes a random UUID, in a contract that
// declares much besides: the proposal keeps all of it (description,
// labels, additional fields, partition time, checks with their
// descriptions and thresholds, field descriptions), its YAML loads back
// to the same contract, and against the active version it differs only
// in the account. The canonical field holds the account number, not the
// reference the source used to send, so the pairs to ask for are
// uuid→number.
func TestProposalKeepsWhatItDoesNotChange(t *testing.T) {
	t.Parallel()
	active := loadContract(t, `
subject: bank.ledger
owner: team-payments
description: booked ledger entries
compatibility: BACKWARD
notice_period: 14d
additional_fields: quarantine
labels: {domain: payments, tier: gold}
partition_time: {field: booked_at, granularity: DAY, allowed_lateness: 1d}
fields:
  - {name: entry_id, type: STRING, required: true, key: true, pattern: "^E-[0-9]{6}$", description: one booking}
  - {name: account_ref, type: STRING, required: true, pattern: "^ACC-[0-9]{8}$", identifier: {namespace: account, format: acc}}
  - {name: amount, type: DOUBLE, required: true, min: 0, description: in EUR}
  - {name: booked_at, type: TIMESTAMP, required: true}
checks:
  - {name: amount_present, rule: required(amount), policy: BLOCK, threshold: {fraction: 0.005}, description: no amount no booking}
  - {name: amount_drift, rule: "mean_drift(amount, max_relative_change: 0.5, baseline: 7)", policy: ALERT}
mapping:
  canonical: bank.entry
  fields:
    entry_id: {from: entry_id}
    account: {from: account_ref, translate: {from: account/acc, to: account/number}}
    amount: {from: amount}
    booked_at: {from: booked_at}
`)
	model := loadModel(t, `
name: bank.entry
owner: team-data
fields:
  - {name: entry_id, type: STRING, required: true, key: true}
  - {name: account, type: INT64, required: true, identifier: {namespace: account, format: number}}
  - {name: amount, type: DOUBLE, required: true}
  - {name: booked_at, type: TIMESTAMP, required: true}
`)
	ns := &idmapv1.Namespace{Name: "account", Formats: []*idmapv1.Format{
		{Name: "acc", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: "^ACC-[0-9]{8}$"},
		{Name: "number", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}}}
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"entry_id":"E-%06d","account_ref":%q,"amount":%d.5,"booked_at":"2026-10-22T10:%02d:00Z"}`, i, recordtest.RandomUUID(i), 10+i, i))
	}
	p := propose(t, infer.Input{Active: active, ActiveVersion: 1, Canonical: model, Namespaces: []*idmapv1.Namespace{ns}, Held: ndjson("2026-10-22", lines...)})
	wantRules(t, p,
		"IDENTIFIER_FORMAT_CHANGED fields.account_ref.identifier.format",
		"PATTERN_CHANGED fields.account_ref.pattern",
		"MAPPING_CHANGED mapping.fields.account")
	next := proto.Clone(p.Contract).(*contractv1.Contract)
	next.Fields[1] = active.GetFields()[1]
	next.Mapping.Fields["account"] = active.GetMapping().GetFields()["account"]
	if !proto.Equal(next, active) {
		t.Errorf("besides the account, the proposal changes\n%v\ninto\n%v", active, next)
	}
	if !strings.Contains(string(p.YAML), `partition_time: {field: booked_at, granularity: DAY, allowed_lateness: "1d"}`) {
		t.Errorf("the proposal's YAML lacks the partition time:\n%s", p.YAML)
	}
	if len(p.Migrations) != 1 {
		t.Fatalf("migrations = %v, want the account's", p.Migrations)
	}
	m := p.Migrations[0]
	if m.Target != "number" || !m.Rule.TableOnly() || !strings.Contains(m.Rule.Why, "--from uuid --to number PAIRS.csv") {
		t.Errorf("migration to %q: %s; want the uuid→number pairs asked for", m.Target, m.Rule.Why)
	}
}
