package gate

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// The payments scenario of issue 12, scaled for CI. The larger variant:
//
//	go test ./services/gate -run TestPaymentsScenario -payments.per-day 20000 -payments.chunk-one-all -timeout 60m
var (
	paymentsPerDayFlag = flag.Int("payments.per-day", 0, "payments per day in TestPaymentsScenario (default 2,000; 1,000 under the race detector)")
	chunkOneAll        = flag.Bool("payments.chunk-one-all", false, "send every day (not only the deciding ones) in chunks of one record")
)

// paymentsPerDay is the scenario's payments a day. Under the race
// detector, which runs the same code ten times slower, a day is 1,000
// payments: 0.6% of them is still six, over the 0.5% threshold.
func paymentsPerDay() int {
	switch {
	case *paymentsPerDayFlag > 0:
		return *paymentsPerDayFlag
	case raceEnabled:
		return 1000
	}
	return 2000
}

// Days of the scenario.
const (
	scenarioDays = 30
	missingDay   = 10 // 0.6% of payments lack account_ref; the BLOCK threshold is 0.5%
	driftDay     = 15 // amounts 25% above the usual mean
	changeDay    = 20 // the source sends account UUIDs from this day on, unannounced
)

// scenarioDay is one day of the scenario as the source sends it.
func scenarioDay(d int) paymentsDay {
	p := paymentsDay{day: d, n: paymentsPerDay()}
	switch {
	case d == missingDay:
		p.missing = p.n * 6 / 1000
	case d == driftDay:
		p.mean = 85 * 1.25
	}
	p.uuids = d >= changeDay
	return p
}

// sender sends one day's lines as a pipeline would, sealing after the
// last of them, and returns the sealed partition.
type sender struct {
	name string
	// chunk is the records per batch on a day (0: the whole day at once).
	chunk func(day int) int
	send  func(t *testing.T, e *gateEnv, rest string, part, id string, lines []string, chunk int, replace bool) *gatev1.PartitionState
}

func chunksOf(lines []string, size int) [][]string {
	if size <= 0 {
		return [][]string{lines}
	}
	var out [][]string
	for start := 0; start < len(lines); start += size {
		out = append(out, lines[start:min(len(lines), start+size)])
	}
	return out
}

var (
	unarySender = func(t *testing.T, e *gateEnv, _ string, part, id string, lines []string, chunk int, replace bool) *gatev1.PartitionState {
		chunks := chunksOf(lines, chunk)
		var last *gatev1.IngestResponse
		for k, c := range chunks {
			req := payIngest(part, fmt.Sprintf("%s-%d", id, k), c)
			req.Replace = replace && k == 0
			req.Seal = k == len(chunks)-1
			last = mustIngest(t, e, req)
		}
		return last.GetPartition()
	}
	streamSender = func(t *testing.T, e *gateEnv, _ string, part, id string, lines []string, chunk int, replace bool) *gatev1.PartitionState {
		var chunks []streamChunk
		for k, c := range chunksOf(lines, chunk) {
			chunks = append(chunks, streamChunk{seq: int64(k), data: []byte(strings.Join(c, "\n"))})
		}
		resp, err := sendStream(context.Background(), e, &gatev1.IngestHeader{Subject: "bank.payments", Partition: part, BatchId: id,
			Format: recordv1.Format_FORMAT_NDJSON, Replace: replace, Seal: true, SummaryOnly: true}, chunks)
		if err != nil {
			t.Fatalf("stream %s of %s: %v", id, part, err)
		}
		return resp.GetPartition()
	}
	restSender = func(t *testing.T, e *gateEnv, base string, part, id string, lines []string, chunk int, replace bool) *gatev1.PartitionState {
		chunks := chunksOf(lines, chunk)
		var resp struct {
			Partition json.RawMessage `json:"partition"`
		}
		for k, c := range chunks {
			body := map[string]any{"partition": part, "batch_id": fmt.Sprintf("%s-%d", id, k), "summary_only": true,
				"replace": replace && k == 0, "seal": k == len(chunks)-1,
				"batch": map[string]any{"objects": map[string]any{"records": json.RawMessage("[" + strings.Join(c, ",") + "]")}}}
			if code := postJSON(t, e, base+"/v1/subjects/bank.payments:ingest", "pipeline", body, &resp); code != 200 {
				t.Fatalf("REST ingest of %s chunk %d answered %d", part, k, code)
			}
		}
		st := &gatev1.PartitionState{}
		if err := newJSONUnmarshal(resp.Partition, st); err != nil {
			t.Fatalf("decode the partition of %s: %v", part, err)
		}
		return st
	}
)

