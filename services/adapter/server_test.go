package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/record/recordtest"
	"github.com/seamdata/seam/platform/clocktest"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/server/servertest"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"github.com/seamdata/seam/services/adapter"
)

func itoa(i int) string { return strconv.Itoa(i) }

func customerUUID(n int) string { return fmt.Sprintf("0b8e5f6a-1c2d-4e3f-8a9b-%012x", n) }

// orders returns n orders as v1 sends them (integer customer ids) and as v2
// sends them (the customers' UUIDs), one JSON object each.
func orders(n int) (v1, v2 [][]byte) {
	for i := range n {
		o := recordtest.OrderJSON(nil, i)
		legacy := 100000 + i%50000
		v1 = append(v1, o)
		v2 = append(v2, bytes.Replace(o, []byte(`"customer_id":`+itoa(legacy)), []byte(`"customer_id":"`+customerUUID(legacy)+`"`), 1))
	}
	return v1, v2
}

func ndjson(recs [][]byte) []byte { return append(bytes.Join(recs, []byte("\n")), '\n') }

func rawBatch(format recordv1.Format, data []byte) *recordv1.RecordBatch {
	return &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: format, Data: data}}}
}

func adapt(t *testing.T, e *env, version int32, batch *recordv1.RecordBatch) *adapterv1.AdaptResponse {
	t.Helper()
	resp, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: version, Batch: batch, Partition: "2025-03-01", BatchId: "b1"})
	if err != nil {
		t.Fatalf("Adapt: %v", err)
	}
	return resp
}

// TestAdaptV1AndV2GiveIdenticalCanonicalRecords is the source document's
// case over real gRPC: v1 orders and the same orders sent by v2 with UUID
// customer ids become identical canonical records with identical record
// ids, and v2's 1,000 records cost exactly one idmap call.
func TestAdaptV1AndV2GiveIdenticalCanonicalRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	in1, in2 := orders(1000)
	r1 := adapt(t, e, e.v1, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1)))
	if got := e.idm.translate.Load(); got != 0 {
		t.Fatalf("v1 made %d idmap calls, want 0", got)
	}
	r2 := adapt(t, e, e.v2, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2)))
	if got := e.idm.translate.Load(); got != 1 {
		t.Fatalf("v2 made %d idmap Translate calls for one batch, want 1", got)
	}
	if r1.GetAdapted() != 1000 || r2.GetAdapted() != 1000 {
		t.Fatalf("adapted v1 %d, v2 %d; want 1000 each (first errors: %v / %v)", r1.GetAdapted(), r2.GetAdapted(), r1.GetResults()[0].GetErrors(), r2.GetResults()[0].GetErrors())
	}
	if r1.GetVersion() != e.v1 || r2.GetVersion() != e.v2 {
		t.Errorf("response versions %d, %d; want %d, %d", r1.GetVersion(), r2.GetVersion(), e.v1, e.v2)
	}
	for i := range 1000 {
		a, b := r1.GetResults()[i].GetRecord(), r2.GetResults()[i].GetRecord()
		if !bytes.Equal(a.GetJson(), b.GetJson()) || a.GetRecordId() != b.GetRecordId() {
			t.Fatalf("record %d: v2 %s %s, v1 %s %s; want identical", i, b.GetRecordId(), b.GetJson(), a.GetRecordId(), a.GetJson())
		}
		p := b.GetProvenance()
		if p.GetSubject() != "shop.orders" || p.GetContractVersion() != e.v2 || p.GetCanonical() != "commerce.order" || p.GetIndex() != int64(i) ||
			p.GetPosition() != int64(i+1) || p.GetPartition() != "2025-03-01" || p.GetBatchId() != "b1" {
			t.Fatalf("record %d provenance %v; want shop.orders v%d commerce.order index %d line %d partition and batch copied", i, p, e.v2, i, i+1)
		}
	}
}

