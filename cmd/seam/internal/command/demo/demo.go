// Package demo holds `seam demo`: the incident drill of the source
// document, played end to end against a real Seam.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	idmapcmd "github.com/seamdata/seam/cmd/seam/internal/command/idmap"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record/recordtest"
	"github.com/seamdata/seam/platform/dial"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// demoConfig shapes the incident drill.
type demoConfig struct {
	days       int
	perDay     int
	batch      int
	breakDay   int
	seed       uint64
	customers  int
	knownShare float64
	// fix restores the broken day: by default the operator's manual steps
	// (drill.fix); a test plugs in `seam incident --apply` instead.
	fix func(d *drill, ctx context.Context, day int) error
}

// demoOutcome is what the drill measured; its test asserts on it.
type demoOutcome struct {
	Sent           int64          `json:"sent"`
	Accepted       int64          `json:"accepted"`
	Released       int64          `json:"released"`
	Held           int64          `json:"still_quarantined"`
	Duplicates     int64          `json:"duplicates"`
	BlockedBatches int64          `json:"blocked_batches"`
	AlertDays      map[string]int `json:"first_alert_day"` // alert kind → first day it fired
	ContainedDay   int            `json:"contained_day"`
	MatchRates     []float64      `json:"match_rates"` // per day, after the replay
	RerunConsumers []string       `json:"rerun_consumers"`
}

// New returns `seam demo`.
func New(g *client.Globals) *cobra.Command {
	var scale float64
	var seed uint64
	var days int
	return client.Leaf("demo", cobra.NoArgs, client.Help{
		Short: "Play the incident drill: an unannounced identifier change, caught, contained, fixed, backfilled",
		Long: `Play the story Seam exists for, against a temporary all-in-one Seam (or a
running one with --addr): shop.orders sends 500,000 orders a day whose
customer_id matches the customer master about 98% of the time. On day 5 a
promotion lifts the average order value from 85 to 102 (an ALERT; the
records pass). On day 6 a batch where 0.4% of orders lack customer_id dooms
the day (a BLOCK check is judged on the whole partition), so the source
resends the day corrected as a replacement. Each day is sealed after its
last batch and judged whole. On day 8 the source switches customer_id to
UUIDs without notice: Seam quarantines instead of emitting nulls, raises
the unannounced-change and match-rate alerts when the day is sealed, the
operator contains the source, an admin registers v2 (UUID, with a migration back to
the integer) waiving the notice for the incident, consumers are told, the
uuid→int table is loaded, and day 8 is replayed. It ends with the
reconciliation: records sent = accepted + released + still quarantined,
with no duplicate. Deterministic for a given --seed.`,
		Example: `  seam demo                 # 10 days of 500,000 orders (a few minutes)
  seam demo --scale 0.01    # 5,000 orders a day, seconds
  seam demo --addr 127.0.0.1:7070 --scale 0.1`,
		Flags: func(fs *pflag.FlagSet) {
			fs.Float64Var(&scale, "scale", 1, "fraction of the default volume (500,000 orders a day)")
			fs.Uint64Var(&seed, "seed", 42, "seed of the simulated data")
			fs.IntVar(&days, "days", 10, "days to simulate")
		},
	}, func(cmd *cobra.Command, _ []string) error {
		if scale <= 0 || scale > 1 {
			return exit.Usagef("--scale must be in (0, 1]")
		}
		if days < 9 {
			return exit.Usagef("--days must be at least 9: the source breaks on day 8")
		}
		cfg := demoConfig{
			days: days, perDay: max(1000, int(500_000*scale)), batch: 1000, breakDay: 8, seed: seed,
			customers: max(1000, int(100_000*scale)), knownShare: 0.98,
		}
		if err := g.ValidateOutput(); err != nil {
			return err
		}
		ctx := cmd.Context()
		remote := cmd.Flags().Changed("addr")
		conn, _, admin, stop, err := demoConnection(ctx, g, remote)
		if err != nil {
			return err
		}
		defer stop()
		narrative := cmd.OutOrStdout()
		if g.JSON() {
			narrative = io.Discard
		}
		out, err := runDemo(ctx, conn, admin, cfg, narrative)
		if g.JSON() && out != nil {
			if perr := output.Value(cmd.OutOrStdout(), out); perr != nil {
				return perr
			}
		}
		if err != nil && remote {
			return remoteError(g, err)
		}
		return err
	})
}

