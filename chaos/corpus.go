package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract/contracttest"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/server/servertest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// caseResult is one bad input and the answer it got.
type caseResult struct {
	name, transport string
	want, got       string
	pass            bool
	// rssGrowth is how far the server's RSS rose above where it was when
	// the case began (the client's, for CLI cases); rssLimit, when set,
	// is the most it may.
	rssGrowth, rssLimit int64
	alive               bool
}

// corpus sends bad inputs to one `seam up` node (all four services, one
// process, so one RSS to watch).
type corpus struct {
	c       *cluster
	node    *proc
	rss     *sampler
	dir     string
	short   bool
	results []caseResult

	pipeline, viewer, noToken gatev1.GateServiceClient
	pipelineConn              *grpc.ClientConn
	conns                     []*grpc.ClientConn
}

const mb = 1 << 20

func (k *corpus) client(principal string, max int) gatev1.GateServiceClient {
	conn, err := dial.Conn(k.node.grpcAddr, dial.Options{Token: k.c.tokens[principal], CallTimeout: 30 * time.Second, MaxMessageBytes: max})
	if err != nil {
		panic(err) // dial.Conn fails only on an empty address
	}
	k.conns = append(k.conns, conn)
	return gatev1.NewGateServiceClient(conn)
}

func (k *corpus) close() {
	for _, c := range k.conns {
		c.Close()
	}
}

// check runs one case: fn sends the input and says what came back and
// whether that is the answer wanted. The server must still serve after.
func (k *corpus) check(name, transport, want string, rssLimit int64, fn func() (got string, pass bool)) {
	base := k.rss.mark()
	got, pass := fn()
	r := caseResult{name: name, transport: transport, want: want, got: got, rssLimit: rssLimit,
		rssGrowth: k.rss.peakSinceMark() - base}
	r.alive = k.c.alive(context.Background(), k.node)
	r.pass = pass && r.alive && (rssLimit == 0 || r.rssGrowth < rssLimit)
	k.results = append(k.results, r)
	mark := "ok  "
	if !r.pass {
		mark = "FAIL"
	}
	fmt.Printf("  %s %-5s %s: got %s (want %s)\n", mark, transport, name, got, want)
}

func codeIs(err error, want codes.Code) (string, bool) {
	st := status.Convert(err)
	got := st.Code().String()
	if st.Code() != codes.OK {
		got += ": " + clip(st.Message(), 120)
	}
	return got, st.Code() == want
}

// reason is the ErrorInfo reason an error carries ("" without one).
func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// received is how many records the gate's monitor counts in a partition
// of the corpus's subject.
func (k *corpus) received(ctx context.Context, partition string) (int64, error) {
	mon, err := k.pipeline.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: subject, PartitionFrom: partition, PartitionTo: partition})
	if err != nil {
		return 0, fmt.Errorf("GetMonitor: %w", err)
	}
	var n int64
	for _, p := range mon.GetPartitions() {
		n += p.GetReceived()
	}
	return n, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func raw(b []byte) *recordv1.RecordBatch {
	return &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: b}}}
}

func ingest(id string, data []byte) *gatev1.IngestRequest {
	return &gatev1.IngestRequest{Subject: subject, Partition: "2026-04-01", Identity: &gatev1.IngestRequest_BatchId{BatchId: id}, Batch: raw(data)}
}

const goodRecord = `{"settlement_id":"STL-%010d","merchant_ref":"MER-000001","amount":12.5,"currency":"EUR","settled_at":"2026-04-01T10:00:00Z","reference":1}`

func good(i int) string { return fmt.Sprintf(goodRecord, 5_000_000_000+i) }

