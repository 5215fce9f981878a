package gate

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/storage/storagetest"
	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// The registry goes away and the gate restarts: the last known contract,
// persisted in the gate's store, keeps serving, and its age is a gauge.
func TestRegistryOutageServesLastKnownContractAcrossRestart(t *testing.T) {
	t.Parallel()
	p := knownPeers(t)
	url := storagetest.SQLiteURL(t)
	first := startGate(t, p, url, nil)
	ctx := context.Background()
	if _, err := first.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 10, amount: 85})); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	first.stop()

	p.clock.Add(time.Hour)
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	dead := deadAddr(t)
	second := startGate(t, p, url, func(c *Config) {
		c.Registry = dial(t, dead, "")
		c.Meter = meter
	})
	resp, err := second.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-03-01", "b2", orders{first: 100, n: 10, amount: 85}))
	if err != nil {
		t.Fatalf("Ingest with the registry down: %v", err)
	}
	if resp.GetSummary().GetAccepted() != 10 || resp.GetSummary().GetContractVersion() != 1 {
		t.Fatalf("summary = %v, want 10 accepted under the last known v1", resp.GetSummary())
	}
	age := -1.0
	g, _ := telemetrytest.Metric(t, reader, "seam.gate.contract.age").(metricdata.Gauge[float64])
	for _, dp := range g.DataPoints {
		age = dp.Value
	}
	if age < 3600 {
		t.Fatalf("seam.gate.contract.age = %v, want at least 3600 s (the contract was confirmed an hour ago)", age)
	}

	// A subject the gate never saw cannot be served from memory.
	if _, err := second.as("pipeline").Ingest(ctx, ingest("shop.other", "p", "b", orders{first: 1, n: 1, amount: 1})); status.Code(err) != codes.Unavailable {
		t.Fatalf("unknown subject with the registry down = %v, want Unavailable", err)
	}
}

// A load sent as a stream of chunks: each chunk is its own batch, a
// resent stream writes nothing twice, and the answer carries every
// chunk's verdicts with canonical records like Ingest. A chunk with
// records missing the key does not block anything by itself: its records
// are quarantined, the partition is told it will be BLOCKED, and its seal
// blocks it whole.
func TestIngestStreamChunksAreBatches(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	send := func() *gatev1.IngestStreamResponse {
		stream, err := e.as("pipeline").IngestStream(ctx)
		if err != nil {
			t.Fatalf("IngestStream: %v", err)
		}
		if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: &gatev1.IngestHeader{
			Subject: "shop.orders", Partition: "2025-03-01", BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON}}}); err != nil {
			t.Fatalf("send header: %v", err)
		}
		chunks := []orders{{first: 1, n: 100, amount: 85}, {first: 101, n: 100, amount: 85, missing: 3}, {first: 201, n: 100, amount: 85, uuids: 10}}
		for i, o := range chunks {
			if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{Sequence: int64(i), Data: o.ndjson(), FirstOffset: int64(i * 100)}}}); err != nil {
				t.Fatalf("send chunk %d: %v", i, err)
			}
		}
		resp, err := stream.CloseAndRecv()
		if err != nil {
			t.Fatalf("CloseAndRecv: %v", err)
		}
		return resp
	}
	r := send()
	if s := r.GetSummary(); r.GetChunks() != 3 || s.GetReceived() != 300 || s.GetAccepted() != 287 || s.GetQuarantined() != 13 || s.GetRetried() {
		t.Fatalf("stream = %v, want 3 chunks, 287 accepted and 13 quarantined of 300", s)
	}
	if len(r.GetRecords()) != 300 || len(r.GetChunkResults()) != 3 || !r.GetPartition().GetWillBlock() {
		t.Fatalf("stream answered %d records, %d chunk results, partition %v; want 300, 3, and told it will be BLOCKED", len(r.GetRecords()), len(r.GetChunkResults()), r.GetPartition())
	}
	canonical := 0
	for _, v := range r.GetRecords() {
		if v.GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED && len(v.GetRecord().GetJson()) > 0 {
			canonical++
		}
	}
	if canonical != 287 {
		t.Fatalf("%d accepted records came with canonical JSON, want all 287", canonical)
	}
	again := send()
	if again.GetSummary().GetAccepted() != 287 || !again.GetSummary().GetRetried() || len(again.GetRecords()) != 300 {
		t.Fatalf("resent stream = %v with %d records, want the stored verdicts", again.GetSummary(), len(again.GetRecords()))
	}
	m := monitorOf(t, e, "shop.orders", "2025-03-01")
	if m.GetBatches() != 3 || m.GetReceived() != 300 || m.GetBlocked() != 0 {
		t.Fatalf("monitor = %v, want 3 batches and 300 records counted once, none blocked before the seal", m)
	}
	if s := sealOf(t, e, "shop.orders", "2025-03-01"); s.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
		t.Fatalf("sealed = %v, want BLOCKED", s)
	}
	if m := monitorOf(t, e, "shop.orders", "2025-03-01"); m.GetBlocked() != 287 || m.GetAccepted() != 0 {
		t.Fatalf("monitor after the seal = %v, want the partition's 287 accepted records blocked", m)
	}
}