// demoConnection connects to --addr when it was given, or starts a
// temporary all-in-one Seam and connects to it as its admin. It returns
// the connection, the address and the admin token.
func demoConnection(ctx context.Context, g *client.Globals, remote bool) (grpc.ClientConnInterface, string, string, func(), error) {
	if remote {
		conn, err := g.Connect()
		if err != nil {
			return nil, "", "", nil, err
		}
		return conn, g.Addr, g.BearerToken(), func() { conn.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "seam-demo-")
	if err != nil {
		return nil, "", "", nil, err
	}
	nctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- node.Run(nctx, node.Config{Services: node.ServiceNames, Bootstrap: true, DataDir: dir, GRPCAddr: "127.0.0.1:0", LogFormat: "text", LogLevel: "error"},
			node.Hooks{Log: io.Discard, Ready: func(a, _ string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		os.RemoveAll(dir)
		return nil, "", "", nil, fmt.Errorf("start a temporary Seam: %w", err)
	}
	stopNode := func() {
		cancel()
		// The node is stopped on purpose: the error it ends with is its
		// cancellation.
		err := <-done
		_ = err
		os.RemoveAll(dir)
	}
	tok, err := os.ReadFile(dir + "/admin.token")
	if err != nil {
		stopNode()
		return nil, "", "", nil, err
	}
	admin := strings.TrimSpace(string(tok))
	conn, err := dial.Conn(addr, dial.Options{Token: admin})
	if err != nil {
		stopNode()
		return nil, "", "", nil, err
	}
	return client.WithTimeout(conn, g.Timeout), addr, admin, func() { conn.Close(); stopNode() }, nil
}

// remoteError explains why the drill could not be played on the Seam at
// --addr: it needs an empty Seam and an admin token of it.
func remoteError(g *client.Globals, err error) error {
	if exit.Coded(err) {
		return err
	}
	// The drill wraps the call's error with what it was doing; the status
	// inside says why.
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return err
	}
	st := se.GRPCStatus()
	switch st.Code() {
	case codes.AlreadyExists:
		return exit.Usagef("the Seam at %s already holds data the drill would create (%s); seam demo --addr needs an empty Seam: start one with seam up --data-dir on a new directory, or run seam demo without --addr to play on a temporary one", g.Addr, st.Message())
	case codes.Unauthenticated:
		return exit.Usagef("the Seam at %s does not accept the token (%s); seam demo --addr needs an admin token of that Seam: pass --token or set SEAM_TOKEN (seam up wrote its admin token to admin.token in its data directory)", g.Addr, st.Message())
	case codes.PermissionDenied:
		return exit.Usagef("the drill registers contracts and contains sources, which needs an admin token of the Seam at %s: %s", g.Addr, st.Message())
	}
	return g.RPCError("seam demo", err)
}

// demoData generates the orders of the drill, deterministically.
type demoData struct {
	cfg   demoConfig
	known int // customers 1..known are in the customer master
	uuids map[int]string
}

func (d *demoData) partition(day int) string {
	return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, day-1).Format("2006-01-02")
}

// customerUUID is customer k's id in the new customer service.
func (d *demoData) customerUUID(k int) string {
	if u, ok := d.uuids[k]; ok {
		return u
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/customer/%d", d.cfg.seed, k))
	sum[6] = sum[6]&0x0f | 0x40
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	u := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	d.uuids[k] = u
	return u
}

// orderSpec says how a batch's orders look.
type orderSpec struct {
	first       int     // order number of the first record
	n           int     // records
	meanAmount  float64 // average order value
	uuidFrom    int     // records from this index on carry UUIDs (n: none)
	missingKeys int     // records, spread through the batch, without customer_id
	date        string  // the partition's date, for created_at
}

// batch returns the NDJSON of the orders.
func (d *demoData) batch(rng *rand.Rand, s orderSpec) []byte {
	var b []byte
	statuses := [...]string{"placed", "paid", "shipped", "cancelled"}
	currencies := [...]string{"USD", "EUR", "GBP"}
	gap := 0
	if s.missingKeys > 0 {
		gap = s.n / s.missingKeys
	}
	for i := range s.n {
		k := 1 + rng.IntN(d.cfg.customers)
		o := recordtest.Order{Number: s.first + i, Amount: math.Round(s.meanAmount*(0.5+rng.Float64())*100) / 100}
		switch {
		case gap > 0 && i%gap == 0 && i/gap < s.missingKeys:
		case i >= s.uuidFrom:
			o.Customer = d.customerUUID(k)
		default:
			o.Customer = k
		}
		o.Currency, o.Status = currencies[rng.IntN(3)], statuses[rng.IntN(4)]
		o.CreatedAt = fmt.Sprintf("%sT%02d:%02d:00Z", s.date, rng.IntN(24), rng.IntN(60))
		o.Items = 1 + rng.IntN(5)
		b = append(o.AppendJSON(b), '\n')
	}
	return b
}

// orderNumber reads the number out of "ORD-0000000042".
func orderNumber(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "ORD-"))
	return n, err == nil
}