// rawCodec sends bytes as they are, for requests no Go client would
// encode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func (k *corpus) grpcCases(ctx context.Context) {
	k.pipeline = k.client("pipeline", 0)
	k.pipelineConn = k.conns[len(k.conns)-1]
	k.viewer = k.client("viewer", 0)
	k.noToken = k.client("", 0)
	k.check("ingest without a token", "gRPC", "Unauthenticated", 0, func() (string, bool) {
		_, err := k.noToken.Ingest(ctx, ingest("c-notoken", []byte(good(1))))
		return codeIs(err, codes.Unauthenticated)
	})
	k.check("ingest with a viewer token", "gRPC", "PermissionDenied", 0, func() (string, bool) {
		_, err := k.viewer.Ingest(ctx, ingest("c-viewer", []byte(good(2))))
		return codeIs(err, codes.PermissionDenied)
	})
	k.check("unknown subject", "gRPC", "NotFound", 0, func() (string, bool) {
		req := ingest("c-unknown", []byte(good(3)))
		req.Subject = "pay.nothing"
		_, err := k.pipeline.Ingest(ctx, req)
		return codeIs(err, codes.NotFound)
	})
	k.check("unknown contract version", "gRPC", "NotFound", 0, func() (string, bool) {
		req := ingest("c-version", []byte(good(4)))
		req.ContractVersion = 99
		_, err := k.pipeline.Ingest(ctx, req)
		return codeIs(err, codes.NotFound)
	})
	k.check("a malformed NDJSON line", "gRPC", "that line quarantined as MALFORMED with its bytes, the good one accepted", 0, func() (string, bool) {
		resp, err := k.pipeline.Ingest(ctx, ingest("c-malformed", []byte(good(5)+"\n{\"settlement_id\": \"STL-00\n")))
		if err != nil {
			return codeIs(err, codes.OK)
		}
		s := resp.GetSummary()
		reason := ""
		for _, r := range resp.GetRecords() {
			for _, e := range r.GetReasons() {
				reason = e.GetCode().String()
			}
		}
		return fmt.Sprintf("accepted %d, quarantined %d %s", s.GetAccepted(), s.GetQuarantined(), reason),
			s.GetAccepted() == 1 && s.GetQuarantined() == 1 && strings.Contains(reason, "MALFORMED")
	})
	k.check("a JSON batch cut off mid-array", "gRPC", "InvalidArgument naming the offset", 0, func() (string, bool) {
		req := ingest("c-malformed-json", []byte("["+good(6)+",\n{\"settlement_id\": "))
		req.Batch.GetRaw().Format = recordv1.Format_FORMAT_JSON
		_, err := k.pipeline.Ingest(ctx, req)
		return codeIs(err, codes.InvalidArgument)
	})
	k.check("empty batch", "gRPC", "InvalidArgument", 0, func() (string, bool) {
		_, err := k.pipeline.Ingest(ctx, ingest("c-empty", nil))
		return codeIs(err, codes.InvalidArgument)
	})
	k.check("invalid UTF-8 in the request's subject", "gRPC", "InvalidArgument naming subject", 0, func() (string, bool) {
		req := ingest("c-utf8", []byte(good(6)))
		req.Subject = "pay.settlementsZ"
		b, err := proto.Marshal(req)
		if err != nil {
			return err.Error(), false
		}
		b = bytes.Replace(b, []byte("pay.settlementsZ"), []byte("pay.settlements\xff"), 1)
		var resp []byte
		err = k.pipelineConn.Invoke(ctx, gatev1.GateService_Ingest_FullMethodName, &b, &resp, grpc.ForceCodec(rawCodec{}))
		got, ok := codeIs(err, codes.InvalidArgument)
		return got, ok && strings.Contains(got, "subject")
	})
	k.check("invalid UTF-8 inside a record", "gRPC", "the record quarantined, the others accepted (or InvalidArgument); never Internal", 0, func() (string, bool) {
		data := good(7) + "\n" + strings.Replace(good(8), "MER-000001", "MER-00\xff001", 1) + "\n"
		resp, err := k.pipeline.Ingest(ctx, ingest("c-utf8-record", []byte(data)))
		if err != nil {
			return codeIs(err, codes.InvalidArgument)
		}
		s := resp.GetSummary()
		return fmt.Sprintf("accepted %d, quarantined %d", s.GetAccepted(), s.GetQuarantined()), s.GetAccepted() == 1 && s.GetQuarantined() == 1
	})
	k.check("a record nested 100,000 levels deep", "gRPC", "the record quarantined (or InvalidArgument); never a crash", 0, func() (string, bool) {
		deep := strings.Replace(good(9), `"reference":1`, `"reference":1,"extra":`+strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000), 1)
		resp, err := k.pipeline.Ingest(ctx, ingest("c-deep", []byte(good(10)+"\n"+deep+"\n")))
		if err != nil {
			return codeIs(err, codes.InvalidArgument)
		}
		s := resp.GetSummary()
		return fmt.Sprintf("accepted %d, quarantined %d", s.GetAccepted(), s.GetQuarantined()), s.GetQuarantined() == 1 && s.GetAccepted() == 1
	})
	k.check("a message over the 64 MiB limit", "gRPC", "ResourceExhausted", 0, func() (string, bool) {
		big := k.client("pipeline", 128*mb)
		line := good(11) + "\n"
		data := bytes.Repeat([]byte(line), 65*mb/len(line)+1)
		_, err := big.Ingest(ctx, ingest("c-huge", data))
		return codeIs(err, codes.ResourceExhausted)
	})
	k.check("an ingest stream with no message", "gRPC", "InvalidArgument", 0, func() (string, bool) {
		stream, err := k.pipeline.IngestStream(ctx)
		if err != nil {
			return err.Error(), false
		}
		_, err = stream.CloseAndRecv()
		return codeIs(err, codes.InvalidArgument)
	})
	k.check("two stream chunks with the same sequence (0)", "gRPC", "InvalidArgument naming sequence 0; the first chunk's record stored, the second's not (never \"accepted 2\" with one stored)", 0, func() (string, bool) {
		const partition = "2026-04-02"
		stream, err := k.pipeline.IngestStream(ctx)
		if err != nil {
			return err.Error(), false
		}
		_ = stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: &gatev1.IngestHeader{
			Subject: subject, Partition: partition, BatchId: "c-stream-seq", Format: recordv1.Format_FORMAT_NDJSON}}})
		for i := range 2 {
			_ = stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{Sequence: 0, Data: []byte(good(20 + i))}}})
		}
		resp, err := stream.CloseAndRecv()
		if err == nil {
			return fmt.Sprintf("OK, accepted %d", resp.GetSummary().GetAccepted()), false
		}
		got, ok := codeIs(err, codes.InvalidArgument)
		stored, serr := k.received(ctx, partition)
		if serr != nil {
			return got + "; " + serr.Error(), false
		}
		return fmt.Sprintf("%s; %d record stored", got, stored), ok && strings.Contains(got, "sequence 0") && stored == 1
	})
	k.check("a batch id reused with different content", "gRPC", "FailedPrecondition BATCH_ID_REUSED (batch id reused with different content)", 0, func() (string, bool) {
		if _, err := k.pipeline.Ingest(ctx, ingest("c-reused", []byte(good(30)))); err != nil {
			return "first send: " + err.Error(), false
		}
		resp, err := k.pipeline.Ingest(ctx, ingest("c-reused", []byte(good(31)+"\n"+good(32))))
		if err == nil {
			return fmt.Sprintf("OK, retried=%v with the first send's verdicts", resp.GetSummary().GetRetried()), false
		}
		got, ok := codeIs(err, codes.FailedPrecondition)
		r := reason(err)
		return r + " " + got, ok && r == "BATCH_ID_REUSED"
	})
	k.check("two amounts of 1.7e308 in a partition", "gRPC", "accepted, and the partition's mean of amount 1.7e308 (finite)", 0, func() (string, bool) {
		data := strings.Replace(good(40), `"amount":12.5`, `"amount":1.7e308`, 1) + "\n" + strings.Replace(good(41), `"amount":12.5`, `"amount":1.7e308`, 1)
		req := ingest("c-overflow", []byte(data))
		req.Partition = "2026-04-03"
		resp, err := k.pipeline.Ingest(ctx, req)
		if err != nil {
			return codeIs(err, codes.OK)
		}
		if a := resp.GetSummary().GetAccepted(); a != 2 {
			return fmt.Sprintf("accepted %d of 2", a), false
		}
		mon, err := k.pipeline.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: subject, PartitionFrom: "2026-04-03", PartitionTo: "2026-04-03"})
		if err != nil {
			return codeIs(err, codes.OK)
		}
		for _, p := range mon.GetPartitions() {
			for _, f := range p.GetFields() {
				if f.GetField() == "amount" {
					m := f.GetMean()
					return fmt.Sprintf("accepted 2, mean %g", m), math.Abs(m-1.7e308) <= 1e-9*1.7e308
				}
			}
		}
		return "no statistics of amount", false
	})
	registry := func(principal string) registryv1.RegistryServiceClient {
		conn, err := dial.Conn(k.node.grpcAddr, dial.Options{Token: k.c.tokens[principal], CallTimeout: 30 * time.Second})
		if err != nil {
			panic(err)
		}
		k.conns = append(k.conns, conn)
		return registryv1.NewRegistryServiceClient(conn)
	}
	k.check("a pipeline publishes BACKFILL_COMPLETED", "gRPC", "PermissionDenied", 0, func() (string, bool) {
		_, err := registry("pipeline").PublishEvent(ctx, &registryv1.PublishEventRequest{Event: &registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED, Subject: subject, Message: "forged"}})
		return codeIs(err, codes.PermissionDenied)
	})
	k.check("a team overwrites another team's consumer", "gRPC", "PermissionDenied", 0, func() (string, bool) {
		ledgerConsumer := &registryv1.Consumer{Name: "finance.ledger", Owner: "team-payments",
			Inputs: []*registryv1.Input{{Source: &registryv1.Input_Subject{Subject: subject}, Fields: []string{"amount"}}}}
		if _, err := registry("team-payments").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: ledgerConsumer}); err != nil {
			return "team-payments declaring it: " + err.Error(), false
		}
		_, err := registry("team-risk").RegisterConsumer(ctx, &registryv1.RegisterConsumerRequest{Consumer: &registryv1.Consumer{Name: "finance.ledger",
			Inputs: []*registryv1.Input{{Source: &registryv1.Input_Dataset{Dataset: "nothing"}}}}})
		return codeIs(err, codes.PermissionDenied)
	})
}