// dayOutcome is what a pipeline learns of a sealed day.
type dayOutcome struct {
	verdict                         gatev1.PartitionVerdict
	version                         int32
	received, accepted, quarantined int64
	alerts                          []string // kinds
	drift                           float64  // the drift alert's observed mean, 0 without one
}

func outcomeOf(p *gatev1.PartitionState) dayOutcome {
	o := dayOutcome{verdict: p.GetVerdict(), version: p.GetContractVersion(), received: p.GetCounts().GetReceived(),
		accepted: p.GetCounts().GetAccepted(), quarantined: p.GetCounts().GetQuarantined()}
	for _, a := range p.GetAlerts() {
		o.alerts = append(o.alerts, a.GetKind())
		if a.GetKind() == "MEAN_DRIFT" {
			o.drift = a.GetObserved()
		}
	}
	slices.Sort(o.alerts)
	return o
}

func (o dayOutcome) String() string {
	return fmt.Sprintf("%s v%d received %d accepted %d quarantined %d alerts %v drift %.6f",
		strings.TrimPrefix(o.verdict.String(), "PARTITION_VERDICT_"), o.version, o.received, o.accepted, o.quarantined, o.alerts, o.drift)
}

func sameOutcome(a, b dayOutcome) bool {
	if math.Abs(a.drift-b.drift) > 1e-9*math.Max(1, math.Abs(b.drift)) {
		return false
	}
	a.drift, b.drift = 0, 0
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// scenario is everything a run of the 30 days tells: each day's outcome
// (day 20's first sending apart), and what the pipeline published.
type scenario struct {
	days        [scenarioDays]dayOutcome
	changeFirst dayOutcome
	published   [scenarioDays]int64
}

// runPayments plays the 30 days through one way of sending them: a
// pipeline sends each day and seals it, publishes it unless BLOCKED; on
// the day the source starts sending UUIDs it is alerted, an admin registers
// v2 effective from that data date, and the pipeline resends the day as a
// replacement; later days go through v2.
func runPayments(t *testing.T, s sender) (*gateEnv, scenario) {
	e, _ := paymentsEnv(t, storagetest.SQLiteURL(t), nil)
	base := startREST(t, e)
	var out scenario
	for d := range scenarioDays {
		lines := scenarioDay(d).lines()
		st := s.send(t, e, base, payDay(d), "day", lines, s.chunk(d), false)
		if d == changeDay {
			out.changeFirst = outcomeOf(st)
			v2 := loadPayments(t, paymentsV2YAML)
			if _, err := e.registry.RegisterContract(context.Background(), &registryv1.RegisterContractRequest{Contract: v2,
				Override:          &registryv1.NoticeOverride{Reason: "INC-20: the source sends account UUIDs since the 21st"},
				DataEffectiveTime: timestamppb.New(firstDay.AddDate(0, 0, changeDay)), DataEffectiveReason: "INC-20: the change started on the data date 2026-10-21"}); err != nil {
				t.Fatalf("register v2 from a past data date: %v", err)
			}
			e.clock.Add(time.Second) // the gate asks the registry again
			st = s.send(t, e, base, payDay(d), "day-resent", lines, s.chunk(d), true)
		}
		out.days[d] = outcomeOf(st)
		if st.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
			t.Fatalf("%s: day %d is %v after its last batch, want sealed", s.name, d, st)
		}
		if st.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
			out.published[d] = st.GetCounts().GetAccepted()
		}
	}
	return e, out
}

