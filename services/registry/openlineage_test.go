package registry

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/interop/interoptest"
	"github.com/seamdata/seam/platform/storage/storagetest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func lineageEvents(t *testing.T, js []byte) *registryv1.RecordLineageRequest {
	t.Helper()
	v := &structpb.Value{}
	if err := protojson.Unmarshal(js, v); err != nil {
		t.Fatal(err)
	}
	return &registryv1.RecordLineageRequest{Events: v}
}

// rawTable registers a subject whose data lands in a PostgreSQL table that
// dbt reads, bound to it by the openlineage.* labels.
func rawTable(t *testing.T, e *env, subject, table string) {
	t.Helper()
	c := &contractv1.Contract{Subject: subject, Owner: "team-jaffle",
		Labels: map[string]string{LabelOpenLineageNamespace: "postgres://postgres:5432", LabelOpenLineageName: "postgres.public." + table},
		Fields: []*contractv1.Field{{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true, Key: true}}}
	if _, err := e.as("admin").RegisterContract(context.Background(), &registryv1.RegisterContractRequest{Contract: c}); err != nil {
		t.Fatal(err)
	}
}

// TestDbtRunLineage sends the events of a real dbt run (from the corpus)
// and checks the consumers it describes, then the blast radius and rerun
// order that follow.
func TestDbtRunLineage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(interoptest.CorpusDir(t), "openlineage", "events", "dbt_postgres_run_expected_events.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	ctx := context.Background()
	for _, s := range []string{"customers", "orders", "payments"} {
		rawTable(t, e, "jaffle.raw_"+s, "raw_"+s)
	}
	resp, err := e.as("pipeline").RecordLineage(ctx, lineageEvents(t, data))
	if err != nil {
		t.Fatalf("RecordLineage: %v", err)
	}
	if len(resp.GetOutcomes()) != 72 {
		t.Fatalf("%d outcomes, want one per event (72)", len(resp.GetOutcomes()))
	}
	created := map[string]bool{}
	for _, o := range resp.GetOutcomes() {
		if o.GetAction() == registryv1.LineageAction_LINEAGE_ACTION_CREATED {
			created[o.GetConsumer()] = true
		}
	}
	const ns, pg = "dbt-test-namespace/model.jaffle_shop.", "postgres://postgres:5432/postgres.public."
	want := map[string]struct {
		inputs   []string
		produces string
	}{
		ns + "stg_customers": {[]string{"subject:jaffle.raw_customers"}, pg + "stg_customers"},
		ns + "stg_orders":    {[]string{"subject:jaffle.raw_orders"}, pg + "stg_orders"},
		ns + "stg_payments":  {[]string{"subject:jaffle.raw_payments"}, pg + "stg_payments"},
		ns + "customers":     {[]string{"dataset:" + pg + "stg_customers", "dataset:" + pg + "stg_orders", "dataset:" + pg + "stg_payments"}, pg + "customers"},
		ns + "orders":        {[]string{"dataset:" + pg + "stg_orders", "dataset:" + pg + "stg_payments"}, pg + "orders"},
	}
	list, err := e.as("viewer").ListConsumers(ctx, &registryv1.ListConsumersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetConsumers()) != len(want) || len(created) != len(want) {
		t.Errorf("got %d consumers (%d created), want %d: %v", len(list.GetConsumers()), len(created), len(want), list.GetConsumers())
	}
	for _, c := range list.GetConsumers() {
		w, ok := want[c.GetName()]
		if !ok {
			t.Errorf("unexpected consumer %s", c.GetName())
			continue
		}
		var inputs []string
		for _, in := range c.GetInputs() {
			if in.GetSubject() != "" {
				inputs = append(inputs, "subject:"+in.GetSubject())
			} else {
				inputs = append(inputs, "dataset:"+in.GetDataset())
			}
		}
		slices.Sort(inputs)
		if !slices.Equal(inputs, w.inputs) || !slices.Equal(c.GetProduces(), []string{w.produces}) {
			t.Errorf("%s reads %v and produces %v; want %v and %v", c.GetName(), inputs, c.GetProduces(), w.inputs, w.produces)
		}
		if c.GetOrigin() != registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE || c.GetLearned().GetJobNamespace() != "dbt-test-namespace" {
			t.Errorf("%s: origin %v learned %v, want OPENLINEAGE from dbt-test-namespace", c.GetName(), c.GetOrigin(), c.GetLearned())
		}
	}
	br, err := e.as("viewer").GetBlastRadius(ctx, &registryv1.GetBlastRadiusRequest{Subject: "jaffle.raw_orders"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range br.GetConsumers() {
		got = append(got, strings.TrimPrefix(a.GetConsumer(), ns)+"@"+string(rune('0'+a.GetDepth())))
	}
	if w := []string{"stg_orders@1", "customers@2", "orders@2"}; !slices.Equal(got, w) {
		t.Errorf("blast radius of jaffle.raw_orders = %v, want %v", got, w)
	}
	order, err := e.as("viewer").GetRerunOrder(ctx, &registryv1.GetRerunOrderRequest{Root: &registryv1.GetRerunOrderRequest_Subject{Subject: "jaffle.raw_payments"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := []string{ns + "stg_payments", ns + "customers", ns + "orders"}; !slices.Equal(order.GetConsumers(), w) {
		t.Errorf("rerun order after jaffle.raw_payments = %v, want %v", order.GetConsumers(), w)
	}
	// The same run sent again changes nothing.
	again, err := e.as("pipeline").RecordLineage(ctx, lineageEvents(t, data))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range again.GetOutcomes() {
		if o.GetAction() == registryv1.LineageAction_LINEAGE_ACTION_CREATED || o.GetAction() == registryv1.LineageAction_LINEAGE_ACTION_UPDATED {
			t.Errorf("event %d resent: %s, want UNCHANGED or IGNORED", o.GetIndex(), o.GetAction())
		}
	}
}

// TestCorpusEventsAccepted sends the corpus's client example events.
func TestCorpusEventsAccepted(t *testing.T) {
	dir := filepath.Join(interoptest.CorpusDir(t), "openlineage", "events")
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	for file, want := range map[string]registryv1.LineageAction{
		"example_full_event.json":      registryv1.LineageAction_LINEAGE_ACTION_IGNORED, // reads and writes one table
		"serde_example_run_event.json": registryv1.LineageAction_LINEAGE_ACTION_IGNORED,
	} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := e.as("pipeline").RecordLineage(context.Background(), lineageEvents(t, data))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if got := resp.GetOutcomes()[0].GetAction(); got != want {
			t.Errorf("%s: %s (%s), want %s", file, got, resp.GetOutcomes()[0].GetMessage(), want)
		}
	}
}

// ltvEvent is a run of features.customer_ltv, a format of its event time,
// run id and further inputs.
//
//go:embed testdata/openlineage_customer_ltv.json
var ltvEvent string

// TestColumnLineageJoinKey: a job reading the canonical model joins on
// customer_id; it becomes a consumer of the model's fields customer_id (a
// join key) and amount, so the breaking v2 of shop.orders, which feeds
// customer_id, reaches it. A new run
// replaces the lineage, an older one is ignored, and a consumer declared
// by hand wins.
func TestColumnLineageJoinKey(t *testing.T) {
	e := newSeededEnv(t)
	ctx := context.Background()
	send := func(when, run, extra string) *registryv1.LineageOutcome {
		t.Helper()
		js := []byte(strings.NewReplacer("%s", "\x00").Replace(ltvEvent))
		js = []byte(strings.Replace(string(js), "\x00", when, 1))
		js = []byte(strings.Replace(string(js), "\x00", run, 1))
		js = []byte(strings.Replace(string(js), "\x00", extra, 1))
		resp, err := e.as("team-ml").RecordLineage(ctx, lineageEvents(t, js))
		if err != nil {
			t.Fatalf("RecordLineage: %v", err)
		}
		return resp.GetOutcomes()[0]
	}
	if o := send("2026-03-01T10:00:00Z", "0195b0d6-0000-7000-8000-000000000001", ""); o.GetAction() != registryv1.LineageAction_LINEAGE_ACTION_CREATED {
		t.Fatalf("first run: %v", o)
	}
	c, got := consumerInputs(t, e, "spark/features.customer_ltv")
	want := `inputs:{canonical:"commerce.order" fields:"customer_id" usage:USAGE_KIND_JOIN_KEY} inputs:{canonical:"commerce.order" fields:"amount" usage:USAGE_KIND_FEATURE}`
	if got != want {
		t.Errorf("inputs\ngot  %s\nwant %s", got, want)
	}
	if c.GetOwner() != "team-ml" {
		t.Errorf("owner %q, want team-ml, the team that reported it", c.GetOwner())
	}
	check, err := e.as("checkout").CheckContract(ctx, &registryv1.CheckContractRequest{Contract: examples.ShopOrdersV2()})
	if err != nil {
		t.Fatal(err)
	}
	if got := consumerNames(check.GetAffectedConsumers()); !slices.Contains(got, "spark/features.customer_ltv") {
		t.Errorf("v2 affects %v, want the learned consumer among them", got)
	}
	// A newer run reading one more dataset replaces the lineage.
	o := send("2026-03-02T10:00:00Z", "0195b0d6-0000-7000-8000-000000000002", `, {"namespace": "s3://ref", "name": "fx_rates"}`)
	if o.GetAction() != registryv1.LineageAction_LINEAGE_ACTION_UPDATED {
		t.Errorf("second run: %v, want UPDATED", o)
	}
	// An event of an older run does not undo it.
	if o := send("2026-02-28T10:00:00Z", "0195b0d6-0000-7000-8000-000000000000", ""); o.GetAction() != registryv1.LineageAction_LINEAGE_ACTION_IGNORED {
		t.Errorf("older run: %v, want IGNORED", o)
	}
	// Declared by hand, the consumer is no longer changed by events.
	declared := &registryv1.Consumer{Name: "spark/features.customer_ltv", Owner: "team-ml", Inputs: []*registryv1.Input{
		{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"customer_id"}, Usage: registryv1.UsageKind_USAGE_KIND_JOIN_KEY}}}
	if _, err := e.as("team-ml").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: declared}); err != nil {
		t.Fatal(err)
	}
	if o := send("2026-03-03T10:00:00Z", "0195b0d6-0000-7000-8000-000000000003", ""); o.GetAction() != registryv1.LineageAction_LINEAGE_ACTION_KEPT_DECLARED {
		t.Errorf("after a declaration: %v, want KEPT_DECLARED", o)
	}
	if c, _ := consumerInputs(t, e, "spark/features.customer_ltv"); c.GetOrigin() != registryv1.ConsumerOrigin_CONSUMER_ORIGIN_DECLARED || len(c.GetInputs()) != 1 {
		t.Errorf("declared consumer changed: %v", c)
	}
}

func inputsText(c *registryv1.Consumer) string {
	var b strings.Builder
	for _, in := range c.GetInputs() {
		b.WriteString("inputs:{" + strings.Join(strings.Fields((&registryv1.Input{Source: in.GetSource(), Fields: in.GetFields(), Usage: in.GetUsage()}).String()), " ") + "} ")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// consumerInputs reads a consumer as the viewer, with its inputs as
// inputsText writes them.
func consumerInputs(t *testing.T, e *env, name string) (*registryv1.Consumer, string) {
	t.Helper()
	c, err := e.as("viewer").GetConsumer(context.Background(), &registryv1.GetConsumerRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return c.GetConsumer(), inputsText(c.GetConsumer())
}

// TestBadLineage: malformed events are refused whole, naming the event.
func TestBadLineage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	for _, doc := range []string{
		`[{"eventTime": "2026-03-01T10:00:00Z", "run": {"runId": "r"}, "job": {"namespace": "a", "name": "b"}}, {"eventTime": "yesterday", "run": {"runId": "r"}, "job": {"namespace": "a", "name": "b"}}]`,
		`{"eventTime": "2026-03-01T10:00:00Z", "run": {"runId": ""}, "job": {"namespace": "a", "name": "b"}}`,
		`"just a string"`,
	} {
		_, err := e.as("pipeline").RecordLineage(context.Background(), lineageEvents(t, []byte(doc)))
		if err == nil || !strings.Contains(err.Error(), "event") {
			t.Errorf("%s: got %v, want an invalid-argument error naming the event", doc, err)
		}
	}
	if _, err := e.as("viewer").RecordLineage(context.Background(), lineageEvents(t, []byte(`[]`))); err == nil {
		t.Errorf("a viewer may not record lineage")
	}
}

// TestLearnedConsumersBelongToTheirReporter: a consumer learned from
// OpenLineage belongs to the team whose token first reported it, whatever
// the event's ownership facet claims: another team's runs of the same job
// are refused with NOT_CONSUMER_OWNER and change nothing; an admin
// transfers it (it stays learned), and then only the new team may report
// it. On SQLite and PostgreSQL.
func TestLearnedConsumersBelongToTheirReporter(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, newFakeClock())
		e.seed(t)
		ctx := context.Background()
		run := 0
		send := func(as, extra string) error {
			t.Helper()
			run++
			js := strings.NewReplacer("%s", "\x00").Replace(ltvEvent)
			js = strings.Replace(js, "\x00", fmt.Sprintf("2026-03-%02dT10:00:00Z", run), 1)
			js = strings.Replace(js, "\x00", fmt.Sprintf("0195b0d6-0000-7000-8000-%012d", run), 1)
			js = strings.Replace(js, "\x00", extra, 1)
			_, err := e.as(as).RecordLineage(ctx, lineageEvents(t, []byte(js)))
			return err
		}
		get := func() *registryv1.Consumer {
			t.Helper()
			c, err := e.as("viewer").GetConsumer(ctx, &registryv1.GetConsumerRequest{Name: "spark/features.customer_ltv"})
			if err != nil {
				t.Fatal(err)
			}
			return c.GetConsumer()
		}
		// team-bi reports first, although the facet names team-ml.
		if err := send("team-bi", ""); err != nil {
			t.Fatalf("first report: %v", err)
		}
		if got := get().GetOwner(); got != "team-bi" {
			t.Fatalf("owner %q, want team-bi, the reporter", got)
		}
		before := len(get().GetInputs())
		for _, other := range []string{"team-ml", "pipeline", "operator"} {
			err := send(other, `, {"namespace": "s3://ref", "name": "fx_rates"}`)
			if status.Code(err) != codes.PermissionDenied || errorReason(err) != ReasonNotConsumerOwner || !strings.Contains(err.Error(), "team-bi") {
				t.Errorf("%s reports team-bi's consumer: %v, want PermissionDenied NOT_CONSUMER_OWNER naming team-bi", other, err)
			}
		}
		if got := len(get().GetInputs()); got != before {
			t.Errorf("a refused report changed the inputs: %d, want %d", got, before)
		}
		// Only an admin transfers, and the consumer stays learned.
		transfer := &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "spark/features.customer_ltv", Owner: "team-ml",
			Origin: registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE}}
		if _, err := e.as("team-bi").RegisterConsumer(ctx, transfer); status.Code(err) != codes.PermissionDenied {
			t.Errorf("team-bi transfers: %v, want PermissionDenied", err)
		}
		if _, err := e.as("admin").RegisterConsumer(ctx, transfer); err != nil {
			t.Fatalf("admin transfers: %v", err)
		}
		if c := get(); c.GetOwner() != "team-ml" || c.GetOrigin() != registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE || len(c.GetInputs()) != before {
			t.Errorf("after the transfer: owner %q origin %v with %d inputs; want team-ml, OPENLINEAGE, %d inputs", c.GetOwner(), c.GetOrigin(), len(c.GetInputs()), before)
		}
		if err := send("team-ml", `, {"namespace": "s3://ref", "name": "fx_rates"}`); err != nil {
			t.Errorf("team-ml reports after the transfer: %v", err)
		}
		if err := send("team-bi", ""); status.Code(err) != codes.PermissionDenied {
			t.Errorf("team-bi reports after the transfer: %v, want PermissionDenied", err)
		}
		if got := get().GetOwner(); got != "team-ml" {
			t.Errorf("owner %q after team-ml's run, want team-ml kept", got)
		}
	})
}

