package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/sources/postgres"
)

// crashingGate passes calls to the gate, but fails the source right after
// the gate answered its at-th snapshot batch: the batch is in the gate and
// not in the replica, as when the source dies between the two.
type crashingGate struct {
	gatev1.GateServiceClient
	at, n atomic.Int32
}

func (g *crashingGate) Ingest(ctx context.Context, req *gatev1.IngestRequest, opts ...grpc.CallOption) (*gatev1.IngestResponse, error) {
	resp, err := g.GateServiceClient.Ingest(ctx, req, opts...)
	if err == nil && strings.HasPrefix(req.GetBatchId(), "snapshot-") && g.n.Add(1) == g.at.Load() {
		return nil, status.Error(codes.Internal, "test: the source dies after the gate answered")
	}
	return resp, err
}

// snapshotPartitions reads the state of every snapshot partition of a
// subject.
func snapshotPartitions(t testing.TB, e *env, subject string) []*gatev1.PartitionState {
	t.Helper()
	ctx := context.Background()
	mon, err := e.seam.gate.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	var out []*gatev1.PartitionState
	for _, p := range mon.GetPartitions() {
		if !strings.HasPrefix(p.GetPartition(), "snapshot-") {
			continue
		}
		resp, err := e.seam.gate.GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: subject, Partition: p.GetPartition()})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.GetPartition())
	}
	return out
}

// A source that dies between the gate's answer and the replica in the
// middle of a chunk resends that chunk whole, replacing its partition:
// every chunk's partition is sealed, the replica and the stream hold each
// row once, and the gate's counters and the status count each row the
// snapshot published once: also a row published before the crash and
// deleted before the resend, and a row inserted before the resend at a key
// the chunk had passed.
func TestCrashMidSnapshotCountsEachRowOnce(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 3000) // payments: 6 chunks of 500; accounts: 1 chunk
	cfg := e.config("crashsnap", "payments", "accounts")
	cfg.SnapshotWorkers = 1
	gate := &crashingGate{GateServiceClient: e.seam.gate}
	// accounts is read first (2 batches), then payments chunk 0: its
	// second batch is in the gate when the source dies.
	gate.at.Store(4)
	cfg.Gate = gate
	if err := runToEnd(t, cfg, 60*time.Second); err == nil || !strings.Contains(err.Error(), "the source dies") {
		t.Fatalf("first run ended with %v, want the injected failure", err)
	}
	st, err := postgres.ReadStatus(context.Background(), e.tgt, nil, "crashsnap")
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != "snapshot" {
		t.Fatalf("phase after the failure = %s, want snapshot", st.Phase)
	}
	// Chunk 0 of payments had published ids 1 to 200 when it died.
	if n := outboxCount(t, e, "crashsnap", "public.payments", "op = 'r'"); n != 200 {
		t.Fatalf("the first run published %d payments, want the 200 of chunk 0's first batch", n)
	}
	e.exec(e.src, "DELETE FROM payments WHERE id <= 50")
	e.exec(e.src, `INSERT INTO payments (id, account, amount, currency, paid_at) VALUES (0, 'DE0', 1, 'EUR', now())`)
	cfg.Gate = e.seam.gate
	e.startReady(cfg)
	converged(t, e, "replica")
	snapshotReadsOnce(t, e, "crashsnap")
	noDuplicates(t, e, "crashsnap")

	for _, tc := range []struct {
		table  string
		chunks int
		// rows counts the rows the first run published and the resend no
		// longer found too: the gate and the status count them.
		rows int64
	}{{"public.payments", 6, 3001}, {"public.accounts", 1, 300}} {
		subject := "pg." + dbName(e.source) + "." + tc.table
		parts := snapshotPartitions(t, e, subject)
		if len(parts) != tc.chunks {
			t.Fatalf("%s has %d snapshot partitions, want one per chunk (%d)", tc.table, len(parts), tc.chunks)
		}
		var received, replaced int64
		for _, p := range parts {
			c := p.GetCounts()
			if p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED || p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED {
				t.Errorf("%s partition %s is %s %s, want sealed PASSED; alerts: %v", tc.table, p.GetPartition(), p.GetStatus(), p.GetVerdict(), p.GetAlerts())
			}
			if c.GetAccepted() != c.GetReceived() || c.GetDuplicates() != 0 {
				t.Errorf("%s partition %s: received %d, accepted %d, duplicates %d; want all accepted once", tc.table, p.GetPartition(), c.GetReceived(), c.GetAccepted(), c.GetDuplicates())
			}
			received += c.GetReceived()
			if p.GetAttempt() > 1 {
				replaced++
			}
		}
		if received != tc.rows {
			t.Errorf("the gate received %d snapshot rows of %s, want %d (each row the snapshot published once)", received, tc.table, tc.rows)
		}
		want := int64(0)
		if tc.table == "public.payments" {
			want = 1 // chunk 0, cut by the failure, was sent again with replace
		}
		if replaced != want {
			t.Errorf("%s: %d snapshot partitions were replaced, want %d", tc.table, replaced, want)
		}
		ts := tableStatus(t, e, "crashsnap", tc.table)
		published := outboxCount(t, e, "crashsnap", tc.table, "op = 'r'")
		t.Logf("%s: status %d of %d snapshot rows, %d published by the snapshot, %d received by the gate's snapshot partitions", tc.table, ts.RowsDone, ts.RowsTotal, published, received)
		if ts.RowsDone != published || ts.RowsTotal != published || published != tc.rows {
			t.Errorf("%s: status counts %d of %d snapshot rows done, the snapshot published %d; want all %d", tc.table, ts.RowsDone, ts.RowsTotal, published, tc.rows)
		}
	}
}