// TestAdaptFormats sends the same two orders in every input form, with a
// malformed record between them: every form answers each record in order,
// the bad one with a per-record error and its neighbours adapted.
func TestAdaptFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	in, _ := orders(2)
	csvHead := "order_id,customer_id,amount,currency,status,created_at,items\n"
	csvRow := func(i int) string {
		return fmt.Sprintf("ORD-%010d,%d,12.5,USD,paid,2025-03-01T10:00:00Z,2\n", i, 100000+i)
	}
	deep := strings.Repeat(`{"x":`, 10000) + "1" + strings.Repeat("}", 10000)
	huge := `{"order_id":"ORD-0000000009","coupon":"` + strings.Repeat("a", 10<<20) + `"}`
	obj := func(raw []byte) *structpb.Struct {
		s := &structpb.Struct{}
		if err := s.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name  string
		batch *recordv1.RecordBatch
		code  recordv1.ErrorCode // of the middle record
		msg   string
	}{
		{"json broken element", rawBatch(recordv1.Format_FORMAT_JSON, []byte("["+string(in[0])+`,{"order_id":"ORD-1",,},`+string(in[1])+"]")),
			recordv1.ErrorCode_ERROR_CODE_MALFORMED, "record 1"},
		{"ndjson broken line", rawBatch(recordv1.Format_FORMAT_NDJSON, []byte(string(in[0])+"\n{\"order_id\":\n"+string(in[1])+"\n")),
			recordv1.ErrorCode_ERROR_CODE_MALFORMED, "line 2"},
		{"ndjson invalid utf-8", rawBatch(recordv1.Format_FORMAT_NDJSON, []byte(string(in[0])+"\n{\"order_id\":\"ORD-\xff\xfe\"}\n"+string(in[1])+"\n")),
			recordv1.ErrorCode_ERROR_CODE_MALFORMED, "UTF-8"},
		{"ndjson 10,000-deep nesting", rawBatch(recordv1.Format_FORMAT_NDJSON, []byte(string(in[0])+"\n"+`{"order_id":"ORD-0000000009","coupon":`+deep+"}\n"+string(in[1])+"\n")),
			recordv1.ErrorCode_ERROR_CODE_MALFORMED, "nesting"},
		{"ndjson 10 MB record", rawBatch(recordv1.Format_FORMAT_NDJSON, []byte(string(in[0])+"\n"+huge+"\n"+string(in[1])+"\n")),
			recordv1.ErrorCode_ERROR_CODE_TOO_LARGE, "byte limit"},
		{"csv ragged row", rawBatch(recordv1.Format_FORMAT_CSV, []byte(csvHead+csvRow(0)+"ORD-0000000001,5\n"+csvRow(1))),
			recordv1.ErrorCode_ERROR_CODE_MALFORMED, "columns"},
		{"csv wrong type", rawBatch(recordv1.Format_FORMAT_CSV, []byte(csvHead+csvRow(0)+strings.Replace(csvRow(5), ",100005,", ",abc,", 1)+csvRow(1))),
			recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH, "customer_id"},
		{"objects missing required", &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Objects{Objects: &recordv1.ObjectRecords{Records: []*structpb.Struct{
			obj(in[0]), obj([]byte(`{"order_id":"ORD-0000000003"}`)), obj(in[1])}}}},
			recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, "required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := adapt(t, e, 0, tc.batch)
			res := resp.GetResults()
			if len(res) != 3 || resp.GetAdapted() != 2 || resp.GetFailed() != 1 {
				t.Fatalf("got %d results, %d adapted, %d failed; want 3, 2, 1", len(res), resp.GetAdapted(), resp.GetFailed())
			}
			for _, i := range []int{0, 2} {
				if res[i].GetRecord() == nil || len(res[i].GetErrors()) > 0 || res[i].GetIndex() != int64(i) {
					t.Errorf("record %d: got %v, want a canonical record at index %d", i, res[i], i)
				}
			}
			bad := res[1]
			if bad.GetRecord() != nil || len(bad.GetErrors()) == 0 {
				t.Fatalf("middle record: got %v, want errors and no record", bad)
			}
			if got := bad.GetErrors()[0]; got.GetCode() != tc.code || !strings.Contains(got.GetField()+" "+got.GetMessage(), tc.msg) {
				t.Errorf("middle record error: got %v %q %q, want %v mentioning %q", got.GetCode(), got.GetField(), got.GetMessage(), tc.code, tc.msg)
			}
			if len(bad.GetErrors()[0].GetMessage()) > 2000 {
				t.Errorf("error message is %d bytes; a huge record must not become a huge message", len(bad.GetErrors()[0].GetMessage()))
			}
			if obj := res[0].GetRecord().GetObject(); tc.batch.GetObjects() != nil && obj.GetFields()["customer_id"].GetNumberValue() != 100000 {
				t.Errorf("object input: got %v, want a structpb record with customer_id 100000", obj)
			}
		})
	}
}