// containingGate is a gate that contains a source whose partition's match
// rate falls under 0.5.
func containingGate(t *testing.T) *gateEnv {
	return startGate(t, knownPeers(t), storagetest.SQLiteURL(t), func(c *Config) { c.MatchRateFloor = 0.5 })
}

// With a floor configured, a collapsing match rate contains the source.
func TestAutomaticContainmentBelowMatchRateFloor(t *testing.T) {
	t.Parallel()
	e := containingGate(t)
	ctx := context.Background()
	if _, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-03-01", "b1", orders{first: 1, n: 200, amount: 85, uuids: 190})); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	list, err := e.as("viewer").ListContainments(ctx, &gatev1.ListContainmentsRequest{})
	if err != nil || len(list.GetContainments()) != 1 || !list.GetContainments()[0].GetContained() || !list.GetContainments()[0].GetAutomatic() {
		t.Fatalf("containments = %v (%v), want shop.orders contained automatically", list.GetContainments(), err)
	}
	r, err := e.as("pipeline").Ingest(ctx, ingest("shop.orders", "2025-03-01", "b2", orders{first: 300, n: 10, amount: 85}))
	if err != nil || r.GetSummary().GetQuarantined() != 10 {
		t.Fatalf("next batch = %v (%v), want all quarantined", r.GetSummary(), err)
	}
}

// TestMain runs the child gate of TestKillNineMidLoad when asked to (it
// serves a gate on the store and peers the parent names, until killed),
// and otherwise the tests, failing when any goroutine outlives them: every
// gate, peer and store a test starts must end with it.
func TestMain(m *testing.M) {
	if os.Getenv("SEAM_GATE_CHILD") == "1" {
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(m)
}

func runChild() int {
	ctx := context.Background()
	conn := func(addr, token string) *grpc.ClientConn {
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if token != "" {
			opts = append(opts, grpc.WithPerRPCCredentials(auth.TokenCredentials{Token: token}))
		}
		c, err := grpc.NewClient(addr, opts...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		return c
	}
	srv, err := New(ctx, Config{StoreURL: os.Getenv("SEAM_GATE_STORE"), Registry: conn(os.Getenv("SEAM_GATE_REGISTRY"), os.Getenv("SEAM_GATE_TOKEN")),
		Adapter: conn(os.Getenv("SEAM_GATE_ADAPTER"), ""), Idmap: conn(os.Getenv("SEAM_GATE_IDMAP"), ""), Clock: func() time.Time { return start }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	go func() { _ = srv.Run(ctx) }()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	gs := grpc.NewServer()
	srv.Register(gs)
	fmt.Println("ADDR", lis.Addr().String())
	if err := gs.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// startChild re-executes the test binary as a gate process.
func startChild(t *testing.T, p *peers, url string) (*exec.Cmd, gatev1.GateServiceClient) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SEAM_GATE_CHILD=1", "SEAM_GATE_STORE="+url, "SEAM_GATE_REGISTRY="+p.regAddr,
		"SEAM_GATE_TOKEN="+p.tokens["seam-services"], "SEAM_GATE_ADAPTER="+p.adptAddr, "SEAM_GATE_IDMAP="+p.idmapAdr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("child gate did not start: %q, %v", line, err)
	}
	return cmd, gatev1.NewGateServiceClient(dial(t, strings.TrimSpace(strings.TrimPrefix(line, "ADDR ")), ""))
}

// A gate process killed with SIGKILL in the middle of a load loses
// nothing it acknowledged, and the pipeline's retries after the restart
// write nothing twice.
func TestKillNineMidLoad(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, killNineMidLoad)
}

func killNineMidLoad(t *testing.T, url string) {
	p := knownPeers(t)
	cmd, client := startChild(t, p, url)
	ctx := context.Background()

	const batches, size = 60, 50
	req := func(i int) *gatev1.IngestRequest {
		return ingest("shop.orders", "2025-03-01", fmt.Sprint("b", i), orders{first: i * size, n: size, amount: 85, uuids: 5})
	}
	acked := map[int]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if _, err := client.Ingest(ctx, req(i)); err == nil {
					mu.Lock()
					acked[i] = true
					mu.Unlock()
				}
			}
		})
	}
	for i := range batches {
		if i == batches/2 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill -9: %v", err)
			}
		}
		next <- i
	}
	close(next)
	wg.Wait()
	_ = cmd.Wait()
	if len(acked) == 0 || len(acked) == batches {
		t.Fatalf("%d of %d batches acknowledged before the kill; want some but not all", len(acked), batches)
	}

	// The pipeline retries everything against the restarted gate.
	_, client = startChild(t, p, url)
	retried := 0
	for i := range batches {
		resp, err := client.Ingest(ctx, req(i))
		if err != nil {
			t.Fatalf("retry of batch %d: %v", i, err)
		}
		if resp.GetSummary().GetRetried() {
			retried++
		} else if acked[i] {
			t.Fatalf("batch %d was acknowledged before the kill but is not stored", i)
		}
	}
	if retried < len(acked) {
		t.Fatalf("%d batches found stored after the restart, want at least the %d acknowledged", retried, len(acked))
	}
	m, err := client.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: "shop.orders"})
	if err != nil {
		t.Fatalf("GetMonitor: %v", err)
	}
	pm := m.GetPartitions()[0]
	if pm.GetBatches() != batches || pm.GetReceived() != batches*size || pm.GetQuarantined() != batches*5 {
		t.Fatalf("monitor = %v, want %d batches, %d records and %d quarantined, each once", pm, batches, batches*size, batches*5)
	}
	stats, err := client.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: "shop.orders"}})
	if err != nil || stats.GetTotal() != batches*5 {
		t.Fatalf("quarantine = %v (%v), want %d rows", stats.GetTotal(), err, batches*5)
	}
}