// dayClock names stream partitions as two days split at a moment the
// test moves: commits before it are day one, commits from it day two.
type dayClock struct{ cut atomic.Int64 }

func (d *dayClock) partitionOf(commit time.Time) string {
	if commit.UnixNano() < d.cut.Load() {
		return "2026-11-29"
	}
	return "2026-11-30"
}

func partitionState(t testing.TB, e *env, subject, part string) *gatev1.PartitionState {
	t.Helper()
	resp, err := e.seam.gate.GetPartition(context.Background(), &gatev1.GetPartitionRequest{Subject: subject, Partition: part})
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetPartition()
}

// Once the stream passes into the next commit day, the day before is
// sealed and judged; the new day stays open, also across a clean stop.
func TestStreamSealsTheDayItLeaves(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 200)
	var clock dayClock
	clock.cut.Store(time.Now().Add(24 * time.Hour).UnixNano())
	cfg := postgres.WithPartitionOf(e.config("days", "payments", "accounts"), clock.partitionOf)
	r := e.startReady(cfg)
	subject := "pg." + dbName(e.source) + ".public.payments"
	e.exec(e.src, "UPDATE payments SET memo = 'day one' WHERE id <= 10")
	converged(t, e, "replica")
	if p := partitionState(t, e, subject, "2026-11-29"); p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN || p.GetCounts().GetReceived() != 10 {
		t.Fatalf("day one after its changes: %v, want open with 10 records", p)
	}
	clock.cut.Store(time.Now().UnixNano())
	e.exec(e.src, "UPDATE payments SET memo = 'day two' WHERE id > 10 AND id <= 15")
	converged(t, e, "replica")
	eventually(t, "day one sealed", 10*time.Second, func() (bool, string) {
		p := partitionState(t, e, subject, "2026-11-29")
		return p.GetStatus() == gatev1.PartitionStatus_PARTITION_STATUS_SEALED, fmt.Sprintf("day one is %s", p.GetStatus())
	})
	one := partitionState(t, e, subject, "2026-11-29")
	if one.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || one.GetCounts().GetReceived() != 10 || one.GetSealedBy() == "" {
		t.Fatalf("day one sealed as %s with %d records by %q, want PASSED with 10 by the source", one.GetVerdict(), one.GetCounts().GetReceived(), one.GetSealedBy())
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	two := partitionState(t, e, subject, "2026-11-30")
	if two.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_OPEN || two.GetCounts().GetReceived() != 5 {
		t.Fatalf("day two after a clean stop: %s with %d records, want open with 5 (more of the day may come)", two.GetStatus(), two.GetCounts().GetReceived())
	}
	// accounts had no change on day two: its day one waits for its next
	// change, and a restart seals nothing by itself.
	if p := partitionState(t, e, "pg."+dbName(e.source)+".public.accounts", "2026-11-29"); p != nil && p.GetStatus() == gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
		t.Fatalf("accounts day one sealed without a change of day two")
	}
}

