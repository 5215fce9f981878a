package gate_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/record"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// --records asks the gate for packed verdicts and prints them as the
// per-record answer says them: for a file of accepted and quarantined
// records, the verdicts, canonical records included, that the stream
// answers per record for the same chunks.
func TestIngestRecordsPrintsThePerRecordAnswer(t *testing.T) {
	t.Parallel()
	n := seamtest.StartOrders(t)
	lines := seamtest.OrderLines(20)
	lines[4] = strings.Replace(lines[4], `"currency":"`, `"currency":"X`, 1) // not an enum value: quarantined
	file := seamtest.WriteLines(t, "mixed.ndjson", lines)

	// The same chunks as the command cuts, sent per record first.
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	split := record.NewSplitter(f, recordv1.Format_FORMAT_NDJSON, 7)
	stream, err := gatev1.NewGateServiceClient(n.Conn(t, n.Admin)).IngestStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: "2026-03-01", BatchId: "mixed", Format: recordv1.Format_FORMAT_NDJSON}
	if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: h}}); err != nil {
		t.Fatal(err)
	}
	for seq := int64(0); ; seq++ {
		c, err := split.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{
			Sequence: seq, Data: c.Data, FirstOffset: c.FirstOffset}}}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatalf("IngestStream: %v", err)
	}
	if s := want.GetSummary(); s.GetAccepted() != 19 || s.GetQuarantined() != 1 || len(want.GetRecords()) != 20 {
		t.Fatalf("per-record answer: %v with %d verdicts, want 19 accepted, 1 quarantined, 20 verdicts", s, len(want.GetRecords()))
	}

	out, errOut, code := n.CLI(t, "gate", "ingest", "shop.orders", file, "--partition", "2026-03-01", "--batch-id", "mixed", "--no-seal",
		"--chunk-records", "7", "--records", "-o", "json")
	if code != 0 {
		t.Fatalf("seam gate ingest --records: exit %d\n%s%s", code, out, errOut)
	}
	got := &gatev1.IngestStreamResponse{}
	if err := protojson.Unmarshal([]byte(out), got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if !got.GetSummary().GetRetried() {
		t.Fatalf("summary %v, want the file recognised as sent", got.GetSummary())
	}
	for _, c := range got.GetChunkResults() {
		if c.GetPacked() != nil {
			t.Fatalf("chunk %d: -o json prints packed verdicts; want them expanded into records", c.GetSequence())
		}
	}
	if len(got.GetRecords()) != len(want.GetRecords()) {
		t.Fatalf("-o json prints %d verdicts, want %d", len(got.GetRecords()), len(want.GetRecords()))
	}
	for i := range got.GetRecords() {
		if !proto.Equal(got.GetRecords()[i], want.GetRecords()[i]) {
			t.Fatalf("verdict %d: --records prints %v, the per-record answer is %v", i, got.GetRecords()[i], want.GetRecords()[i])
		}
	}
}
