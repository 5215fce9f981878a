package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Two legal amounts of 1.7e308, in two batches of one partition, have the
// mean 1.7e308: the partition keeps a mean, not a sum that overflows to
// infinity, on both stores.
func TestPartitionMeanDoesNotOverflow(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		e := startGate(t, knownPeers(t), url, nil)
		ctx := context.Background()
		for i := range 2 {
			line := fmt.Sprintf(`{"order_id":"ORD-%010d","customer_id":7,"amount":1.7e308,"currency":"EUR","status":"paid","created_at":"2025-03-01T10:00:00Z","items":1}`, i+1)
			req := &gatev1.IngestRequest{Subject: "shop.orders", Partition: "2025-03-01", Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprint("huge-", i)},
				Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: []byte(line)}}}}
			if resp, err := e.as("pipeline").Ingest(ctx, req); err != nil || resp.GetSummary().GetAccepted() != 1 {
				t.Fatalf("Ingest %d = %v (%v), want it accepted", i, resp.GetSummary(), err)
			}
		}
		m := monitorOf(t, e, "shop.orders", "2025-03-01")
		var mean float64
		for _, f := range m.GetFields() {
			if f.GetField() == "amount" {
				mean = f.GetMean()
			}
		}
		if math.IsInf(mean, 0) || math.Abs(mean-1.7e308)/1.7e308 > 1e-12 {
			t.Fatalf("mean of amount = %v, want 1.7e308", mean)
		}
	})
}

// The same records sent over every path are judged the same and come out
// as the same canonical JSON, byte for byte: NDJSON, CSV and a JSON array
// over gRPC, and natural JSON objects over REST. An INT64 beyond 2^53
// keeps every digit; 1001.0 in an INT64 field is a type mismatch on every
// one of them. Over gRPC objects (google.protobuf.Struct, whose numbers
// are doubles) the records beyond 2^53 are refused as MALFORMED instead of
// passed with other digits, and 1001.0 is the double 1001: the path cannot
// carry the literal, so it cannot be told apart from 1001.
func TestSameRecordsOverEveryPath(t *testing.T) {
	t.Parallel()
	p := newPeers(t)
	useRealPeers(t, p)
	registerBankTransfers(t, p)
	e := startGate(t, p, storagetest.SQLiteURL(t), nil)
	base := startREST(t, e)
	ctx := context.Background()
	raw := func(f recordv1.Format, data []byte) *recordv1.RecordBatch {
		return &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: f, Data: data}}}
	}
	send := func(id string, b *recordv1.RecordBatch) []verdictOf {
		t.Helper()
		// Each path sends its own partition: the same keys twice in one
		// partition would be duplicates.
		resp, err := e.as("pipeline").Ingest(ctx, &gatev1.IngestRequest{Subject: "bank.transfers", Partition: "path-" + id, Identity: &gatev1.IngestRequest_BatchId{BatchId: id}, Batch: b})
		if err != nil {
			t.Fatalf("Ingest %s: %v", id, err)
		}
		return grpcVerdicts(resp)
	}
	paths := map[string][]verdictOf{
		"ndjson":     send("ndjson", raw(recordv1.Format_FORMAT_NDJSON, []byte(strings.Join(transfers, "\n")))),
		"csv":        send("csv", raw(recordv1.Format_FORMAT_CSV, csvOf(t, transfers))),
		"json array": send("json", raw(recordv1.Format_FORMAT_JSON, []byte("["+strings.Join(transfers, ",")+"]"))),
	}
	var rest struct {
		Records []struct {
			Status  string `json:"status"`
			Reasons []struct {
				Code  string `json:"code"`
				Field string `json:"field"`
			} `json:"reasons"`
			Record struct {
				RecordID string          `json:"record_id"`
				Object   json.RawMessage `json:"object"`
			} `json:"record"`
		} `json:"records"`
	}
	body := map[string]any{"partition": "path-rest", "batch_id": "rest", "batch": map[string]any{"objects": map[string]any{"records": json.RawMessage("[" + strings.Join(transfers, ",") + "]")}}}
	if code := postJSON(t, e, base+"/v1/subjects/bank.transfers:ingest", "pipeline", body, &rest); code != 200 {
		t.Fatalf("REST ingest answered %d, want 200", code)
	}
	for _, r := range rest.Records {
		v := verdictOf{status: r.Status, recordID: r.Record.RecordID, canonical: string(r.Record.Object)}
		for _, e := range r.Reasons {
			v.reasons += e.Code + "@" + e.Field + " "
		}
		paths["rest"] = append(paths["rest"], v)
	}

	want := paths["ndjson"]
	if len(want) != len(transfers) {
		t.Fatalf("NDJSON answered %d records, want %d", len(want), len(transfers))
	}
	for i, v := range want {
		switch {
		case i == 2 && (v.status != "RECORD_STATUS_QUARANTINED" || v.reasons != "ERROR_CODE_TYPE_MISMATCH@account_id "):
			t.Fatalf("1001.0 in an INT64 field: %v, want a TYPE_MISMATCH of account_id", v)
		case i != 2 && v.status != "RECORD_STATUS_ACCEPTED":
			t.Fatalf("record %d: %v, want it accepted", i, v)
		}
	}
	for _, digits := range []string{`"account":9007199254740993`, `"account":1234567890123456789`, `"account":-9223372036854775808`} {
		found := false
		for _, v := range want {
			found = found || strings.Contains(v.canonical, digits)
		}
		if !found {
			t.Fatalf("no canonical record holds %s exactly: %v", digits, want)
		}
	}
	for name, got := range paths {
		if len(got) != len(want) {
			t.Fatalf("%s answered %d records, want %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s, record %d:\n got %v\nwant %v (as NDJSON)", name, i, got[i], want[i])
			}
		}
	}

	// gRPC objects: exact below 2^53, refused beyond, 1001.0 is 1001.
	var objs []*structpb.Struct
	for _, r := range transfers {
		o := &structpb.Struct{}
		if err := protojson.Unmarshal([]byte(r), o); err != nil {
			t.Fatalf("Struct of %s: %v", r, err)
		}
		objs = append(objs, o)
	}
	got := send("objects", &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Objects{Objects: &recordv1.ObjectRecords{Records: objs}}})
	for i, v := range got {
		switch i {
		case 0, 1, 4:
			if v.status != "RECORD_STATUS_QUARANTINED" || v.reasons != "ERROR_CODE_MALFORMED@ " {
				t.Errorf("objects, record %d (an account id beyond 2^53): %v, want MALFORMED", i, v)
			}
		case 2:
			if v.status != "RECORD_STATUS_ACCEPTED" || !strings.Contains(v.canonical, `"account":1001,`) {
				t.Errorf("objects, record 2 (the double 1001): %v, want it accepted as 1001", v)
			}
		case 3:
			if v != want[3] {
				t.Errorf("objects, record 3:\n got %v\nwant %v", v, want[3])
			}
		}
	}
}