// TestAdaptRequestErrors covers the request-level statuses.
func TestAdaptRequestErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(3)
	good := rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))
	tests := []struct {
		name   string
		req    *adapterv1.AdaptRequest
		before func()
		code   codes.Code
		msg    string
		reason string
	}{
		{"unknown subject", &adapterv1.AdaptRequest{Subject: "shop.nope", Batch: good}, nil, codes.NotFound, `contract "shop.nope (active version)" not found`, ""},
		{"unknown version", &adapterv1.AdaptRequest{Subject: "shop.orders", Version: 9, Batch: good}, nil, codes.NotFound, "shop.orders version 9", ""},
		{"no subject", &adapterv1.AdaptRequest{Batch: good}, nil, codes.InvalidArgument, "subject", ""},
		{"no batch", &adapterv1.AdaptRequest{Subject: "shop.orders"}, nil, codes.InvalidArgument, "batch", ""},
		{"no format", &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: rawBatch(recordv1.Format_FORMAT_UNSPECIFIED, []byte("{}"))}, nil, codes.InvalidArgument, "batch.raw.format", ""},
		{"undelimitable json", &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: rawBatch(recordv1.Format_FORMAT_JSON, []byte(`[{"a":1}, nonsense`))}, nil, codes.InvalidArgument, "byte offset", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := e.client.Adapt(context.Background(), tc.req)
			if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
				t.Errorf("got %v %q, want %v containing %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
		})
	}
}

// TestAdaptIdmapDown: with idmap unreachable a batch that needs
// translation fails as a whole with Unavailable, never with missing ids.
func TestAdaptIdmapDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(3)
	adapt(t, e, e.v2, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))) // compiles the plan while idmap is up
	e.idm.setDown(true)
	_, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))})
	if status.Code(err) != codes.Unavailable || rpcerr.Reason(err) != "DEPENDENCY_UNAVAILABLE" {
		t.Fatalf("got %v, want Unavailable with reason DEPENDENCY_UNAVAILABLE", err)
	}
	// A v1 batch needs no translation and still passes.
	in1, _ := orders(3)
	if r := adapt(t, e, e.v1, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1))); r.GetAdapted() != 3 {
		t.Errorf("v1 with idmap down: adapted %d, want 3", r.GetAdapted())
	}
}