// TestPaymentsScenario is issue 12's scenario on a source of our own: 30
// daily partitions of payments, sent in chunks through unary calls, the
// stream and REST (2,000 payments a day, 1,000 and one chunking per
// transport under the race detector; -payments.per-day for more). The
// day with 0.6% of payments missing the account (against a 0.5% BLOCK
// threshold) is BLOCKED whole and none of it is published; exactly one
// drift alert, on the day amounts rise 25%, with that day's full mean;
// no alert on any other normal day; the identifier change is caught the
// day it starts; and every way of sending, in chunks of 1, 997, 1,000 or
// whole days, gives the same days. Then: the blocked
// day resent corrected with replace counts once, a plain resend of
// accepted payments is quarantined as duplicates, a late file for an old
// day is judged by the version in force for it, and v2, effective from a
// past data date, judged the days from the change on (audited).
func TestPaymentsScenario(t *testing.T) {
	t.Parallel()
	n := paymentsPerDay()
	whole := func(int) int { return 0 }
	fixed := func(size int) func(int) int { return func(int) int { return size } }
	// Chunks of one record on the blocked day (where a per-chunk threshold
	// used to block some chunks and pass others), or on every day with
	// -payments.chunk-one-all; a one-record chunk costs a transaction.
	ones := func(d int) int {
		if *chunkOneAll || d == missingDay {
			return 1
		}
		return 1000
	}
	senders := []sender{
		{"unary, whole days", whole, unarySender},
		{"unary, 997", fixed(997), unarySender},
		{"stream, 1000", fixed(1000), streamSender},
		{"stream, 997", fixed(997), streamSender},
		{"stream, 1 on the blocked day", ones, streamSender},
		{"REST, 1000", fixed(1000), restSender},
	}
	if raceEnabled {
		// Each transport once, the stream in one-record chunks on the
		// blocked day: the chunkings of 997 and 1,000 are the same code
		// paths, and take minutes under the race detector.
		senders = []sender{senders[0], senders[4], senders[5]}
	}
	var ref scenario
	var refEnv *gateEnv
	for i, s := range senders {
		began := time.Now()
		e, got := runPayments(t, s)
		t.Logf("%s: %s", s.name, time.Since(began).Round(time.Millisecond))
		if i == 0 {
			ref, refEnv = got, e
			checkReference(t, ref, n)
			continue
		}
		if !sameOutcome(got.changeFirst, ref.changeFirst) {
			t.Errorf("%s: day %d first sent: %v, whole days unary: %v", s.name, changeDay, got.changeFirst, ref.changeFirst)
		}
		for d := range scenarioDays {
			if !sameOutcome(got.days[d], ref.days[d]) || got.published[d] != ref.published[d] {
				t.Errorf("%s: day %d: %v (published %d), whole days unary: %v (published %d)", s.name, d, got.days[d], got.published[d], ref.days[d], ref.published[d])
			}
		}
	}
	afterwards(t, refEnv, n)
}

// checkReference checks the verdicts the source document expects.
func checkReference(t *testing.T, ref scenario, n int) {
	t.Helper()
	for d, o := range ref.days {
		want := dayOutcome{verdict: gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED, version: 1, received: int64(n), accepted: int64(n)}
		switch {
		case d == missingDay:
			want.verdict, want.accepted, want.quarantined = gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED, int64(n-n*6/1000), int64(n*6/1000)
			want.alerts = []string{"PARTITION_BLOCKED"}
		case d == driftDay:
			want.verdict, want.alerts = gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS, []string{"MEAN_DRIFT"}
			want.drift = dayMean(scenarioDay(d).lines())
		case d >= changeDay:
			// Under v2 a UUID translates back to its reference, except the
			// accounts the source's sync did not cover: held as
			// ID_UNMAPPED, never passed with the account nulled.
			unmapped := int64(unknownAccounts(scenarioDay(d).lines()))
			want.version, want.accepted, want.quarantined = 2, int64(n)-unmapped, unmapped
		}
		if !sameOutcome(o, want) {
			t.Errorf("day %d: %v, want %v", d, o, want)
		}
	}
	if c := ref.changeFirst; c.version != 1 || c.verdict != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED_WITH_ALERTS || !slices.Equal(c.alerts, []string{"MATCH_RATE", "UNANNOUNCED_CHANGE"}) {
		t.Errorf("day %d first sent: %v, want the change caught that day: a MATCH_RATE and an UNANNOUNCED_CHANGE alert under v1", changeDay, c)
	}
	if ref.published[missingDay] != 0 {
		t.Errorf("the blocked day published %d payments, want 0", ref.published[missingDay])
	}
}