// httpAnswer sends a request head and then body, reading the answer while
// the body is still being written, as a client that sends 200 MB does.
func httpAnswer(addr, head string, body io.Reader) (int, string, error) {
	return httpExchange(addr, head, body, 2*time.Minute, func(int) bool { return true })
}

// httpExchange sends a request head and then body, waiting at most wait
// for the answer, and returns its status and, when readBody says so for
// that status, at most 4 KB of its body.
func httpExchange(addr, head string, body io.Reader, wait time.Duration, readBody func(status int) bool) (int, string, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(conn, head); err != nil {
		return 0, "", err
	}
	go func() { _, _ = io.Copy(conn, body) }() // ends when the body ends or the connection closes
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if !readBody(resp.StatusCode) {
		return resp.StatusCode, "", nil
	}
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, string(text), nil
}

// spaces is an endless body: the start of an ingest request, then blanks.
func spaces() io.Reader {
	return servertest.Endless(`{"partition":"2026-04-01","batch_id":"big","batch":{"objects":{"records":[`)
}

func (k *corpus) restCases(ctx context.Context) {
	addr := k.node.httpAddr
	ingestPath := "/v1/subjects/" + subject + ":ingest"
	head := func(auth, framing string) string {
		h := "POST " + ingestPath + " HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\n" + framing
		if auth != "" {
			h += "Authorization: Bearer " + auth + "\r\n"
		}
		return h + "\r\n"
	}
	post := func(token, path, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, string(text)
	}
	answer := func(code int, body string, err error, want int) (string, bool) {
		if err != nil {
			return err.Error(), false
		}
		return fmt.Sprintf("%d %s", code, clip(strings.TrimSpace(body), 100)), code == want
	}
	const offered = 200 * mb
	declared := fmt.Sprintf("Content-Length: %d\r\n", offered)
	k.check("200 MB without a token, length declared", "REST", "401, without reading the body", 64*mb, func() (string, bool) {
		code, body, err := httpAnswer(addr, head("", declared), io.LimitReader(spaces(), offered))
		return answer(code, body, err, 401)
	})
	k.check("200 MB without a token, chunked", "REST", "401, without reading the body", 64*mb, func() (string, bool) {
		code, body, err := httpAnswer(addr, head("", "Transfer-Encoding: chunked\r\n"), servertest.Chunked(io.LimitReader(spaces(), offered)))
		return answer(code, body, err, 401)
	})
	k.check("200 MB with a token, length declared", "REST", "413, without reading the body", 64*mb, func() (string, bool) {
		code, body, err := httpAnswer(addr, head(k.c.tokens["pipeline"], declared), io.LimitReader(spaces(), offered))
		return answer(code, body, err, 413)
	})
	k.check("80 MB with a token, chunked", "REST", "413 once the body passes 64 MiB", 0, func() (string, bool) {
		began := time.Now()
		code, body, err := httpAnswer(addr, head(k.c.tokens["pipeline"], "Transfer-Encoding: chunked\r\n"), servertest.Chunked(io.LimitReader(spaces(), 80*mb)))
		got, ok := answer(code, body, err, 413)
		return fmt.Sprintf("%s (after %s)", got, time.Since(began).Round(100*time.Millisecond)), ok
	})
	k.check("a request without a token", "REST", "401", 0, func() (string, bool) {
		code, body := post("", ingestPath, `{}`)
		return answer(code, body, nil, 401)
	})
	k.check("malformed JSON", "REST", "400", 0, func() (string, bool) {
		code, body := post(k.c.tokens["pipeline"], ingestPath, `{"partition": "2026-04-01", "batch_id": `)
		return answer(code, body, nil, 400)
	})
	k.check("invalid UTF-8 in the JSON body", "REST", "400", 0, func() (string, bool) {
		code, body := post(k.c.tokens["pipeline"], ingestPath, "{\"partition\": \"2026-04-01\xff\", \"batch_id\": \"r-utf8\"}")
		return answer(code, body, nil, 400)
	})
	k.check("a pipeline publishes an event", "REST", "403", 0, func() (string, bool) {
		code, body := post(k.c.tokens["pipeline"], "/v1/events", `{"event": {"type": "EVENT_TYPE_SOURCE_RELEASED", "subject": "pay.settlements"}}`)
		return answer(code, body, nil, 403)
	})
	// objects is a REST batch of one record, settlement n, with reference
	// written as given.
	objects := func(id string, n int, reference string) string {
		return fmt.Sprintf(`{"partition": "2026-04-04", "batch_id": %q, "batch": {"objects": {"records": [{"settlement_id": "STL-%010d",
			"merchant_ref": "MER-000001", "amount": 12.5, "currency": "EUR", "settled_at": "2026-04-04T10:00:00Z", "reference": %s}]}}}`, id, 6_000_000_000+n, reference)
	}
	for i, v := range []string{"9007199254740993", "1234567890123456789"} {
		k.check("INT64 "+v+" in a REST object", "REST", "200, accepted, with "+v+" in the canonical record; or 400; never rounded", 0, func() (string, bool) {
			code, body := post(k.c.tokens["pipeline"], ingestPath, objects(fmt.Sprint("r-int64-", i), i, v))
			switch {
			case code == 400:
				return answer(code, body, nil, 400)
			case code == 200 && strings.Contains(body, `"reference":`+v) && !strings.Contains(body, "QUARANTINED"):
				return "200, accepted, the value exact", true
			}
			if i := strings.Index(body, `"reasons"`); i >= 0 {
				return fmt.Sprintf("%d, quarantined: %s", code, clip(body[i:], 200)), false
			}
			return answer(code, body, nil, -1)
		})
	}
	k.check("1001.0 for an INT64, REST object and NDJSON", "REST", "the same answer on both paths: quarantined (a type mismatch)", 0, func() (string, bool) {
		restCode, restText := post(k.c.tokens["pipeline"], ingestPath, objects("r-float-int", 10, "1001.0"))
		line := strings.Replace(good(50), `"reference":1`, `"reference":1001.0`, 1)
		resp, err := k.pipeline.Ingest(ctx, ingest("c-float-int", []byte(line)))
		ndjson := "quarantined"
		if err == nil && resp.GetSummary().GetAccepted() == 1 {
			ndjson = "accepted"
		} else if err != nil {
			ndjson = status.Code(err).String()
		}
		restVerdict := fmt.Sprint(restCode)
		if restCode == 200 {
			restVerdict = "accepted"
			if strings.Contains(restText, "RECORD_STATUS_QUARANTINED") {
				restVerdict = "quarantined"
			}
		}
		return fmt.Sprintf("REST %s, NDJSON %s", restVerdict, ndjson), restVerdict == ndjson && ndjson == "quarantined"
	})
	k.check("POST /v1/ingest:stream with two chunks of sequence 0", "REST", "400 naming sequence 0 (never \"accepted 2\" with one stored)", 0, func() (string, bool) {
		chunk := func(i int) string {
			return fmt.Sprintf(`{"chunk": {"sequence": 0, "data": %q}}`, base64.StdEncoding.EncodeToString([]byte(good(60+i))))
		}
		body := fmt.Sprintf(`{"header": {"subject": %q, "partition": "2026-04-05", "batch_id": "r-stream-seq", "format": "FORMAT_NDJSON"}}`, subject) +
			"\n" + chunk(0) + "\n" + chunk(1) + "\n"
		code, text := post(k.c.tokens["pipeline"], "/v1/ingest:stream", body)
		got, ok := answer(code, text, nil, 400)
		return got, ok && strings.Contains(text, "sequence 0")
	})
	k.check("/metrics on the REST address with --metrics-addr set", "REST", "404 there, 200 on the metrics address", 0, func() (string, bool) {
		get := func(a string) int {
			resp, err := http.Get("http://" + a + "/metrics")
			if err != nil {
				return 0
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		rest, metrics := get(addr), get(k.node.metrics)
		return fmt.Sprintf("%d on REST, %d on the metrics address", rest, metrics), rest == 404 && metrics == 200
	})
	conns := 1000
	if k.short {
		conns = 100
	}
	k.check(fmt.Sprintf("%d connections trickling their headers", conns), "REST", "every one closed within the 10 s header timeout (+3 s)", 0, func() (string, bool) {
		return trickle(addr, k.node.pid(), conns, "POST "+ingestPath+" HTTP/1.1\r\nHost: seam\r\n", 13*time.Second)
	})
	k.check("an authenticated body trickling", "REST", fmt.Sprintf("closed within --http-read-timeout %s (+3 s)", k.c.readTimeout), 0, func() (string, bool) {
		return trickle(addr, k.node.pid(), 1, head(k.c.tokens["pipeline"], "Content-Length: 100000\r\n")+`{"partition":`, k.c.readTimeout+3*time.Second)
	})
}

// trickle opens n connections that send start and then one byte a second,
// and reports how long the server took to close them all.
func trickle(addr string, pid, n int, start string, limit time.Duration) (string, bool) {
	before := openFiles(pid)
	var closed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	var last atomic.Int64
	for range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return "dial: " + err.Error(), false
		}
		wg.Go(func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(limit + 30*time.Second))
			if _, err := io.WriteString(conn, start); err != nil {
				return
			}
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, conn) // returns when the server closes
				close(done)
			}()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					closed.Add(1)
					last.Store(int64(time.Since(began)))
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("x")); err != nil {
						<-done
						closed.Add(1)
						last.Store(int64(time.Since(began)))
						return
					}
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	during := openFiles(pid)
	wg.Wait()
	took := time.Duration(last.Load())
	time.Sleep(200 * time.Millisecond)
	after := openFiles(pid)
	return fmt.Sprintf("%d of %d closed by the server after %s; server descriptors %d → %d → %d",
		closed.Load(), n, took.Round(100*time.Millisecond), before, during, after), closed.Load() == int64(n) && took <= limit && after <= before+5
}