// TestAdaptUnmappedIDs: ids the table lacks fail their records with
// ID_UNMAPPED, ids that are not UUIDs with ID_INVALID.
func TestAdaptUnmappedIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(3)
	in2[0] = bytes.Replace(in2[0], []byte(customerUUID(100000)), []byte(customerUUID(999999)), 1)
	in2[2] = bytes.Replace(in2[2], []byte(customerUUID(100002)), []byte("not-a-uuid"), 1)
	resp := adapt(t, e, e.v2, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2)))
	var got []string
	for _, r := range resp.GetResults() {
		if len(r.GetErrors()) > 0 {
			got = append(got, r.GetErrors()[0].GetCode().String()+" "+r.GetErrors()[0].GetField())
		} else {
			got = append(got, "ok")
		}
	}
	want := []string{"ERROR_CODE_ID_UNMAPPED customer_id", "ok", "ERROR_CODE_ID_INVALID customer_id"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestAdaptStream: each response answers the request with its sequence,
// in order, and one idmap call per batch.
func TestAdaptStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(100)
	stream, err := e.client.AdaptStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 5; seq++ {
		req := &adapterv1.AdaptRequest{Subject: "shop.orders", Version: e.v2, Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2[(seq-1)*20:seq*20]))}
		if err := stream.Send(&adapterv1.AdaptStreamRequest{Sequence: seq * 10, Request: req}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 5; seq++ {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetSequence() != seq*10 || resp.GetResponse().GetAdapted() != 20 {
			t.Fatalf("response %d: sequence %d adapted %d; want sequence %d adapted 20", seq, resp.GetSequence(), resp.GetResponse().GetAdapted(), seq*10)
		}
	}
	if got := e.idm.translate.Load(); got != 5 {
		t.Errorf("%d Translate calls for 5 batches, want 5", got)
	}
}

// TestAdaptStreamUnknownSubject ends the stream with NotFound naming the
// sequence.
func TestAdaptStreamUnknownSubject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	stream, err := e.client.AdaptStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := &adapterv1.AdaptRequest{Subject: "shop.nope", Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, []byte("{}\n"))}
	if err := stream.Send(&adapterv1.AdaptStreamRequest{Sequence: 7, Request: req}); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if st := status.Convert(err); st.Code() != codes.NotFound || !strings.Contains(st.Message(), "shop.nope") {
		t.Errorf("got %v %q, want NotFound naming shop.nope", st.Code(), st.Message())
	}
}

// TestPlanCache: plans are compiled once per subject version, refreshed
// when the registry announces an activation, and the last good plan keeps
// serving while the registry is down, with its staleness in a gauge.
func TestPlanCache(t *testing.T) {
	t.Parallel()
	e, reader := newWatchingEnv(t)
	in1, in2 := orders(2)
	for range 3 {
		if r := adapt(t, e, 0, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1))); r.GetVersion() != e.v1 {
			t.Fatalf("active version %d, want %d", r.GetVersion(), e.v1)
		}
	}
	if got := e.reg.getContract.Load(); got != 1 {
		t.Fatalf("%d GetContract calls for 3 batches, want 1 (the plan is cached)", got)
	}
	if got := gauge(t, reader, "seam.adapter.plan.staleness"); got != 0 {
		t.Errorf("staleness %v with the stream connected, want 0", got)
	}
	e.reg.activate("shop.orders", e.v2)
	clocktest.Eventually(t, "v2 to become the version 0 plan", func() bool {
		r, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))})
		return err == nil && r.GetVersion() == e.v2
	})
	// The registry stops answering reads; an activation event still
	// arrives and marks the plan stale, its refetch fails, and the last
	// good plan (v2) keeps serving.
	e.reg.setUnaryDown(true)
	calls := e.reg.getContract.Load()
	e.reg.activate("shop.orders", e.v1)
	clocktest.Eventually(t, "a refetch of the invalidated plan", func() bool {
		r, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))})
		if err != nil {
			t.Fatalf("Adapt with the registry down: %v; want the last good plan", err)
		}
		if r.GetVersion() != e.v2 || r.GetAdapted() != 2 {
			t.Fatalf("version %d adapted %d; want the last good plan (v%d) adapting 2", r.GetVersion(), r.GetAdapted(), e.v2)
		}
		return e.reg.getContract.Load() > calls
	})
	time.Sleep(20 * time.Millisecond)
	if got := gauge(t, reader, "seam.adapter.plan.staleness"); got <= 0 {
		t.Errorf("staleness %v while serving an invalidated plan, want > 0", got)
	}
	e.reg.setUnaryDown(false)
	clocktest.Eventually(t, "v1 once the registry answers again", func() bool {
		r, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1))})
		return err == nil && r.GetVersion() == e.v1
	})
	// The whole registry goes away: the stream breaks and the gauge says so.
	e.reg.setDown(true)
	e.reg.activate("shop.orders", e.v1)
	clocktest.Eventually(t, "the stream to be reported down", func() bool { return gauge(t, reader, "seam.adapter.registry.stream.connected") == 0 })
	if r := adapt(t, e, 0, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1))); r.GetVersion() != e.v1 {
		t.Errorf("with the registry down: version %d, want the cached v%d", r.GetVersion(), e.v1)
	}
}