// A partition that will be BLOCKED halts its table: the batch that doomed
// it is in, the changes after it are held in order, the alert is in the
// status, and the other table goes on. A replacement of the partition
// releases the held changes.
func TestBlockingPartitionHaltsTheTable(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 200)
	ctx := context.Background()
	subject := "pg." + dbName(e.source) + ".public.accounts"
	_, version := registerBlocking(t, e, subject)
	e.startReady(e.config("blocks", "payments", "accounts"))
	converged(t, e, "replica")
	if v := tableStatus(t, e, "blocks", "public.accounts").ContractVersion; v != version {
		t.Fatalf("accounts runs version %d, want the registered %d", v, version)
	}

	e.exec(e.src, "UPDATE accounts SET holder = 'bad' WHERE ref IN ('ACC-000001', 'ACC-000002', 'ACC-000003')")
	eventually(t, "accounts halted by its partition", 20*time.Second, func() (bool, string) {
		ts := tableStatus(t, e, "blocks", "public.accounts")
		return ts.Phase == "halted" && ts.Halt != nil && ts.Halt.Reason == "PARTITION_BLOCKED", fmt.Sprintf("phase %s, halt %v", ts.Phase, ts.Halt)
	})
	e.exec(e.src, "UPDATE accounts SET balance = 4242 WHERE ref = 'ACC-000010'")
	e.exec(e.src, "UPDATE accounts SET balance = 4343 WHERE ref = 'ACC-000010'")
	paymentsFlowWhileAccountsHold(t, e, "blocks", 2)
	ts := tableStatus(t, e, "blocks", "public.accounts")
	if !strings.Contains(ts.Halt.Message, "will be BLOCKED") || len(ts.Halt.Partitions) != 1 {
		t.Fatalf("the halt says %q about %v; want the gate's notice and the partition", ts.Halt.Message, ts.Halt.Partitions)
	}
	var balance float64
	if err := e.tgt.QueryRow(ctx, "SELECT balance FROM replica.accounts WHERE ref = 'ACC-000010'").Scan(&balance); err != nil {
		t.Fatal(err)
	}
	if balance == 4242 || balance == 4343 {
		t.Fatalf("a held change reached the replica (balance %v)", balance)
	}

	// The owner sends the day corrected, as a replacement: the partition
	// is no longer doomed, and the held changes apply in log order under
	// the same version.
	day := ts.Halt.Partitions[0]
	fixed := `{"ref":"ACC-000001","holder":"corrected","balance":1.5,"opened":"2020-01-02","_seam_op":"u","_seam_lsn":1,"_seam_seq":0,"_seam_commit_time":"` +
		time.Now().UTC().Format(time.RFC3339) + `"}` + "\n"
	if _, err := e.seam.gate.Ingest(ctx, &gatev1.IngestRequest{Subject: subject, Partition: day, Replace: true, SummaryOnly: true,
		Identity: &gatev1.IngestRequest_BatchId{BatchId: "owner-correction-1"}, ContractVersion: version,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(fixed)}}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held changes apply in order", 30*time.Second, func() (bool, string) {
		var b float64
		if err := e.tgt.QueryRow(ctx, "SELECT balance FROM replica.accounts WHERE ref = 'ACC-000010'").Scan(&b); err != nil {
			return false, err.Error()
		}
		return b == 4343, fmt.Sprintf("balance %v", b)
	})
	if ts := tableStatus(t, e, "blocks", "public.accounts"); ts.Phase != "stream" {
		t.Fatalf("accounts is %s after the new version, want stream", ts.Phase)
	}
	// The bad holders were quarantined by the gate; corrected at the
	// source, they flow.
	e.exec(e.src, "UPDATE accounts SET holder = 'fixed' WHERE holder = 'bad'")
	converged(t, e, "replica")
}

