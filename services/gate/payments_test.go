package gate

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// bank.payments is a source of our own for the partition tests: daily
// partitions of card payments booked at a time of day, with an account
// reference that resolves in the account namespace. v1 sends the
// reference as "ACC-00001234"; v2 (the fix after the source switched to
// UUIDs without notice) declares the UUID and maps it back to the
// reference through idmap.
//
//go:embed testdata/bank_payments_v1.yaml
var paymentsV1YAML string

// paymentsV2YAML is v1 with the account as a UUID, translated back.
var paymentsV2YAML = strings.NewReplacer(
	"    type: STRING\n    required: true\n    identifier: {namespace: account, format: ref}",
	"    type: UUID\n    required: true\n    identifier: {namespace: account, format: uuid}",
	"    account: {from: account_ref}",
	"    account: {from: account_ref, translate: {from: account/uuid, to: account/ref}}",
).Replace(paymentsV1YAML)

//go:embed testdata/bank_payment_model.yaml
var paymentModelYAML string

// The accounts the source's payments come from: 2,000 of them, of which
// 1,960 are known to the account namespace (a 98% match rate).
const (
	accounts      = 2000
	knownAccounts = 1960
)

func accountRef(k int) string  { return fmt.Sprintf("ACC-%08d", k) }
func accountUUID(k int) string { return fmt.Sprintf("a0000000-0000-4000-8000-%012d", k) }

// firstDay is the data date of payments day 0.
var firstDay = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

func payDay(d int) string { return firstDay.AddDate(0, 0, d).Format(time.DateOnly) }

// paymentsDay describes one day of payments.
type paymentsDay struct {
	day int
	n   int
	// missing is how many payments lack account_ref; uuids sends every
	// account as a UUID (the source's unannounced change); mean is the
	// day's mean amount.
	missing int
	uuids   bool
	mean    float64
}

// lines renders the day as NDJSON lines, in a fixed order whatever the
// chunking, with ids unique across days.
func (p paymentsDay) lines() []string {
	rng := rand.New(rand.NewPCG(uint64(p.day), 7))
	mean := p.mean
	if mean == 0 {
		mean = 85
	}
	out := make([]string, p.n)
	// Missing accounts are spread over the day, so every chunking of it
	// has some early and some late.
	missingEvery := 0
	if p.missing > 0 {
		missingEvery = p.n / p.missing
	}
	for i := range out {
		k := 1 + rng.IntN(accounts)
		at := firstDay.AddDate(0, 0, p.day).Add(time.Duration(i) * 24 * time.Hour / time.Duration(p.n))
		amount := mean + float64(i%21-10)*2 // symmetric around the mean
		var b strings.Builder
		fmt.Fprintf(&b, `{"payment_id":"PAY-%08d"`, p.day*100000+i)
		switch {
		case missingEvery > 0 && i%missingEvery == 0 && i/missingEvery < p.missing:
		case p.uuids:
			fmt.Fprintf(&b, `,"account_ref":%q`, accountUUID(k))
		default:
			fmt.Fprintf(&b, `,"account_ref":%q`, accountRef(k))
		}
		fmt.Fprintf(&b, `,"amount":%.2f,"currency":"EUR","booked_at":%q,"memo":"card \"%d\", shop %d"}`, amount, at.Format(time.RFC3339), k, i%17)
		out[i] = b.String()
	}
	return out
}

// registerPayments registers bank.payment and bank.payments v1 (with the
// registry's clock at firstDay plus 60 days, so every October day is in
// the past) and creates the account namespace with its references.
func registerPayments(t testing.TB, p *peers, idc idmapv1.IdMapServiceClient) {
	t.Helper()
	registerPaymentsAs(t, p, idc, paymentsV1YAML)
}

// registerPaymentsAs is registerPayments with v1 written as v1YAML.
func registerPaymentsAs(t testing.TB, p *peers, idc idmapv1.IdMapServiceClient, v1YAML string) {
	t.Helper()
	ctx := context.Background()
	m, err := contract.LoadCanonicalModel([]byte(paymentModelYAML), "bank_payment.yaml")
	if err != nil {
		t.Fatalf("load model: %v", err)
	}
	if _, err := p.registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: m}); err != nil {
		t.Fatalf("register bank.payment: %v", err)
	}
	if _, err := idc.CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "account", Formats: []*idmapv1.Format{
		{Name: "ref", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING}, {Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID}}}}); err != nil {
		t.Fatalf("CreateNamespace account: %v", err)
	}
	if _, err := p.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: loadPayments(t, v1YAML)}); err != nil {
		t.Fatalf("register bank.payments v1: %v", err)
	}
	// The account master: every known account's UUID and reference, so
	// references resolve and UUIDs translate back.
	importAccounts(t, idc, knownAccounts)
}

func loadPayments(t testing.TB, yaml string) *contractv1.Contract {
	t.Helper()
	c, err := contract.Load([]byte(yaml), "bank_payments.yaml")
	if err != nil {
		t.Fatalf("load bank.payments: %v", err)
	}
	return c
}

// importAccounts loads the uuid → ref table of accounts 1..known.
func importAccounts(t testing.TB, idc idmapv1.IdMapServiceClient, known int) {
	t.Helper()
	pairs := make([]*idmapv1.Pair, 0, known)
	for k := 1; k <= known; k++ {
		pairs = append(pairs, &idmapv1.Pair{From: accountUUID(k), To: accountRef(k)})
	}
	importTable(t, idc, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "uuid", ToFormat: "ref"}, pairs)
}

// paymentsEnv is a gate with the real registry, idmap and adapter and
// bank.payments v1 registered.
func paymentsEnv(t testing.TB, url string, mod func(*Config)) (*gateEnv, idmapv1.IdMapServiceClient) {
	t.Helper()
	p := newPeers(t)
	p.clock.Add(firstDay.AddDate(0, 0, 60).Sub(p.clock.Now()))
	idc := useRealPeers(t, p)
	registerPayments(t, p, idc)
	return startGate(t, p, url, mod), idc
}