// gauge reads the last value of a gauge.
// newWatchingEnv is an env with a metered server whose Run (refreshing
// hourly) follows the registry's event stream until the test ends; it
// returns once the stream is connected.
func newWatchingEnv(t *testing.T) (*env, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	e := newEnv(t, adapter.Config{RefreshInterval: time.Hour}, meter)
	servertest.RunUntilCleanup(t, "Run", e.srv.Run)
	clocktest.Eventually(t, "the event stream to connect", func() bool { return e.reg.watchers.Load() == 1 })
	return e, reader
}

func gauge(t *testing.T, reader *sdkmetric.ManualReader, name string) float64 {
	t.Helper()
	switch d := telemetrytest.Metric(t, reader, name).(type) {
	case metricdata.Gauge[float64]:
		return d.DataPoints[0].Value
	case metricdata.Gauge[int64]:
		return float64(d.DataPoints[0].Value)
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestPreview shows a registered mapping field by field, and a proposed
// one with its compile problems and the fields that did compile.
func TestPreview(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(2)
	in2[1] = bytes.Replace(in2[1], []byte(customerUUID(100001)), []byte(customerUUID(999999)), 1)
	resp, err := e.client.Preview(context.Background(), &adapterv1.PreviewRequest{Subject: "shop.orders", Version: e.v2, Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetRecords()) != 2 || len(resp.GetProblems()) != 0 {
		t.Fatalf("got %d records, problems %v; want 2 records, no problems", len(resp.GetRecords()), resp.GetProblems())
	}
	field := func(r *adapterv1.PreviewRecord, name string) *adapterv1.PreviewField {
		for _, f := range r.GetFields() {
			if f.GetField() == name {
				return f
			}
		}
		t.Fatalf("record %d has no preview of %s", r.GetIndex(), name)
		return nil
	}
	ok := field(resp.GetRecords()[0], "customer_id")
	if ok.GetSource() != "customer_id" || ok.GetSourceValue().GetStringValue() != customerUUID(100000) || ok.GetCanonicalValue().GetNumberValue() != 100000 || ok.GetError() != nil {
		t.Errorf("record 0 customer_id: got %v, want source %s → 100000", ok, customerUUID(100000))
	}
	miss := field(resp.GetRecords()[1], "customer_id")
	if miss.GetError().GetCode() != recordv1.ErrorCode_ERROR_CODE_ID_UNMAPPED || miss.GetCanonicalValue() != nil {
		t.Errorf("record 1 customer_id: got %v, want ID_UNMAPPED and no canonical value", miss)
	}
	if ch := field(resp.GetRecords()[1], "amount"); ch.GetCanonicalValue().GetNumberValue() != 21.01 {
		t.Errorf("record 1 amount: got %v, want 21.01 beside the failed field", ch)
	}

	proposed := examples.ShopOrdersV2()
	delete(proposed.Mapping.Fields, "customer_id") // a migration that forgot the id
	proposed.Mapping.Fields["coupon"].From = "voucher"
	resp, err = e.client.Preview(context.Background(), &adapterv1.PreviewRequest{Proposed: proposed, Batch: rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2[:1]))})
	if err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(resp.GetProblems(), "\n")
	for _, want := range []string{"mapping.fields.customer_id: required canonical field customer_id is not produced", "mapping.fields.coupon.from: source field \"voucher\""} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems %q lack %q", problems, want)
		}
	}
	if len(resp.GetRecords()) != 1 || field(resp.GetRecords()[0], "order_id").GetCanonicalValue().GetStringValue() != "ORD-0000000000" {
		t.Errorf("records %v; want the compiled fields previewed", resp.GetRecords())
	}
}

