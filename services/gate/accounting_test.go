package gate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// streamChunk is one chunk to send: its sequence and its records.
type streamChunk struct {
	seq  int64
	data []byte
}

// sendStream sends a stream of chunks and returns its answer.
func sendStream(ctx context.Context, e *gateEnv, h *gatev1.IngestHeader, chunks []streamChunk) (*gatev1.IngestStreamResponse, error) {
	stream, err := e.as("pipeline").IngestStream(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: h}}); err != nil {
		return nil, err
	}
	for _, c := range chunks {
		if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{Sequence: c.seq, Data: c.data}}}); err != nil {
			break // the server ended the stream; CloseAndRecv says why
		}
	}
	return stream.CloseAndRecv()
}

// Chunks that repeat a sequence (the default 0 included) or skip one are
// refused with InvalidArgument naming the sequence, instead of the
// repeat being answered as stored while only the first was: the answer
// never claims records that were not written.
func TestStreamSequencesAreDistinctAndIncreasing(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	a := orders{first: 1, n: 10, amount: 85}.ndjson()
	b := orders{first: 11, n: 10, amount: 85}.ndjson()
	tests := []struct {
		name   string
		chunks []streamChunk
		want   string // "" when accepted
	}{
		{"two chunks with the default sequence 0", []streamChunk{{0, a}, {0, b}}, "sequence 0, which repeats"},
		{"a skipped sequence", []streamChunk{{0, a}, {2, b}}, "sequence 2, which skips"},
		{"going back", []streamChunk{{5, a}, {6, b}, {5, a}}, "goes back"},
		{"a negative sequence", []streamChunk{{-1, a}}, "negative sequence"},
		{"a resumed load", []streamChunk{{7, a}, {8, b}}, ""},
	}
	for i, tt := range tests {
		h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: fmt.Sprintf("seq-%d", i), BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON, SummaryOnly: true}
		resp, err := sendStream(ctx, e, h, tt.chunks)
		if tt.want == "" {
			if err != nil || resp.GetSummary().GetAccepted() != 20 {
				t.Errorf("%s: %v (%v), want 20 accepted", tt.name, resp.GetSummary(), err)
			}
			continue
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.want) {
			t.Errorf("%s: %v, want InvalidArgument saying %q", tt.name, err, tt.want)
		}
	}
	// Only the first chunk of the repeated-sequence stream was stored, and
	// only it is counted.
	if m := monitorOf(t, e, "shop.orders", "seq-0"); m.GetReceived() != 10 || m.GetBatches() != 1 {
		t.Fatalf("monitor of the refused stream = %v, want its first chunk only", m)
	}
}

// Random chunkings of random batches: what each chunk's answer
// acknowledges is what was stored for it, chunk by chunk, and what the
// stream's summary adds up is what the partition counts, on a fresh send
// and on a resend (which stores nothing new).
func TestStoredEqualsAcknowledged(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	next := 1
	for round := range 6 {
		part := fmt.Sprintf("prop-%d", round)
		n := 20 + rng.IntN(300)
		o := orders{first: next, n: n, amount: 50 + float64(rng.IntN(100)), uuids: rng.IntN(n / 4), unknown: 7}
		next += n
		lines := strings.SplitAfter(strings.TrimSuffix(string(o.ndjson()), "\n"), "\n")
		var chunks []streamChunk
		seq := int64(rng.IntN(3))
		for start := 0; start < len(lines); seq++ {
			end := min(len(lines), start+1+rng.IntN(60))
			chunks = append(chunks, streamChunk{seq: seq, data: []byte(strings.Join(lines[start:end], ""))})
			start = end
		}
		h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: part, BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON, SummaryOnly: round%2 == 0}
		for send := range 2 {
			resp, err := sendStream(ctx, e, h, chunks)
			if err != nil {
				t.Fatalf("round %d send %d: %v", round, send, err)
			}
			if len(resp.GetChunkResults()) != len(chunks) {
				t.Fatalf("round %d send %d: %d chunk results for %d chunks", round, send, len(resp.GetChunkResults()), len(chunks))
			}
			var total int64
			for i, cr := range resp.GetChunkResults() {
				stored, ok, err := e.srv.store.Batch(ctx, batchKey{"shop.orders", part, fmt.Sprintf("load#%d", chunks[i].seq)})
				if err != nil || !ok {
					t.Fatalf("round %d: chunk %d not stored (%v)", round, chunks[i].seq, err)
				}
				s := cr.GetSummary()
				if cr.GetSequence() != chunks[i].seq || s.GetReceived() != stored.received || s.GetAccepted() != stored.accepted ||
					s.GetQuarantined() != stored.quarantined || s.GetRetried() != (send == 1) {
					t.Fatalf("round %d send %d chunk %d: acknowledged %v, stored %d/%d/%d", round, send, chunks[i].seq, s, stored.received, stored.accepted, stored.quarantined)
				}
				total += s.GetReceived()
			}
			m := monitorOf(t, e, "shop.orders", part)
			if sum := resp.GetSummary(); sum.GetReceived() != total || total != int64(n) || m.GetReceived() != total ||
				m.GetAccepted() != sum.GetAccepted() || m.GetQuarantined() != sum.GetQuarantined() || m.GetBatches() != int64(len(chunks)) {
				t.Fatalf("round %d send %d: summary %v, partition %v; want both %d records in %d chunks", round, send, sum, m, n, len(chunks))
			}
		}
	}
}