// bitset marks order numbers.
type bitset []uint64

func (b bitset) set(i int) bool {
	w, m := i/64, uint64(1)<<(i%64)
	was := b[w]&m != 0
	b[w] |= m
	return was
}

func (b bitset) and(o bitset) int64 {
	var n int
	for i := range b {
		n += bits.OnesCount64(b[i] & o[i])
	}
	return int64(n)
}

// drill is one run of the demo.
type drill struct {
	cfg      demoConfig
	data     *demoData
	rng      *rand.Rand
	w        io.Writer
	registry registryv1.RegistryServiceClient
	idmap    idmapv1.IdMapServiceClient
	gate     gatev1.GateServiceClient
	out      demoOutcome
	accepted bitset
	released bitset
	next     int // next order number
	batchSeq int
	// replaceNext makes the next batch start a new sending of its day.
	replaceNext bool
}

// runDemo plays the drill and prints it to w.
func runDemo(ctx context.Context, conn grpc.ClientConnInterface, admin string, cfg demoConfig, w io.Writer) (*demoOutcome, error) {
	total := cfg.days*cfg.perDay + 2*cfg.batch*10
	d := &drill{
		cfg: cfg, data: &demoData{cfg: cfg, known: int(float64(cfg.customers) * cfg.knownShare), uuids: map[int]string{}},
		rng: rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x5ea3)), w: w,
		registry: registryv1.NewRegistryServiceClient(conn), idmap: idmapv1.NewIdMapServiceClient(conn), gate: gatev1.NewGateServiceClient(conn),
		out:      demoOutcome{AlertDays: map[string]int{}},
		accepted: make(bitset, total/64+1), released: make(bitset, total/64+1), next: 1,
	}
	if err := d.setup(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\n%-4s %-10s %9s %9s %11s %8s %10s  %s\n", "DAY", "PARTITION", "RECEIVED", "ACCEPTED", "QUARANTINED", "BLOCKED", "MATCH RATE", "SEALED")
	for day := 1; day <= cfg.days; day++ {
		if err := d.playDay(ctx, day); err != nil {
			return nil, err
		}
		if day == cfg.breakDay {
			fix := cfg.fix
			if fix == nil {
				fix = (*drill).fix
			}
			if err := fix(d, ctx, day); err != nil {
				return nil, err
			}
			// The gate re-reads the active version every second; the next
			// batches must meet the new one.
			time.Sleep(1500 * time.Millisecond)
		}
	}
	if err := d.reconcile(ctx); err != nil {
		return &d.out, err
	}
	return &d.out, nil
}

func (d *drill) note(format string, a ...any) {
	fmt.Fprintf(d.w, "     ↳ "+format+"\n", a...)
}