// cliCases run the seam command on hostile contract files and measure its
// peak RSS against the same command on a good contract.
func (k *corpus) cliCases() {
	dir := k.dir
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			panic(err)
		}
		return p
	}
	data := write("settlements.ndjson", good(1)+"\n"+good(2)+"\n")
	goodContract := write("pay_settlements.yaml", settlementContract)
	aliasBomb := contracttest.AliasBomb(9, strings.Repeat("lol", 130_000))
	bomb := write("bomb.yaml", string(aliasBomb))
	huge := write("huge.yaml", "subject: pay.huge\ndescription: "+strings.Repeat("x", 2*mb)+"\n")
	run := func(args ...string) (int, string, int64) {
		cmd := exec.Command(k.c.bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(k.c.env, "SEAM_ADDR="+k.node.grpcAddr, "SEAM_TOKEN="+k.c.tokens["team-payments"])
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			return -1, err.Error(), 0
		}
		var peak int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss << 10
		}
		return code, out.String(), peak
	}
	_, _, baseline := run("validate", "--contract", goodContract, data)
	cli := func(name, want string, rssLimit int64, args []string, ok func(code int, out string) bool) {
		code, out, peak := run(args...)
		r := caseResult{name: name, transport: "CLI", want: want, rssLimit: rssLimit, rssGrowth: peak - baseline,
			got: fmt.Sprintf("exit %d: %s", code, clip(strings.TrimSpace(lastLine(out)), 120))}
		r.alive = k.c.alive(context.Background(), k.node)
		r.pass = ok(code, out) && r.alive && (rssLimit == 0 || r.rssGrowth < rssLimit)
		k.results = append(k.results, r)
		fmt.Printf("  %-4s CLI   %s: got %s (want %s)\n", map[bool]string{true: "ok", false: "FAIL"}[r.pass], name, r.got, want)
	}
	cli(fmt.Sprintf("seam validate with a %d KB YAML alias bomb", len(aliasBomb)>>10), "exit 3 (the contract is not valid) naming the alias, under +64 MB", 64*mb,
		[]string{"validate", "--contract", bomb, data},
		func(code int, out string) bool { return code == 3 && strings.Contains(out, "alias") })
	cli("seam contract register with the alias bomb", "exit 3 (the contract is not valid) naming the alias", 64*mb,
		[]string{"contract", "register", "-f", bomb},
		func(code int, out string) bool { return code == 3 && strings.Contains(out, "alias") })
	cli("seam validate with a 2 MB contract", "exit 3 (the contract is not valid): larger than the 1 MiB limit", 64*mb,
		[]string{"validate", "--contract", huge, data},
		func(code int, out string) bool { return code == 3 && strings.Contains(out, "larger than") })
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// runCorpus starts a `seam up` node, registers the source on it and sends
// the corpus.
func runCorpus(ctx context.Context, c *cluster, dir string, short bool) ([]caseResult, error) {
	node, err := c.add("up", "up", nil)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx, node); err != nil {
		return nil, err
	}
	if err := c.setupSource(ctx, node, node); err != nil {
		return nil, err
	}
	k := &corpus{c: c, node: node, rss: newSampler(node.pid()), dir: dir, short: short}
	defer k.rss.close()
	defer k.close()
	fmt.Println("corpus (gRPC):")
	k.grpcCases(ctx)
	fmt.Println("corpus (REST):")
	k.restCases(ctx)
	fmt.Println("corpus (REST sweep: every route × caller × hostile body):")
	k.sweep(ctx)
	fmt.Println("corpus (bad names):")
	k.badNames(ctx)
	fmt.Println("corpus (CLI):")
	k.cliCases()
	return k.results, nil
}