// TestPreviewValidate: with validate, a record passes the preview only when
// the contract's checks let it through the gate and it maps, so a dry run
// of a migration counts what a replay would release.
func TestPreviewValidate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in := orders(3)
	for i := range in {
		in[i] = bytes.Replace(in[i], []byte(`"status":"new"`), []byte(`"status":"paid"`), 1) // v2 knows no "new"
	}
	in[1] = bytes.Replace(in[1], []byte(customerUUID(100001)), []byte(customerUUID(999999)), 1) // unmapped
	in[2] = bytes.Replace(in[2], []byte(`"currency":"`), []byte(`"currency":"X`), 1)            // fails currency's enum
	proposed := examples.ShopOrdersV2()
	batch := rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in))
	tests := []struct {
		validate       bool
		passed, failed int64
		third          string // the check the third record fails, if any
	}{
		{false, 2, 1, ""},
		{true, 1, 2, "currency.enum"},
	}
	for _, tt := range tests {
		resp, err := e.client.Preview(context.Background(), &adapterv1.PreviewRequest{Proposed: proposed, Batch: batch, Validate: tt.validate})
		if err != nil {
			t.Fatal(err)
		}
		var passed []bool
		for _, r := range resp.GetRecords() {
			passed = append(passed, r.GetPassed())
		}
		if resp.GetPassed() != tt.passed || resp.GetFailed() != tt.failed || !passed[0] || passed[1] {
			t.Fatalf("validate=%v: passed %d failed %d (%v), want %d and %d with the first passing and the unmapped second failing",
				tt.validate, resp.GetPassed(), resp.GetFailed(), passed, tt.passed, tt.failed)
		}
		errs := resp.GetRecords()[2].GetErrors()
		if got := len(errs) > 0 && errs[0].GetCheck() == tt.third && errs[0].GetCode() == recordv1.ErrorCode_ERROR_CODE_ENUM_MISMATCH; got != (tt.third != "") {
			t.Fatalf("validate=%v: third record errors %v, want a %q failure: %v", tt.validate, errs, tt.third, got)
		}
	}
	broken := proto.CloneOf(proposed)
	broken.Checks = append(broken.Checks, &contractv1.Check{Name: "bad", Rule: "required(nope)"})
	if _, err := e.client.Preview(context.Background(), &adapterv1.PreviewRequest{Proposed: broken, Batch: batch, Validate: true}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("validate with checks that do not compile = %v, want InvalidArgument", err)
	}
}

// TestPlanAgeWithoutTraffic: the plan staleness gauge measures the
// registry, not the traffic. A version change is picked up at once with
// no batch asking for it, the gauge stays 0 while the registry answers
// and nothing is adapted, and it rises once the registry is gone.
func TestPlanAgeWithoutTraffic(t *testing.T) {
	t.Parallel()
	e, reader := newWatchingEnv(t)
	in1, _ := orders(2)
	adapt(t, e, 0, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1)))    // the active version's plan
	adapt(t, e, e.v1, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1))) // a pinned version's plan
	calls := e.reg.getContract.Load()

	e.reg.activate("shop.orders", e.v2)
	clocktest.Eventually(t, "the active plan to be fetched again with no batch asking", func() bool { return e.reg.getContract.Load() > calls })
	clocktest.Eventually(t, "staleness back to 0", func() bool { return gauge(t, reader, "seam.adapter.plan.staleness") == 0 })
	time.Sleep(50 * time.Millisecond) // idle: no batch, a healthy registry
	if got := gauge(t, reader, "seam.adapter.plan.staleness"); got != 0 {
		t.Errorf("staleness %v s with the registry healthy and no traffic after a version change, want 0", got)
	}
	calls = e.reg.getContract.Load()
	if r := adapt(t, e, 0, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in1))); r.GetVersion() != e.v2 {
		t.Errorf("active version after the change = %d, want %d", r.GetVersion(), e.v2)
	}
	if got := e.reg.getContract.Load(); got != calls {
		t.Errorf("%d GetContract calls for the first batch after the change, want none: the plan was refreshed already", got-calls)
	}

	e.reg.setDown(true)
	clocktest.Eventually(t, "the stream to be reported down", func() bool { return gauge(t, reader, "seam.adapter.registry.stream.connected") == 0 })
	first := gauge(t, reader, "seam.adapter.plan.staleness")
	time.Sleep(50 * time.Millisecond)
	if got := gauge(t, reader, "seam.adapter.plan.staleness"); got <= first || got <= 0 {
		t.Errorf("staleness with the registry stopped: %v s then %v s, want it rising", first, got)
	}
}