// setup creates the customer namespace with the customer master, the
// canonical model, shop.orders v1 and its consumers.
func (d *drill) setup(ctx context.Context) error {
	fmt.Fprintf(d.w, "Seam incident drill: %d days of %d shop.orders records, seed %d\n\n", d.cfg.days, d.cfg.perDay, d.cfg.seed)
	_, err := d.idmap.CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{
		Name: "customer", Description: "a customer of the shop",
		Formats: []*idmapv1.Format{
			{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
			{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
			{Name: "crm-code", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: "^CRM-[0-9]{8}$"},
		},
	}})
	if err != nil {
		return fmt.Errorf("create namespace customer: %w", err)
	}
	// The customer master: every known customer's integer id beside its
	// CRM code. About 2% of orders come from customers not in it yet.
	pairs := make([]*idmapv1.Pair, 0, d.data.known)
	for k := 1; k <= d.data.known; k++ {
		pairs = append(pairs, &idmapv1.Pair{From: strconv.Itoa(k), To: fmt.Sprintf("CRM-%08d", k)})
	}
	if _, err := d.importPairs(ctx, "legacy-int", "crm-code", pairs); err != nil {
		return fmt.Errorf("load the customer master: %w", err)
	}
	fmt.Fprintf(d.w, "setup: namespace customer (legacy-int, uuid, crm-code), customer master of %d customers\n", d.data.known)
	if _, err := d.registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: examples.CommerceOrder()}); err != nil {
		return fmt.Errorf("register commerce.order: %w", err)
	}
	v1, err := d.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV1()})
	if err != nil {
		return fmt.Errorf("register shop.orders v1: %w", err)
	}
	fmt.Fprintf(d.w, "setup: shop.orders v%d %s (customer_id INT64, customer/legacy-int), mapped to commerce.order\n",
		v1.GetVersion().GetVersion(), output.Enum(v1.GetVersion().GetStatus(), "VERSION_STATUS_"))
	for _, c := range []*registryv1.Consumer{
		{Name: "features.customer_ltv", Owner: "team-ml", Produces: []string{"features.customer_ltv"}, Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"customer_id", "amount"}, Usage: registryv1.UsageKind_USAGE_KIND_JOIN_KEY}}},
		{Name: "dash.daily_revenue", Owner: "team-bi", Inputs: []*registryv1.Input{
			{Source: &registryv1.Input_Subject{Subject: "shop.orders"}, Fields: []string{"amount", "currency"}, Usage: registryv1.UsageKind_USAGE_KIND_FEATURE},
			{Source: &registryv1.Input_Dataset{Dataset: "features.customer_ltv"}, Usage: registryv1.UsageKind_USAGE_KIND_PASSTHROUGH}}},
	} {
		if _, err := d.registry.RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: c}); err != nil {
			return fmt.Errorf("register consumer %s: %w", c.GetName(), err)
		}
	}
	fmt.Fprintln(d.w, "setup: consumers features.customer_ltv (joins on customer_id) and dash.daily_revenue (reads amount, and features.customer_ltv)")
	return nil
}

func (d *drill) importPairs(ctx context.Context, from, to string, pairs []*idmapv1.Pair) (*idmapv1.ImportPairsResponse, error) {
	stream, err := d.idmap.ImportPairs(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: &idmapv1.ImportHeader{Namespace: "customer", FromFormat: from, ToFormat: to}}}); err != nil {
		return nil, err
	}
	for i := 0; i < len(pairs); i += idmapcmd.PairsPerMessage {
		chunk := &idmapv1.PairChunk{Pairs: pairs[i:min(i+idmapcmd.PairsPerMessage, len(pairs))]}
		if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: chunk}}); err != nil {
			return nil, err
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	if !resp.GetCommitted() {
		return nil, fmt.Errorf("import %s→%s not committed: %d conflicts", from, to, len(resp.GetConflicts()))
	}
	return resp, nil
}

// dayTotals counts one day as the gate answered it.
type dayTotals struct{ received, accepted, quarantined, blocked int64 }

