package registry

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/platform/clocktest"
	"github.com/seamdata/seam/platform/storage/storagetest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/idmap"
)

// A bank feed the registry has never seen: account_ref is a pattern-checked
// string ("ACC-00012345") that v2 turns into the UUID of the new core
// banking system, translated back to the reference for the canonical
// account_number.
const (
	bankingModel = `
name: banking.transaction
owner: team-data-platform
fields:
  - {name: txn_id, type: STRING, required: true, key: true}
  - {name: account_number, type: STRING, required: true, identifier: {namespace: account, format: acc-ref}}
  - {name: amount, type: DOUBLE, required: true}
  - {name: booked_at, type: TIMESTAMP, required: true}
`
	bankV1 = `
subject: bank.transactions
owner: team-payments
compatibility: BACKWARD
notice_period: 14d
additional_fields: quarantine
fields:
  - {name: txn_id, type: STRING, required: true, key: true, pattern: "^TX-[0-9]{10}$"}
  - name: account_ref
    type: STRING
    required: true
    pattern: "^ACC-[0-9]{8}$"
    identifier: {namespace: account, format: acc-ref}
  - {name: amount_cents, type: INT64, required: true}
  - {name: booked_at, type: TIMESTAMP, required: true}
checks:
  - {name: account_match, rule: "match_rate(account_ref, max_point_change: 5, direction: drop, baseline: 7)"}
  - {name: booked_in_day, rule: "in_partition(booked_at, tolerance: 1h)"}
mapping:
  canonical: banking.transaction
  fields:
    txn_id: {from: txn_id}
    account_number: {from: account_ref}
    amount: {from: amount_cents, cast: {to: DOUBLE, scale: 0.01}}
    booked_at: {from: booked_at}
`
)

// bankV2 is v1 with account_ref a UUID translated back to acc-ref.
func bankV2(t testing.TB) *contractv1.Contract {
	t.Helper()
	return loadBank(t, strings.NewReplacer(
		`    type: STRING
    required: true
    pattern: "^ACC-[0-9]{8}$"
    identifier: {namespace: account, format: acc-ref}`, `    type: UUID
    required: true
    identifier: {namespace: account, format: uuid}`,
		`account_number: {from: account_ref}`, `account_number: {from: account_ref, translate: {from: account/uuid, to: account/acc-ref}}`,
	).Replace(bankV1))
}

func loadBank(t testing.TB, yaml string) *contractv1.Contract {
	t.Helper()
	c, err := contract.Load([]byte(yaml), "bank.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// switchableIdmap is a real idmap server behind a dialer that can be
// switched off, so a test can start the registry before idmap, or take
// idmap away and bring it back.
type switchableIdmap struct {
	t   testing.TB
	url string

	mu  sync.Mutex
	lis *bufconn.Listener
	gs  *grpc.Server
	srv *idmap.Server

	conn   *grpc.ClientConn // the registry's connection
	client idmapv1.IdMapServiceClient
}

func newSwitchableIdmap(t testing.TB, url string) *switchableIdmap {
	t.Helper()
	m := &switchableIdmap{t: t, url: url}
	conn, err := grpc.NewClient("passthrough:///idmap",
		grpc.WithContextDialer(m.dial),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.5, MaxDelay: 50 * time.Millisecond}}))
	if err != nil {
		t.Fatal(err)
	}
	m.conn = conn
	m.client = idmapv1.NewIdMapServiceClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		m.down()
	})
	return m
}

func (m *switchableIdmap) dial(ctx context.Context, _ string) (net.Conn, error) {
	m.mu.Lock()
	lis := m.lis
	m.mu.Unlock()
	if lis == nil {
		return nil, errors.New("idmap is not running")
	}
	return lis.DialContext(ctx)
}