// riskEvent is a run of a job that reads the orders table in PostgreSQL,
// joining on customer_id and aggregating amount, before any contract says
// that table is shop.orders.
//
//go:embed testdata/openlineage_order_risk.json
var riskEvent string

// TestConsumerLearnedBeforeItsContract: a job's run reads a table no
// contract claims yet; the consumer keeps the table with the fields its
// column lineage names. When shop.orders v1 is registered bound to that
// table (openlineage.* labels), the consumer is linked: it reads
// customer_id (a join key) and amount of shop.orders, the blast radius of
// shop.orders includes it, and it survives a restart; the breaking v2
// (customer_id becomes a UUID) is announced to it. On SQLite and
// PostgreSQL.
func TestConsumerLearnedBeforeItsContract(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, url string) {
		clock := newFakeClock()
		e := newEnv(t, url, clock)
		ctx := context.Background()
		const name, table = "spark/features.order_risk", "postgres://db:5432/shop.public.orders"
		if _, err := e.as("admin").RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: examples.CommerceOrder()}); err != nil {
			t.Fatal(err)
		}
		// A second job reads amount only: customer_id's change is not its.
		totals := strings.NewReplacer("features.order_risk", "features.order_totals", "00000000000a", "00000000000b").Replace(riskEvent)
		totals = totals[:strings.Index(totals, `,
    "dataset":`)] + "}}}]}"
		for _, ev := range []string{riskEvent, totals} {
			resp, err := e.as("team-ml").RecordLineage(ctx, lineageEvents(t, []byte(ev)))
			if err != nil || resp.GetOutcomes()[0].GetAction() != registryv1.LineageAction_LINEAGE_ACTION_CREATED {
				t.Fatalf("RecordLineage: %v %v", resp, err)
			}
		}
		inputs := func(e *env) string {
			t.Helper()
			_, in := consumerInputs(t, e, name)
			return in
		}
		want := `inputs:{dataset:"` + table + `" fields:"customer_id" usage:USAGE_KIND_JOIN_KEY} inputs:{dataset:"` + table + `" fields:"amount" usage:USAGE_KIND_FEATURE}`
		if got := inputs(e); got != want {
			t.Errorf("before the contract:\ngot  %s\nwant %s", got, want)
		}
		blast := func(e *env) []string {
			t.Helper()
			br, err := e.as("viewer").GetBlastRadius(ctx, &registryv1.GetBlastRadiusRequest{Subject: "shop.orders"})
			if err != nil {
				t.Fatal(err)
			}
			return consumerNames(br.GetConsumers())
		}

		v1 := examples.ShopOrdersV1()
		labels := map[string]string{LabelOpenLineageNamespace: "postgres://db:5432", LabelOpenLineageName: "shop.public.orders"}
		v1.Labels = labels
		if _, err := e.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v1}); err != nil {
			t.Fatalf("register v1: %v", err)
		}
		want = `inputs:{subject:"shop.orders" fields:"customer_id" usage:USAGE_KIND_JOIN_KEY} inputs:{subject:"shop.orders" fields:"amount" usage:USAGE_KIND_FEATURE}`
		if got := inputs(e); got != want {
			t.Errorf("after v1:\ngot  %s\nwant %s", got, want)
		}
		if got := blast(e); !slices.Contains(got, name) || !slices.Contains(got, "spark/features.order_totals") {
			t.Errorf("blast radius of shop.orders = %v, want %s and spark/features.order_totals in it", got, name)
		}
		linked := false
		for _, ev := range eventsOf(t, e.as("viewer"), registryv1.EventType_EVENT_TYPE_CONSUMER_REGISTERED) {
			linked = linked || (slices.Contains(ev.GetConsumers(), name) && strings.Contains(ev.GetMessage(), "linked to subject shop.orders"))
		}
		if !linked {
			t.Errorf("no event says %s was linked to shop.orders", name)
		}

		if err := e.srv.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		again := newEnv(t, url, clock)
		if got := inputs(again); got != want {
			t.Errorf("after a restart:\ngot  %s\nwant %s", got, want)
		}
		if got := blast(again); !slices.Contains(got, name) {
			t.Errorf("blast radius after a restart = %v, want %s in it", got, name)
		}
		v2 := examples.ShopOrdersV2()
		v2.Labels = labels
		reg, err := again.as("checkout").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v2, EffectiveTime: ts(start.Add(notice))})
		if err != nil {
			t.Fatalf("register v2: %v", err)
		}
		if got := consumerNames(reg.GetAffectedConsumers()); !slices.Equal(got, []string{name}) {
			t.Errorf("v2 affects %v, want %s only (spark/features.order_totals reads amount, which v2 keeps)", got, name)
		}
		announced := eventsOf(t, again.as("viewer"), registryv1.EventType_EVENT_TYPE_CHANGE_ANNOUNCED)
		if len(announced) != 1 || !slices.Contains(announced[0].GetConsumers(), name) {
			t.Errorf("announcements %v, want v2's naming %s", announced, name)
		}
	})
}