// playDay sends one day's orders in batches.
func (d *drill) playDay(ctx context.Context, day int) error {
	part := d.data.partition(day)
	var t dayTotals
	mean := 85.0
	if day == 5 {
		mean = 102 // a promotion
	}
	broken := day >= d.cfg.breakDay
	for sent := 0; sent < d.cfg.perDay; sent += d.cfg.batch {
		n := min(d.cfg.batch, d.cfg.perDay-sent)
		spec := orderSpec{first: d.next, n: n, meanAmount: mean, uuidFrom: n, date: part}
		if broken {
			// The source switched at 00:28 on the break day: the first 2%
			// of that day's orders still carry integers.
			switchAt := d.cfg.perDay / 50
			if day > d.cfg.breakDay || sent >= switchAt {
				spec.uuidFrom = 0
			} else if sent+n > switchAt {
				spec.uuidFrom = switchAt - sent
			}
		}
		if day == 6 && sent == 0 {
			// Scenario 2: a batch where 0.4% of orders lack customer_id.
			bad := spec
			bad.missingKeys = max(1, n*4/1000)
			if err := d.sendBlocked(ctx, day, part, bad, &t); err != nil {
				return err
			}
		}
		resp, err := d.ingest(ctx, part, spec)
		if err != nil {
			return fmt.Errorf("day %d: %w", day, err)
		}
		d.count(spec, resp, &t)
		for _, a := range resp.GetAlerts() {
			d.alert(day, a)
		}
	}
	// The day is complete: the pipeline seals it, and the gate judges it
	// whole.
	sealed, err := d.gate.SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: "shop.orders", Partition: part})
	if err != nil {
		return fmt.Errorf("day %d: seal: %w", day, err)
	}
	for _, a := range sealed.GetPartition().GetAlerts() {
		d.alert(day, a)
	}
	if broken && day == d.cfg.breakDay && (d.out.AlertDays["UNANNOUNCED_CHANGE"] == day || d.out.AlertDays["MATCH_RATE"] == day) {
		if _, err := d.gate.Contain(ctx, &gatev1.ContainRequest{Subject: "shop.orders", Reason: "INC-8: customer_id arrives as UUIDs without notice"}); err != nil {
			return fmt.Errorf("contain: %w", err)
		}
		d.out.ContainedDay = day
		d.note("day %d: operator CONTAINS shop.orders (INC-8); what it sends now is held in quarantine", day)
	}
	rate, err := d.matchRate(ctx, part)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "%-4d %-10s %9d %9d %11d %8d %9.1f%%  %s\n", day, part, t.received, t.accepted, t.quarantined, t.blocked, 100*rate,
		strings.TrimPrefix(sealed.GetPartition().GetVerdict().String(), "PARTITION_VERDICT_"))
	return nil
}

func (d *drill) ingest(ctx context.Context, part string, spec orderSpec) (*gatev1.IngestResponse, error) {
	d.batchSeq++
	data := d.data.batch(d.rng, spec)
	d.next += spec.n
	replace := d.replaceNext
	d.replaceNext = false
	return d.gate.Ingest(ctx, &gatev1.IngestRequest{
		Subject: "shop.orders", Partition: part, Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprintf("%s-%06d", part, d.batchSeq)}, Replace: replace,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: data}}, FirstOffset: int64(spec.first)},
	})
}

// sendBlocked sends scenario 2's batch, which dooms its day: the gate
// answers that the partition will be BLOCKED, so the source stops and
// resends the day corrected as a replacement (the caller sends it,
// starting with the next batch).
func (d *drill) sendBlocked(ctx context.Context, day int, part string, spec orderSpec, t *dayTotals) error {
	saved := d.next
	resp, err := d.ingest(ctx, part, spec)
	d.next = saved // the corrected resend reuses the order numbers
	if err != nil {
		return fmt.Errorf("day %d: %w", day, err)
	}
	p := resp.GetPartition()
	if !p.GetWillBlock() {
		return fmt.Errorf("day %d: a batch with %d of %d orders lacking customer_id did not doom its day (%v)", day, spec.missingKeys, spec.n, p)
	}
	d.out.BlockedBatches++
	t.blocked += int64(spec.n)
	detail := ""
	for _, c := range p.GetChecks() {
		if c.GetExceeded() {
			detail = fmt.Sprintf("check %s failed %d of %d records, first at position %v", c.GetCheck(), c.GetFailures(), c.GetRows(), firstOf(c.GetSamplePositions()))
		}
	}
	d.note("day %d: a batch of %d orders, %d without customer_id: the day will be BLOCKED (%s); nothing of it is published; the source resends the day corrected, replacing it", day, spec.n, spec.missingKeys, detail)
	d.replaceNext = true
	return nil
}