// up starts idmap on its store (reopening what an earlier run wrote).
func (m *switchableIdmap) up() {
	m.t.Helper()
	srv, err := idmap.New(context.Background(), idmap.Config{StoreURL: m.url, Principal: func(context.Context) string { return "operator" }})
	if err != nil {
		m.t.Fatalf("idmap.New: %v", err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	srv.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	m.mu.Lock()
	m.lis, m.gs, m.srv = lis, gs, srv
	m.mu.Unlock()
}

// down stops idmap; its connections break and new ones are refused.
func (m *switchableIdmap) down() {
	m.mu.Lock()
	gs, srv := m.gs, m.srv
	m.lis, m.gs, m.srv = nil, nil, nil
	m.mu.Unlock()
	if gs != nil {
		gs.Stop()
		if err := srv.Close(); err != nil {
			m.t.Errorf("idmap Close: %v", err)
		}
	}
}

func (m *switchableIdmap) createAccount(t testing.TB) {
	t.Helper()
	if _, err := m.client.CreateNamespace(context.Background(), &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "account", Formats: []*idmapv1.Format{
		{Name: "acc-ref", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: `^ACC-[0-9]{8}$`},
		{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
	}}}); err != nil {
		t.Fatalf("CreateNamespace account: %v", err)
	}
}

func (m *switchableIdmap) importAccounts(t testing.TB, pairs ...[2]string) {
	t.Helper()
	stream, err := m.client.ImportPairs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: &idmapv1.ImportHeader{Namespace: "account", FromFormat: "uuid", ToFormat: "acc-ref"}}}); err != nil {
		t.Fatal(err)
	}
	chunk := &idmapv1.PairChunk{}
	for _, p := range pairs {
		chunk.Pairs = append(chunk.Pairs, &idmapv1.Pair{From: p[0], To: p[1]})
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: chunk}}); err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.CloseAndRecv(); err != nil || !resp.GetCommitted() {
		t.Fatalf("import uuid→acc-ref: %v, %v", resp, err)
	}
}

// bankEnv is a registry with an idmap peer on stores of one kind.
func bankEnv(t *testing.T, url string) (*env, *switchableIdmap) {
	t.Helper()
	idm := newSwitchableIdmap(t, storeLike(t, url))
	idm.up()
	e := newEnvConfig(t, Config{StoreURL: url, Idmap: idm.conn, IdmapTimeout: 2 * time.Second}, newFakeClock())
	if _, err := e.as("admin").RegisterCanonicalModel(context.Background(), &registryv1.RegisterCanonicalModelRequest{Model: loadBankModel(t)}); err != nil {
		t.Fatalf("RegisterCanonicalModel banking.transaction: %v", err)
	}
	return e, idm
}

// storeLike is a fresh store of the same kind as url, for idmap.
func storeLike(t *testing.T, url string) string {
	if strings.HasPrefix(url, "postgres") {
		return storagetest.PostgresURL(t)
	}
	return storagetest.SQLiteURL(t)
}

func loadBankModel(t testing.TB) *contractv1.CanonicalModel {
	t.Helper()
	m, err := contract.LoadCanonicalModel([]byte(bankingModel), "banking.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func problemReasons(ps []*registryv1.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.GetReason())
	}
	return out
}

func bankEvents(t testing.TB, e *env, typ registryv1.EventType) []*registryv1.Event {
	t.Helper()
	resp, err := e.as("viewer").ListEvents(context.Background(), &registryv1.ListEventsRequest{Subjects: []string{"bank.transactions"}, Types: []registryv1.EventType{typ}})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	return resp.GetEvents()
}