// TestCanonicalDatasetConsumer: a job reading the canonical model
// commerce.order by name, before the model is registered, keeps the
// dataset with its fields; registering the model links it as a consumer of
// the model's fields customer_id and amount, so a breaking change to any
// subject feeding them reaches it. A job reading a table named like the
// subject (in another namespace) is linked when the subject is registered.
func TestCanonicalDatasetConsumer(t *testing.T) {
	e := newEnv(t, storagetest.SQLiteURL(t), newFakeClock())
	ctx := context.Background()
	js := strings.ReplaceAll(strings.ReplaceAll(riskEvent, `"postgres://db:5432"`, `"seam"`), "shop.public.orders", "commerce.order")
	// Another job reads a warehouse table named like the subject.
	byName := strings.NewReplacer("features.order_risk", "features.order_mix", "00000000000a", "00000000000c",
		`"postgres://db:5432"`, `"warehouse"`, "shop.public.orders", "shop.orders").Replace(riskEvent)
	for _, ev := range []string{js, byName} {
		if _, err := e.as("team-ml").RecordLineage(ctx, lineageEvents(t, []byte(ev))); err != nil {
			t.Fatal(err)
		}
	}
	e.seed(t)
	want := `inputs:{subject:"shop.orders" fields:"customer_id" usage:USAGE_KIND_JOIN_KEY} inputs:{subject:"shop.orders" fields:"amount" usage:USAGE_KIND_FEATURE}`
	if _, got := consumerInputs(t, e, "spark/features.order_mix"); got != want {
		t.Errorf("a dataset named like the subject, after it is registered:\ngot  %s\nwant %s", got, want)
	}
	want = `inputs:{canonical:"commerce.order" fields:"customer_id" usage:USAGE_KIND_JOIN_KEY} inputs:{canonical:"commerce.order" fields:"amount" usage:USAGE_KIND_FEATURE}`
	if _, got := consumerInputs(t, e, "spark/features.order_risk"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	check, err := e.as("checkout").CheckContract(ctx, &registryv1.CheckContractRequest{Contract: examples.ShopOrdersV2()})
	if err != nil {
		t.Fatal(err)
	}
	if got := consumerNames(check.GetAffectedConsumers()); !slices.Contains(got, "spark/features.order_risk") {
		t.Errorf("v2 affects %v, want the canonical consumer", got)
	}
}