// unknownAccounts counts the payments of accounts the account master does
// not know.
func unknownAccounts(lines []string) int {
	n := 0
	for _, l := range lines {
		var p struct {
			Ref string `json:"account_ref"`
		}
		_ = json.Unmarshal([]byte(l), &p)
		var k int
		if _, err := fmt.Sscanf(p.Ref[len(p.Ref)-8:], "%d", &k); err == nil && k > knownAccounts {
			n++
		}
	}
	return n
}

// dayMean is the mean amount of a day's lines, as the pipeline computes it.
func dayMean(lines []string) float64 {
	sum := 0.0
	for _, l := range lines {
		var p struct{ Amount float64 }
		_ = json.Unmarshal([]byte(l), &p)
		sum += p.Amount
	}
	return sum / float64(len(lines))
}

// afterwards plays the end of the story on the reference run.
func afterwards(t *testing.T, e *gateEnv, n int) {
	t.Helper()
	ctx := context.Background()
	// The blocked day resent corrected as a replacement: counted once.
	corrected := paymentsDay{day: missingDay, n: n}.lines()
	st := unarySender(t, e, "", payDay(missingDay), "corrected", corrected, 0, true)
	if st.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || st.GetCounts().GetReceived() != int64(n) || st.GetAttempt() != 2 {
		t.Fatalf("corrected day %d = %v, want PASSED, %d payments counted once, sending 2", missingDay, st, n)
	}
	// A plain resend of a day already in: every payment is a duplicate.
	r := mustIngest(t, e, payIngest(payDay(5), "again", scenarioDay(5).lines()))
	if s := r.GetSummary(); s.GetAccepted() != 0 || s.GetDuplicates() != int64(n) {
		t.Fatalf("plain resend of day 5 = %v, want all %d payments duplicates", s, n)
	}
	// A late file for day 3, after v2 took effect: judged by v1, the
	// version in force for that data date, as an amendment.
	late := scenarioDay(3).lines()[:100]
	for i := range late {
		late[i] = strings.Replace(late[i], `"payment_id":"PAY-0030`, `"payment_id":"PAY-0039`, 1)
	}
	req := payIngest(payDay(3), "late", late)
	req.Seal = true
	lr := mustIngest(t, e, req)
	if p := lr.GetPartition(); p.GetContractVersion() != 1 || p.GetAmendment() != 1 || p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED ||
		p.GetCounts().GetAccepted() != 100 {
		t.Fatalf("late file for day 3 = %v, want amendment 1 judged by v1, 100 accepted", p)
	}
	// v2 applies from the data date it was registered for, and that is
	// in the registry's audit history.
	hist, err := e.registry.GetHistory(ctx, &registryv1.GetHistoryRequest{Subject: "bank.payments"})
	if err != nil {
		t.Fatalf("GetHistory: %v", err)
	}
	backdated := false
	for _, a := range hist.GetEntries() {
		backdated = backdated || (a.GetAction() == "DATA_DATE_BACKDATED" && a.GetVersion() == 2 && a.GetPrincipal() == "admin")
	}
	if !backdated {
		t.Fatalf("history %v lacks v2's data date", hist.GetEntries())
	}
}

// newJSONUnmarshal reads a message the REST gateway wrote.
func newJSONUnmarshal(b []byte, m proto.Message) error {
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
}