// TestMigrationsThatMustWork: a contract naming a missing namespace is
// refused by check and register; v2, whose lookup migration has no table,
// is refused when it would take effect now and, registered with notice,
// held SCHEDULED past its effective time with one event saying why, until
// the table is imported.
func TestMigrationsThatMustWork(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		e, idm := bankEnv(t, url)
		ctx := context.Background()
		owner := e.as("admin")

		// No namespace: check and register both refuse, naming it.
		chk, err := owner.CheckContract(ctx, &registryv1.CheckContractRequest{Contract: loadBank(t, bankV1)})
		if err != nil {
			t.Fatalf("CheckContract v1: %v", err)
		}
		if chk.GetVerdict() != registryv1.Verdict_VERDICT_REFUSED || !slices.Contains(problemReasons(chk.GetProblems()), ReasonNamespaceNotFound) ||
			!strings.Contains(chk.GetProblems()[0].GetMessage(), `idmap namespace "account", which does not exist`) || chk.GetProblems()[0].GetPath() != "contract.fields[1].identifier" {
			t.Fatalf("check v1 without the namespace = %v %v, want REFUSED by IDMAP_NAMESPACE_NOT_FOUND at contract.fields[1].identifier", chk.GetVerdict(), chk.GetProblems())
		}
		_, err = owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadBank(t, bankV1)})
		wantCode(t, err, codes.FailedPrecondition)
		if !strings.Contains(status.Convert(err).Message(), `"account"`) || errorReason(err) != ReasonNamespaceNotFound {
			t.Fatalf("register v1 without the namespace = %v (reason %s), want IDMAP_NAMESPACE_NOT_FOUND naming account", err, errorReason(err))
		}

		idm.createAccount(t)
		guid := loadBank(t, strings.NewReplacer("format: acc-ref}", "format: guid}",
			"account_number: {from: account_ref}", "account_number: {from: account_ref, translate: {from: account/guid, to: account/acc-ref}}").Replace(bankV1))
		chk, err = owner.CheckContract(ctx, &registryv1.CheckContractRequest{Contract: guid})
		if err != nil || !slices.Contains(problemReasons(chk.GetProblems()), ReasonFormatNotFound) || !strings.Contains(chk.GetProblems()[0].GetMessage(), `format "guid" of idmap namespace "account", which has formats acc-ref, uuid`) {
			t.Fatalf("check with an unknown format = %v, %v; want IDMAP_FORMAT_NOT_FOUND listing acc-ref, uuid", chk.GetProblems(), err)
		}
		if _, err := owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadBank(t, bankV1)}); err != nil {
			t.Fatalf("register v1: %v", err)
		}

		// v2 now (an incident override) with no table: refused, naming the
		// missing table.
		v2 := bankV2(t)
		override := &registryv1.NoticeOverride{Reason: "INC-12: the feed already sends UUIDs"}
		_, err = owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v2, Override: override})
		wantCode(t, err, codes.FailedPrecondition)
		msg := status.Convert(err).Message()
		if errorReason(err) != ReasonMigrationNotReady || !strings.Contains(msg, "no rule and no lookup table for uuid→acc-ref") ||
			!strings.Contains(msg, "seam idmap import account FILE.csv --from uuid --to acc-ref") {
			t.Fatalf("register v2 with no table = %q (reason %s), want MIGRATION_NOT_READY naming the uuid→acc-ref table", msg, errorReason(err))
		}
		chk, err = owner.CheckContract(ctx, &registryv1.CheckContractRequest{Contract: v2, Override: override})
		if err != nil || chk.GetVerdict() != registryv1.Verdict_VERDICT_REFUSED || len(chk.GetMigration()) != 1 || chk.GetMigration()[0].GetReady() {
			t.Fatalf("check v2 now = %v %v %v, want REFUSED with one translation not ready", chk.GetVerdict(), chk.GetMigration(), err)
		}

		// With notice: registered SCHEDULED, and the answer says the
		// migration is not ready yet.
		effective := start.Add(notice + time.Hour)
		reg, err := owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: v2, EffectiveTime: ts(effective)})
		if err != nil {
			t.Fatalf("register v2 with notice: %v", err)
		}
		if reg.GetVersion().GetStatus() != registryv1.VersionStatus_VERSION_STATUS_SCHEDULED || len(reg.GetMigration()) != 1 ||
			reg.GetMigration()[0].GetReady() || reg.GetMigration()[0].GetField() != "account_number" {
			t.Fatalf("v2 with notice = %v, migration %v; want SCHEDULED with account_number's translation not ready", reg.GetVersion().GetStatus(), reg.GetMigration())
		}

		// Its effective time passes with no table: it stays SCHEDULED,
		// once said, through many scheduler ticks.
		e.run(t)
		e.clock.Set(effective.Add(time.Minute))
		clocktest.Eventually(t, "an ACTIVATION_HELD event", func() bool { return len(bankEvents(t, e, registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD)) > 0 })
		time.Sleep(200 * time.Millisecond) // ten ticks
		held := bankEvents(t, e, registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD)
		if len(held) != 1 || !strings.Contains(held[0].GetMessage(), "stays SCHEDULED") || !strings.Contains(held[0].GetMessage(), "uuid→acc-ref") {
			t.Fatalf("ACTIVATION_HELD events = %v, want exactly one naming uuid→acc-ref", held)
		}
		got, err := owner.GetContract(ctx, &registryv1.GetContractRequest{Subject: "bank.transactions", Version: 2})
		if err != nil || got.GetVersion().GetStatus() != registryv1.VersionStatus_VERSION_STATUS_SCHEDULED || got.GetVersion().GetActivationHold() == "" {
			t.Fatalf("v2 after its effective time = %v (%v), want SCHEDULED with a hold", got.GetVersion(), err)
		}
		at, err := owner.GetContract(ctx, &registryv1.GetContractRequest{Subject: "bank.transactions", AtTime: ts(effective.Add(time.Second))})
		if err != nil || at.GetVersion().GetVersion() != 1 {
			t.Fatalf("version in effect after v2's effective time while held = v%d (%v), want v1", at.GetVersion().GetVersion(), err)
		}

		// A lookup rule alone changes the reason (the table is empty): one
		// more event, with the new reason.
		if _, err := idm.client.SetRule(ctx, &idmapv1.SetRuleRequest{Namespace: "account",
			Rule: &idmapv1.Rule{FromFormat: "uuid", ToFormat: "acc-ref", Strategy: &idmapv1.Rule_Lookup{Lookup: &idmapv1.LookupRule{}}}}); err != nil {
			t.Fatal(err)
		}
		clocktest.Eventually(t, "a second ACTIVATION_HELD event", func() bool { return len(bankEvents(t, e, registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD)) == 2 })
		if m := bankEvents(t, e, registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD)[1].GetMessage(); !strings.Contains(m, "through its lookup table, which has no pairs") {
			t.Fatalf("second hold message %q, want the empty table named", m)
		}

		// The table arrives: v2 activates once, taking effect now.
		idm.importAccounts(t, [2]string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "ACC-00012345"})
		clocktest.Eventually(t, "v2 active", func() bool {
			got, err := owner.GetContract(ctx, &registryv1.GetContractRequest{Subject: "bank.transactions"})
			return err == nil && got.GetVersion().GetVersion() == 2
		})
		time.Sleep(100 * time.Millisecond)
		activated := bankEvents(t, e, registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED)
		var v2Activations []*registryv1.Event
		for _, ev := range activated {
			if ev.GetVersion() == 2 {
				v2Activations = append(v2Activations, ev)
			}
		}
		if len(v2Activations) != 1 || !strings.Contains(v2Activations[0].GetMessage(), "held since") {
			t.Fatalf("v2 activations = %v, want exactly one saying it was held", v2Activations)
		}
		got, err = owner.GetContract(ctx, &registryv1.GetContractRequest{Subject: "bank.transactions", Version: 2})
		if err != nil || got.GetVersion().GetActivationHold() != "" || !got.GetVersion().GetEffectiveTime().AsTime().Equal(effective.Add(time.Minute)) {
			t.Fatalf("v2 after activation = hold %q, effective %v (%v); want no hold and effective when it activated, %v",
				got.GetVersion().GetActivationHold(), got.GetVersion().GetEffectiveTime().AsTime(), err, effective.Add(time.Minute))
		}
		at, err = owner.GetContract(ctx, &registryv1.GetContractRequest{Subject: "bank.transactions", AtTime: ts(effective.Add(time.Second))})
		if err != nil || at.GetVersion().GetVersion() != 1 {
			t.Fatalf("version in effect while v2 was held = v%d (%v), want v1 (history stays true)", at.GetVersion().GetVersion(), err)
		}

		// Now the same migration is ready, and a check says how.
		if _, err = owner.CheckContract(ctx, &registryv1.CheckContractRequest{Contract: loadBank(t, strings.Replace(bankV1, "owner: team-payments", "owner: team-payments\ndescription: v3", 1))}); err != nil {
			t.Fatal(err)
		}
		v3 := bankV2(t)
		v3.Description = "v3"
		chk, err = owner.CheckContract(ctx, &registryv1.CheckContractRequest{Contract: v3})
		if err != nil || chk.GetVerdict() != registryv1.Verdict_VERDICT_ADDITIVE || len(chk.GetMigration()) != 1 || !chk.GetMigration()[0].GetReady() ||
			chk.GetMigration()[0].GetStrategy() != "table" || chk.GetMigration()[0].GetTablePairs() != 1 {
			t.Fatalf("check of v3 = %v %v (%v), want ADDITIVE with the translation ready through a 1-pair table", chk.GetVerdict(), chk.GetMigration(), err)
		}
	})
}