// registerBlocking registers the accounts contract ahead of the source,
// with a BLOCK check: more than 2 "bad" holders in a partition block it.
func registerBlocking(t testing.TB, e *env, subject string) (*contractv1.Contract, int32) {
	t.Helper()
	ctx := context.Background()
	c, model, err := postgres.DeriveContract(ctx, e.source, subject, "cdc-blocks", "accounts")
	if err != nil {
		t.Fatal(err)
	}
	c.Checks = append(c.Checks, &contractv1.Check{Name: "holder_not_bad", Rule: `cel(holder != "bad")`, Policy: contractv1.Policy_POLICY_BLOCK,
		Threshold: &contractv1.Threshold{Limit: &contractv1.Threshold_Count{Count: 2}}})
	if _, err := e.seam.registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: model}); err != nil {
		t.Fatal(err)
	}
	reg, err := e.seam.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: c})
	if err != nil {
		t.Fatal(err)
	}
	return c, reg.GetVersion().GetVersion()
}

// A snapshot chunk sealed BLOCKED: the snapshot is read whole, then the
// table halts with its stream held, the other table goes on, and a newer
// version releases it.
func TestBlockedSnapshotChunkHaltsTheTable(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 200)
	e.exec(e.src, "UPDATE accounts SET holder = 'bad' WHERE ref IN ('ACC-000001', 'ACC-000002', 'ACC-000003')")
	ctx := context.Background()
	subject := "pg." + dbName(e.source) + ".public.accounts"
	c, _ := registerBlocking(t, e, subject)
	e.startReady(e.config("snapblock", "payments", "accounts"))
	ts := tableStatus(t, e, "snapblock", "public.accounts")
	if ts.Phase != "halted" || ts.Halt == nil || ts.Halt.Reason != "PARTITION_BLOCKED" || len(ts.Halt.Partitions) != 1 {
		t.Fatalf("accounts after its snapshot: phase %s, halt %v; want halted by its blocked chunk", ts.Phase, ts.Halt)
	}
	if ts.RowsDone != 20 {
		t.Fatalf("accounts snapshot read %d rows, want all 20", ts.RowsDone)
	}
	part := partitionState(t, e, subject, ts.Halt.Partitions[0])
	if part.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED || part.GetCounts().GetQuarantined() != 3 {
		t.Fatalf("chunk partition %s is %s with %d quarantined, want BLOCKED with 3", ts.Halt.Partitions[0], part.GetVerdict(), part.GetCounts().GetQuarantined())
	}
	e.exec(e.src, "UPDATE accounts SET holder = 'fixed' WHERE holder = 'bad'")
	paymentsFlowWhileAccountsHold(t, e, "snapblock", 3)
	next := proto.Clone(c).(*contractv1.Contract)
	next.Checks = nil
	if _, err := e.seam.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: next,
		Override: &registryv1.NoticeOverride{Reason: "INC-7: the check was wrong (test)"}}); err != nil {
		t.Fatal(err)
	}
	converged(t, e, "replica")
	if ts := tableStatus(t, e, "snapblock", "public.accounts"); ts.Phase != "stream" {
		t.Fatalf("accounts is %s after the new version, want stream", ts.Phase)
	}
}

// paymentsFlowWhileAccountsHold changes payments and waits for the change
// to reach the replica while accounts of source name holds held changes.
func paymentsFlowWhileAccountsHold(t testing.TB, e *env, name string, held int64) {
	t.Helper()
	e.exec(e.src, "UPDATE payments SET memo = 'still flowing' WHERE id <= 5")
	eventually(t, "payments goes on", 20*time.Second, func() (bool, string) {
		return sameRows(t, e, "payments", "replica.payments", paymentCols)
	})
	eventually(t, "accounts holds its changes", 20*time.Second, func() (bool, string) {
		ts := tableStatus(t, e, name, "public.accounts")
		return ts.Held() == held, fmt.Sprintf("%d held", ts.Held())
	})
}