func firstOf(p []int64) any {
	if len(p) == 0 {
		return "-"
	}
	return p[0]
}

// count adds a batch's verdicts to the day and marks accepted orders.
func (d *drill) count(spec orderSpec, resp *gatev1.IngestResponse, t *dayTotals) {
	s := resp.GetSummary()
	t.received += s.GetReceived()
	t.accepted += s.GetAccepted()
	t.quarantined += s.GetQuarantined()
	d.out.Sent += s.GetReceived()
	d.out.Accepted += s.GetAccepted()
	for _, v := range resp.GetRecords() {
		if v.GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			if d.accepted.set(spec.first + int(v.GetIndex())) {
				d.out.Duplicates++
			}
		}
	}
}

func (d *drill) alert(day int, a *gatev1.Alert) {
	if _, seen := d.out.AlertDays[a.GetKind()]; !seen {
		d.out.AlertDays[a.GetKind()] = day
	}
	d.note("day %d: ALERT %s %s: %s", day, strings.TrimPrefix(a.GetSeverity().String(), "SEVERITY_"), a.GetKind(), a.GetMessage())
}

func (d *drill) matchRate(ctx context.Context, part string) (float64, error) {
	m, err := d.gate.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: "shop.orders", PartitionFrom: part, PartitionTo: part})
	if err != nil {
		return 0, fmt.Errorf("monitor of %s: %w", part, err)
	}
	if len(m.GetPartitions()) == 0 {
		return 0, nil
	}
	return m.GetPartitions()[0].GetMatchRate(), nil
}

// fix is the restore: the lookup table loaded (the registry takes a
// migration only once idmap can run it), v2 registered with the notice
// waived, the source released, the broken day replayed.
func (d *drill) fix(ctx context.Context, day int) error {
	pairs := make([]*idmapv1.Pair, 0, d.data.known)
	for k := 1; k <= d.data.known; k++ {
		pairs = append(pairs, &idmapv1.Pair{From: d.data.customerUUID(k), To: strconv.Itoa(k)})
	}
	imp, err := d.importPairs(ctx, "uuid", "legacy-int", pairs)
	if err != nil {
		return fmt.Errorf("load the uuid→legacy-int table: %w", err)
	}
	d.note("imported the uuid→legacy-int table from the source's one-time sync: %d pairs", imp.GetInserted())
	reason := "INC-8: the source already sends UUIDs; migration maps them back to legacy-int"
	reg, err := d.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV2(), Override: &registryv1.NoticeOverride{Reason: reason}})
	if err != nil {
		return fmt.Errorf("register shop.orders v2: %w", err)
	}
	v := reg.GetVersion()
	var rules []string
	for _, c := range v.GetChanges() {
		if c.GetLevel() == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
			rules = append(rules, c.GetRule())
		}
	}
	d.note("admin registers shop.orders v%d %s, notice waived by %s: %q (breaking: %s)", v.GetVersion(), output.Enum(v.GetStatus(), "VERSION_STATUS_"), v.GetOverrideBy(), reason, strings.Join(dedupe(rules), ", "))
	var told []string
	for _, c := range reg.GetAffectedConsumers() {
		told = append(told, c.GetConsumer())
	}
	d.note("CHANGE_ANNOUNCED to %s", strings.Join(told, ", "))

	if _, err := d.gate.Release(ctx, &gatev1.ReleaseRequest{Subject: "shop.orders", Reason: "v2 with a uuid→int migration is active"}); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	d.note("operator RELEASES shop.orders")

	part := d.data.partition(day)
	window := &gatev1.ReplayWindow{Subject: "shop.orders", PartitionFrom: part, PartitionTo: part, ContractVersion: v.GetVersion()}
	plan, err := d.gate.PlanReplay(ctx, &gatev1.PlanReplayRequest{Window: window})
	if err != nil {
		return fmt.Errorf("plan the replay: %w", err)
	}
	var why []string
	for _, r := range plan.GetRemainReasons() {
		why = append(why, fmt.Sprintf("%d %s", r.GetCount(), r.GetKey()))
	}
	d.note("replay plan for %s: %d held, %d would pass, %d would stay (%s)", part, plan.GetHeld(), plan.GetWouldRelease(), plan.GetWouldRemain(), output.OrDash(strings.Join(why, ", ")))
	sum, err := d.receive(ctx, &gatev1.ReplayRequest{Window: window, ReplayId: "demo-" + part})
	if err != nil {
		return err
	}
	d.note("REPLAYED %s through v%d: %d released, %d still quarantined", part, v.GetVersion(), sum.GetReleased(), sum.GetRemaining())
	d.note("BACKFILL_COMPLETED (event #%d): rerun %s, in this order", sum.GetEventSequence(), strings.Join(sum.GetRerunConsumers(), " → "))
	rate, err := d.matchRate(ctx, part)
	if err != nil {
		return err
	}
	d.note("match rate of %s after the backfill: %.1f%%", part, 100*rate)
	return nil
}