// TestRegistryBeforeIdmap: a registry whose idmap is not up yet serves,
// registers contracts that name no identifiers, answers UNAVAILABLE for
// those that do, and holds a due version (one event) until idmap answers.
func TestRegistryBeforeIdmap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	idm := newSwitchableIdmap(t, storagetest.SQLiteURL(t))
	e := newEnvConfig(t, Config{StoreURL: storagetest.SQLiteURL(t), Idmap: idm.conn, IdmapTimeout: 300 * time.Millisecond}, newFakeClock())
	owner := e.as("admin")
	if _, err := owner.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: loadBankModel(t)}); err != nil {
		t.Fatal(err)
	}
	plain := loadBank(t, "subject: bank.fees\nowner: team-payments\nfields:\n  - {name: fee_id, type: STRING, required: true, key: true}\n")
	if _, err := owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: plain}); err != nil {
		t.Fatalf("register a contract without identifiers while idmap is down: %v", err)
	}
	_, err := owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadBank(t, bankV1)})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "idmap is unavailable, retry later") {
		t.Fatalf("register v1 while idmap is down = %v, want UNAVAILABLE naming idmap", err)
	}

	idm.up()
	idm.createAccount(t)
	idm.importAccounts(t, [2]string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "ACC-00012345"})
	if _, err := owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadBank(t, bankV1)}); err != nil {
		t.Fatalf("register v1 once idmap is up: %v", err)
	}
	effective := start.Add(notice + time.Hour)
	reg, err := owner.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: bankV2(t), EffectiveTime: ts(effective)})
	if err != nil || !reg.GetMigration()[0].GetReady() {
		t.Fatalf("register v2 with notice and a table = %v, %v; want it registered with the migration ready", reg.GetMigration(), err)
	}

	// idmap goes away before v2's effective time: v2 waits, said once.
	idm.down()
	e.run(t)
	e.clock.Set(effective.Add(time.Second))
	clocktest.Eventually(t, "an ACTIVATION_HELD event", func() bool { return len(bankEvents(t, e, registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD)) > 0 })
	time.Sleep(time.Second) // several tries, each bounded by IdmapTimeout
	if held := bankEvents(t, e, registryv1.EventType_EVENT_TYPE_ACTIVATION_HELD); len(held) != 1 || held[0].GetAttributes()["reason"] != idmapSilent {
		t.Fatalf("holds while idmap is down = %v, want one saying idmap did not answer", held)
	}
	idm.up()
	clocktest.Eventually(t, "v2 active once idmap is back", func() bool {
		got, err := owner.GetContract(ctx, &registryv1.GetContractRequest{Subject: "bank.transactions"})
		return err == nil && got.GetVersion().GetVersion() == 2
	})
}

