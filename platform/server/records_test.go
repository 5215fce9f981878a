package server

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Records sent over REST as JSON objects reach the service as the bytes
// of their array, so number literals survive: an INT64 beyond 2^53 keeps
// every digit and 1001.0 stays 1001.0 (through a Struct they would be
// 9007199254740992 and 1001).
func TestRecordsKeepTheirLiterals(t *testing.T) {
	t.Parallel()
	m := newRecordsMarshaler()
	records := `[{"customer_id": 9007199254740993, "n": 1234567890123456789, "x": 1001.0, "s": "<é>"}, {"customer_id": 1}]`
	body := `{"partition": "p", "batch_id": "b", "batch": {"first_offset": 7, "objects": {"records": ` + records + `}}}`
	tests := []struct {
		name  string
		msg   proto.Message
		body  string
		batch func(proto.Message) *recordv1.RecordBatch
	}{
		{"ingest", &gatev1.IngestRequest{}, body, func(m proto.Message) *recordv1.RecordBatch { return m.(*gatev1.IngestRequest).GetBatch() }},
		{"adapt stream", &adapterv1.AdaptStreamRequest{}, `{"sequence": 1, "request": {"subject": "s", "batch": {"objects": {"records": ` + records + `}}}}`,
			func(m proto.Message) *recordv1.RecordBatch {
				return m.(*adapterv1.AdaptStreamRequest).GetRequest().GetBatch()
			}},
	}
	for _, tt := range tests {
		// Through Unmarshal and through a stream decoder alike.
		for _, via := range []string{"unmarshal", "decoder"} {
			msg := proto.Clone(tt.msg)
			var err error
			if via == "unmarshal" {
				err = m.Unmarshal([]byte(tt.body), msg)
			} else {
				err = m.NewDecoder(strings.NewReader(tt.body + "\n" + tt.body)).Decode(msg)
			}
			if err != nil {
				t.Fatalf("%s via %s: %v", tt.name, via, err)
			}
			b := tt.batch(msg)
			if b.GetRaw().GetFormat() != recordv1.Format_FORMAT_JSON || string(b.GetRaw().GetData()) != records {
				t.Fatalf("%s via %s: batch = %v, want raw JSON holding %s", tt.name, via, b, records)
			}
		}
	}
	req := &gatev1.IngestRequest{}
	if err := m.Unmarshal([]byte(body), req); err != nil || req.GetBatch().GetFirstOffset() != 7 || req.GetBatchId() != "b" {
		t.Fatalf("the rest of the request = %v (%v), want first_offset 7 and batch id b kept", req, err)
	}
	// A malformed body is protojson's to refuse, as before.
	if err := m.Unmarshal([]byte(`{"batch": {"objects": {"records": 5}}}`), &gatev1.IngestRequest{}); err == nil {
		t.Fatalf("records: 5 was accepted")
	}
}

// Canonical records come back as inline JSON objects under "object",
// byte for byte what the service produced, in unary answers and in the
// {"result": …} chunks of a server stream.
func TestCanonicalRecordsAreWrittenInline(t *testing.T) {
	t.Parallel()
	m := newRecordsMarshaler()
	canonical := `{"customer_id":9007199254740993,"amount":1001.0,"note":"<a&b>"}`
	rec := &recordv1.CanonicalRecord{RecordId: "r1", Body: &recordv1.CanonicalRecord_Json{Json: []byte(canonical)}}
	resp := &gatev1.IngestResponse{Summary: &gatev1.BatchSummary{Received: 1}, Records: []*gatev1.RecordVerdict{{Status: gatev1.RecordStatus_RECORD_STATUS_ACCEPTED, Record: rec}}}
	for name, v := range map[string]any{
		"unary":  resp,
		"stream": map[string]any{"result": &gatev1.ReplayResponse{Message: &gatev1.ReplayResponse_Record{Record: rec}}},
	} {
		out, err := m.Marshal(v)
		if err != nil {
			t.Fatalf("%s: Marshal: %v", name, err)
		}
		if !bytes.Contains(out, []byte(`"object":`+canonical)) || bytes.Contains(out, []byte(`"json"`)) {
			t.Fatalf("%s: %s, want the record inline as \"object\":%s", name, out, canonical)
		}
	}
}