// receive runs a replay and counts what it released, each order once: a
// replay id used before re-sends what it released then and releases
// nothing twice, so this also reads back a replay someone else ran.
func (d *drill) receive(ctx context.Context, req *gatev1.ReplayRequest) (*gatev1.ReplaySummary, error) {
	stream, err := d.gate.Replay(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var sum *gatev1.ReplaySummary
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		if r := msg.GetRecord(); r != nil {
			n, ok := orderNumberFromJSON(r.GetJson(), r.GetObject().GetFields()["order_id"].GetStringValue())
			if !ok {
				return nil, fmt.Errorf("replay: released record %s has no order id", r.GetRecordId())
			}
			if d.released.set(n) {
				d.out.Duplicates++
			}
			d.out.Released++
		}
		if s := msg.GetSummary(); s != nil {
			sum = s
		}
	}
	if sum == nil {
		return nil, errors.New("replay ended without a summary")
	}
	d.out.RerunConsumers = sum.GetRerunConsumers()
	return sum, nil
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// orderNumberFromJSON finds the order number of a canonical record.
func orderNumberFromJSON(js []byte, fromObject string) (int, bool) {
	if fromObject != "" {
		return orderNumber(fromObject)
	}
	i := strings.Index(string(js), `"order_id":"`)
	if i < 0 {
		return 0, false
	}
	rest := string(js[i+len(`"order_id":"`):])
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return 0, false
	}
	return orderNumber(rest[:end])
}

// reconcile checks that every record sent is accounted for exactly once.
func (d *drill) reconcile(ctx context.Context) error {
	st, err := d.gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders"}})
	if err != nil {
		return fmt.Errorf("quarantine stats: %w", err)
	}
	d.out.Held = st.GetTotal()
	d.out.Duplicates += d.accepted.and(d.released)
	for day := 1; day <= d.cfg.days; day++ {
		rate, err := d.matchRate(ctx, d.data.partition(day))
		if err != nil {
			return err
		}
		d.out.MatchRates = append(d.out.MatchRates, rate)
	}
	o := d.out
	fmt.Fprintf(d.w, "\nreconciliation: sent %d = accepted %d + released %d + still quarantined %d", o.Sent, o.Accepted, o.Released, o.Held)
	if o.Sent == o.Accepted+o.Released+o.Held {
		fmt.Fprintln(d.w, "  ✓")
	} else {
		fmt.Fprintf(d.w, "  ✗ (%d unaccounted)\n", o.Sent-o.Accepted-o.Released-o.Held)
	}
	fmt.Fprintf(d.w, "duplicates: %d; blocked batches: %d (their day resent corrected, replacing them)\n", o.Duplicates, o.BlockedBatches)
	fmt.Fprintf(d.w, "match rate: %.1f%% on day 1, %.1f%% on day %d after the backfill, %.1f%% on day %d\n",
		100*o.MatchRates[0], 100*o.MatchRates[d.cfg.breakDay-1], d.cfg.breakDay, 100*o.MatchRates[d.cfg.days-1], d.cfg.days)
	if o.Sent != o.Accepted+o.Released+o.Held || o.Duplicates != 0 {
		return exit.Failf("the drill does not reconcile")
	}
	return nil
}