func canonicalInput(model string, usage registryv1.UsageKind, fields ...string) *registryv1.Input {
	return &registryv1.Input{Source: &registryv1.Input_Canonical{Canonical: model}, Fields: fields, Usage: usage}
}

// TestCanonicalConsumersAnnounced: a consumer that declares only the
// canonical field it joins on (account_number) is announced a change of
// the source field that feeds it (account_ref), with the path through the
// mapping, and is in the rerun order after a backfill.
func TestCanonicalConsumersAnnounced(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		e, idm := bankEnv(t, url)
		ctx := context.Background()
		idm.createAccount(t)
		idm.importAccounts(t, [2]string{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "ACC-00012345"})
		if _, err := e.as("admin").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadBank(t, bankV1)}); err != nil {
			t.Fatal(err)
		}
		join, feature := registryv1.UsageKind_USAGE_KIND_JOIN_KEY, registryv1.UsageKind_USAGE_KIND_FEATURE
		for _, c := range []*registryv1.Consumer{
			{Name: "risk.account_scores", Owner: "team-risk", Produces: []string{"risk.scores"}, Inputs: []*registryv1.Input{canonicalInput("banking.transaction", join, "account_number")}},
			{Name: "reports.risk", Owner: "team-bi", Inputs: []*registryv1.Input{{Source: &registryv1.Input_Dataset{Dataset: "risk.scores"}, Usage: feature}}},
			{Name: "finance.totals", Owner: "team-finance", Inputs: []*registryv1.Input{canonicalInput("banking.transaction", feature, "amount")}},
			{Name: "ledger.daily", Owner: "team-finance", Inputs: []*registryv1.Input{fromSubject("bank.transactions", "amount_cents")}},
			{Name: "orders.dashboard", Owner: "team-bi", Inputs: []*registryv1.Input{canonicalInput("banking.transaction", feature)}},
		} {
			if _, err := e.as("admin").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: c}); err != nil {
				t.Fatalf("RegisterConsumer %s: %v", c.GetName(), err)
			}
		}
		// A canonical model or field that does not exist is refused: such a
		// consumer would never hear of a change.
		for _, tc := range []struct {
			in   *registryv1.Input
			want string
		}{
			{canonicalInput("banking.transfer", join, "account_number"), "consumer.inputs[0].canonical"},
			{canonicalInput("banking.transaction", join, "account_ref"), "consumer.inputs[0].fields[0]"},
		} {
			_, err := e.as("operator").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "bad", Inputs: []*registryv1.Input{tc.in}}})
			wantCode(t, err, codes.InvalidArgument)
			if got := fieldViolations(err); !slices.Contains(got, tc.want) {
				t.Errorf("RegisterConsumer(%v) violations %v, want %s", tc.in, got, tc.want)
			}
		}

		wantAffected := func(what string, got []*registryv1.AffectedConsumer) {
			t.Helper()
			if names := consumerNames(got); !slices.Equal(names, []string{"orders.dashboard", "risk.account_scores", "reports.risk"}) {
				t.Fatalf("%s: affected %v, want orders.dashboard and risk.account_scores (reading the canonical model), then reports.risk", what, names)
			}
			risk := got[1]
			if !slices.Equal(risk.GetPath(), []string{"bank.transactions.account_ref", "banking.transaction.account_number", "risk.account_scores"}) ||
				!slices.Equal(risk.GetFields(), []string{"banking.transaction.account_number"}) || risk.GetDepth() != 1 || !slices.Equal(risk.GetUsages(), []registryv1.UsageKind{join}) {
				t.Fatalf("%s: risk.account_scores reached as %v, want depth 1 through banking.transaction.account_number as a join key", what, risk)
			}
			if p := got[2].GetPath(); !slices.Equal(p, []string{"bank.transactions.account_ref", "banking.transaction.account_number", "risk.account_scores", "risk.scores", "reports.risk"}) || got[2].GetDepth() != 2 {
				t.Fatalf("%s: reports.risk reached by %v at depth %d, want through risk.scores at depth 2", what, p, got[2].GetDepth())
			}
		}
		radius, err := e.as("viewer").GetBlastRadius(ctx, &registryv1.GetBlastRadiusRequest{Subject: "bank.transactions", Fields: []string{"account_ref"}})
		if err != nil {
			t.Fatal(err)
		}
		wantAffected("blast radius of account_ref", radius.GetConsumers())
		override := &registryv1.NoticeOverride{Reason: "INC-12: the feed already sends UUIDs"}
		chk, err := e.as("admin").CheckContract(ctx, &registryv1.CheckContractRequest{Contract: bankV2(t), Override: override})
		if err != nil {
			t.Fatal(err)
		}
		wantAffected("check of v2", chk.GetAffectedConsumers())
		reg, err := e.as("admin").RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: bankV2(t), Override: override})
		if err != nil {
			t.Fatalf("register v2: %v", err)
		}
		wantAffected("register of v2", reg.GetAffectedConsumers())
		announced := bankEvents(t, e, registryv1.EventType_EVENT_TYPE_CHANGE_ANNOUNCED)
		if len(announced) != 1 || !slices.Equal(announced[0].GetConsumers(), []string{"orders.dashboard", "risk.account_scores", "reports.risk"}) {
			t.Fatalf("CHANGE_ANNOUNCED = %v, want one to the canonical readers and reports.risk", announced)
		}

		// A backfill of the subject releases whole canonical records: every
		// reader of the model reruns, in dependency order.
		ev, err := e.as("gate").PublishEvent(ctx, &registryv1.PublishEventRequest{Event: &registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED,
			Subject: "bank.transactions", Version: 2, PartitionFrom: "2026-03-08", PartitionTo: "2026-03-08"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"finance.totals", "ledger.daily", "orders.dashboard", "risk.account_scores", "reports.risk"}
		if got := ev.GetEvent().GetConsumers(); !slices.Equal(got, want) {
			t.Fatalf("BACKFILL_COMPLETED consumers %v, want %v", got, want)
		}
		order, err := e.as("viewer").GetRerunOrder(ctx, &registryv1.GetRerunOrderRequest{Root: &registryv1.GetRerunOrderRequest_Subject{Subject: "bank.transactions"}})
		if err != nil || !slices.Equal(order.GetConsumers(), want) {
			t.Fatalf("rerun order of bank.transactions = %v (%v), want %v", order.GetConsumers(), err, want)
		}
		order, err = e.as("viewer").GetRerunOrder(ctx, &registryv1.GetRerunOrderRequest{Root: &registryv1.GetRerunOrderRequest_Canonical{Canonical: "banking.transaction"}})
		if err != nil || !slices.Equal(order.GetConsumers(), []string{"finance.totals", "orders.dashboard", "risk.account_scores", "reports.risk"}) {
			t.Fatalf("rerun order of banking.transaction = %v (%v)", order.GetConsumers(), err)
		}
	})
}