// The ids the adapter translates go to idmap packed in one buffer and the
// values come back so, unmapped ids failing their records.
func TestTranslatePacked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	_, in2 := orders(300)
	in2 = append(in2, []byte(`{"order_id":"ORD-9999999999","customer_id":"00000000-0000-4000-8000-999999999999","amount":5,"currency":"EUR","status":"paid","created_at":"2025-03-01T10:00:00Z","items":1}`))
	packed := adapt(t, e, e.v2, rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2)))
	if got, calls := e.idm.packed.Load(), e.idm.translate.Load(); got != 1 || calls != 1 {
		t.Fatalf("idmap answered %d calls from packed ids of %d, want 1 of 1", got, calls)
	}
	if packed.GetAdapted() != 300 || packed.GetFailed() != 1 {
		t.Fatalf("%d adapted, %d failed; want 300 and 1", packed.GetAdapted(), packed.GetFailed())
	}
}

// A batch whose mapping translates through two lookups (two fields, two
// directions) has both resolved.
func TestTranslateEveryLookupOfABatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, adapter.Config{}, nil)
	// The stand-in idmap looks ids up whatever the direction: it knows the
	// legacy ids' UUIDs too.
	for i := range 50000 {
		e.idm.table[itoa(100000+i)] = customerUUID(100000 + i)
	}
	doc := strings.Replace(string(examples.ShopOrdersV2YAML), "  - {name: coupon, type: STRING}\n",
		"  - {name: coupon, type: STRING}\n  - {name: referrer, type: INT64, identifier: {namespace: customer, format: legacy-int}}\n", 1)
	doc = strings.Replace(doc, "    coupon: {from: coupon}", "    coupon: {from: referrer, translate: {from: customer/legacy-int, to: customer/uuid}}", 1)
	ct, err := contract.Load([]byte(doc), "two_lookups.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v := e.reg.add(ct, false)
	_, in2 := orders(200)
	for i := range in2 {
		in2[i] = bytes.Replace(in2[i], []byte(`"order_id"`), []byte(`"referrer":`+itoa(100000+i)+`,"order_id"`), 1)
	}
	batch := rawBatch(recordv1.Format_FORMAT_NDJSON, ndjson(in2))
	resp, err := e.client.Adapt(context.Background(), &adapterv1.AdaptRequest{Subject: "shop.orders", Version: v, Batch: batch})
	if err != nil {
		t.Fatalf("Adapt: %v", err)
	}
	if resp.GetAdapted() != 200 {
		t.Fatalf("%d adapted, want 200 (first errors: %v)", resp.GetAdapted(), resp.GetResults()[0].GetErrors())
	}
	var rec struct {
		CustomerID int64  `json:"customer_id"`
		Coupon     string `json:"coupon"`
	}
	if err := json.Unmarshal(resp.GetResults()[7].GetRecord().GetJson(), &rec); err != nil || rec.Coupon != customerUUID(100007) || rec.CustomerID == 0 {
		t.Fatalf("record 7 = %+v (%v), want coupon %s and a customer id", rec, err, customerUUID(100007))
	}
	if got := e.idm.packed.Load(); got != 2 {
		t.Errorf("idmap answered %d calls from packed ids, want 2 (one a lookup)", got)
	}
}