// A stream prepares each chunk while the one before it commits, yet
// commits them in order as if one after another: the chunk after the one
// whose commit contains the source is held whole, though it was validated
// before the containment, and so is every chunk after it.
func TestStreamChunkAfterContainmentIsHeld(t *testing.T) {
	t.Parallel()
	e := containingGate(t)
	ctx := context.Background()
	chunks := []streamChunk{{0, orders{first: 1, n: 200, amount: 85, uuids: 190}.ndjson()}}
	for i := 1; i <= 4; i++ {
		chunks = append(chunks, streamChunk{int64(i), orders{first: 200*i + 1, n: 200, amount: 85}.ndjson()})
	}
	h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: "2025-03-01", BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON, SummaryOnly: true}
	resp, err := sendStream(ctx, e, h, chunks)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	for i, cr := range resp.GetChunkResults() {
		s := cr.GetSummary()
		if i > 0 && (s.GetQuarantined() != 200 || s.GetAccepted() != 0) {
			t.Errorf("chunk %d after the containment: %v, want all 200 held", i, s)
		}
	}
	held := 0
	for _, v := range resp.GetRecords() {
		for _, re := range v.GetReasons() {
			if re.GetCode() == recordv1.ErrorCode_ERROR_CODE_SOURCE_CONTAINED {
				held++
				break
			}
		}
	}
	if held == 0 {
		t.Errorf("no verdict says the source is contained: %v", resp.GetRecords()[:1])
	}
}

// A chunk refused whole ends the stream: the chunks before it are
// stored, it and the ones after it are not, though the next one was
// already being prepared when it was refused.
func TestStreamStoresNothingAfterARefusedChunk(t *testing.T) {
	t.Parallel()
	e := newKnownEnv(t)
	ctx := context.Background()
	arr := func(o orders) []byte {
		lines := strings.Split(strings.TrimSpace(string(o.ndjson())), "\n")
		return []byte("[" + strings.Join(lines, ",") + "]")
	}
	chunks := []streamChunk{
		{0, arr(orders{first: 1, n: 50, amount: 85})},
		{1, arr(orders{first: 51, n: 50, amount: 85})},
		{2, []byte(`[{"order_id": "ORD-0000000101"`)}, // cannot be delimited: refused whole
		{3, arr(orders{first: 151, n: 50, amount: 85})},
		{4, arr(orders{first: 201, n: 50, amount: 85})},
	}
	h := &gatev1.IngestHeader{Subject: "shop.orders", Partition: "2025-03-01", BatchId: "load", Format: recordv1.Format_FORMAT_JSON, SummaryOnly: true}
	_, err := sendStream(ctx, e, h, chunks)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "chunk 3 (sequence 2)") {
		t.Fatalf("stream = %v, want InvalidArgument naming chunk 3 (sequence 2)", err)
	}
	if len(status.Convert(err).Details()) == 0 {
		t.Errorf("the stream's refusal lost the chunk's error details: %v", err)
	}
	for seq := range 5 {
		_, ok, err := e.srv.store.Batch(ctx, batchKey{"shop.orders", "2025-03-01", fmt.Sprintf("load#%d", seq)})
		if err != nil {
			t.Fatal(err)
		}
		if want := seq < 2; ok != want {
			t.Errorf("chunk of sequence %d stored = %v, want %v", seq, ok, want)
		}
	}
	if m := monitorOf(t, e, "shop.orders", "2025-03-01"); m.GetReceived() != 100 || m.GetBatches() != 2 {
		t.Errorf("monitor = %v, want the 100 records of the first two chunks", m)
	}
}