// A batch id is bound to its content: the same id with other records (or
// another first offset, pinned version or replace) is refused as reused,
// and nothing of it is written; the same content is a retry.
func TestBatchIDReusedWithDifferentContent(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	first := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 20, amount: 85})
	if _, err := e.as("pipeline").Ingest(ctx, first); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	other := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 20, amount: 99})
	moved := ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 20, amount: 85})
	moved.Batch.FirstOffset = 100
	for name, req := range map[string]*gatev1.IngestRequest{"other records": other, "another first offset": moved} {
		_, err := e.as("pipeline").Ingest(ctx, req)
		if status.Code(err) != codes.FailedPrecondition || rpcerr.Reason(err) != "BATCH_ID_REUSED" ||
			!strings.Contains(status.Convert(err).Message(), "batch id reused with different content") {
			t.Fatalf("%s under the same id: %v, want FailedPrecondition \"batch id reused with different content\"", name, err)
		}
	}
	again, err := e.as("pipeline").Ingest(ctx, first)
	if err != nil || !again.GetSummary().GetRetried() {
		t.Fatalf("the same batch again = %v (%v), want a retry", again.GetSummary(), err)
	}
	if m := monitorOf(t, e, "shop.orders", "2025-03-01"); m.GetReceived() != 20 || m.GetBatches() != 1 {
		t.Fatalf("monitor = %v, want the first batch only", m)
	}
}

// A batch stored while the digest was a SHA-256 is still told from
// another: its retry is the same content by that hash, other records are
// not.
func TestSHA256DigestsOfStoredBatchesStillCompare(t *testing.T) {
	first := batchInput{batch: orders{first: 1, n: 20, amount: 85}.batch(), version: 1}
	other := batchInput{batch: orders{first: 1, n: 20, amount: 99}.batch(), version: 1}
	stored, err := digestWith(sha256.New(), first)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   batchInput
		same bool
	}{{"the retry", first, true}, {"other records", other, false}} {
		now, err := digestOf(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if len(now) == len(stored) {
			t.Fatalf("the digest is %d bytes, as a SHA-256 is: stored digests could not be told apart", len(now))
		}
		if got := sameContent(stored, now, c.in); got != c.same {
			t.Errorf("%s against a SHA-256 stored digest: same = %v, want %v", c.name, got, c.same)
		}
	}
}

// A summary_only stream is answered with counts and the verdicts of the
// records not accepted, the first streamHeldVerdicts of them, the rest
// counted: a load of millions of records never outgrows one message
// (a verdict per accepted record used to be sent, and past about five
// million records the answer was refused as too large after every chunk
// was stored). Without summary_only every verdict comes back.
func TestSummaryOnlyStreamCarriesHeldVerdicts(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	var chunks []streamChunk
	for i := range 3 {
		chunks = append(chunks, streamChunk{int64(i), orders{first: 1 + 500*i, n: 500, amount: 85, missing: 400}.ndjson()})
	}
	for _, summaryOnly := range []bool{true, false} {
		part := fmt.Sprintf("held-%v", summaryOnly)
		h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: part, BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON, SummaryOnly: summaryOnly}
		for send := range 2 {
			resp, err := sendStream(ctx, e, h, chunks)
			if err != nil {
				t.Fatalf("summary_only %v send %d: %v", summaryOnly, send, err)
			}
			if s := resp.GetSummary(); s.GetReceived() != 1500 || s.GetAccepted() != 300 || s.GetQuarantined() != 1200 {
				t.Fatalf("summary_only %v send %d: summary %v, want 1500 received, 300 accepted, 1200 quarantined", summaryOnly, send, s)
			}
			held := 0
			for _, v := range resp.GetRecords() {
				if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
					held++
				}
			}
			want, wantHeld, omitted := 1500, 1200, int64(0)
			if summaryOnly {
				want, wantHeld, omitted = streamHeldVerdicts, streamHeldVerdicts, 1200-streamHeldVerdicts
			}
			if len(resp.GetRecords()) != want || held != wantHeld || resp.GetVerdictsOmitted() != omitted {
				t.Fatalf("summary_only %v send %d: %d verdicts (%d not accepted), %d omitted; want %d (%d), %d",
					summaryOnly, send, len(resp.GetRecords()), held, resp.GetVerdictsOmitted(), want, wantHeld, omitted)
			}
			if summaryOnly && resp.GetRecords()[0].GetPosition() != 1 {
				t.Fatalf("the first held verdict is at position %d, want 1 (stream order)", resp.GetRecords()[0].GetPosition())
			}
		}
	}
}
