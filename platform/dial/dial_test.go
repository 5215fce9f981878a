package dial_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/rpcerr"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRegistry fails the first failures calls of GetContract and of
// RegisterContract with Unavailable, counting every call, and streams
// WatchEvents slowly.
type fakeRegistry struct {
	registryv1.UnimplementedRegistryServiceServer
	failures          int64
	gets, registers   atomic.Int64
	watchEvery        time.Duration
	watchMessageCount int
}

func (f *fakeRegistry) GetContract(context.Context, *registryv1.GetContractRequest) (*registryv1.GetContractResponse, error) {
	if f.gets.Add(1) <= f.failures {
		return nil, status.Error(codes.Unavailable, "restarting")
	}
	return &registryv1.GetContractResponse{}, nil
}

func (f *fakeRegistry) RegisterContract(context.Context, *registryv1.RegisterContractRequest) (*registryv1.RegisterContractResponse, error) {
	if f.registers.Add(1) <= f.failures {
		return nil, status.Error(codes.Unavailable, "restarting")
	}
	return &registryv1.RegisterContractResponse{}, nil
}

func (f *fakeRegistry) WatchEvents(_ *registryv1.WatchEventsRequest, stream grpc.ServerStreamingServer[registryv1.WatchEventsResponse]) error {
	for i := range f.watchMessageCount {
		time.Sleep(f.watchEvery)
		if err := stream.Send(&registryv1.WatchEventsResponse{Event: &registryv1.Event{Sequence: int64(i + 1)}}); err != nil {
			return err
		}
	}
	return nil
}

// serve serves impl on lis until the test ends.
func serve(t *testing.T, lis net.Listener, impl registryv1.RegistryServiceServer) *grpc.Server {
	t.Helper()
	gs := grpc.NewServer()
	registryv1.RegisterRegistryServiceServer(gs, impl)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return gs
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

func conn(t *testing.T, addr string, o dial.Options) registryv1.RegistryServiceClient {
	t.Helper()
	c, err := dial.Conn(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return registryv1.NewRegistryServiceClient(c)
}

// TestReadsAreRetriedWritesAreNot: a call the protos mark as changing
// nothing is retried while the peer answers Unavailable; a write is not,
// since it may have been applied.
func TestReadsAreRetriedWritesAreNot(t *testing.T) {
	t.Parallel()
	fake := &fakeRegistry{failures: dial.RetryAttempts - 1}
	lis := listen(t, "127.0.0.1:0")
	serve(t, lis, fake)
	c := conn(t, lis.Addr().String(), dial.Options{})
	ctx := context.Background()
	if _, err := c.GetContract(ctx, &registryv1.GetContractRequest{Subject: "pay.settlements"}); err != nil {
		t.Errorf("GetContract after %d Unavailable answers: %v, want it retried to success", fake.failures, err)
	}
	if got := fake.gets.Load(); got != dial.RetryAttempts {
		t.Errorf("GetContract reached the peer %d times, want %d", got, dial.RetryAttempts)
	}
	_, err := c.RegisterContract(ctx, &registryv1.RegisterContractRequest{})
	if status.Code(err) != codes.Unavailable || fake.registers.Load() != 1 {
		t.Errorf("RegisterContract: %v after %d calls, want Unavailable after exactly 1 (a write is never retried here)", err, fake.registers.Load())
	}
}

// freezer forwards TCP connections to a backend until it is frozen; then
// it stops forwarding in both directions but keeps every connection open,
// and accepts new ones without a word: what a caller sees of a peer that
// is SIGSTOPped.
type freezer struct {
	lis     net.Listener
	backend string
	mu      sync.Mutex
	frozen  bool
	thaw    chan struct{}
	conns   []net.Conn
}

func newFreezer(t *testing.T, backend string) *freezer {
	f := &freezer{lis: listen(t, "127.0.0.1:0"), backend: backend, thaw: make(chan struct{})}
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *freezer) accept() {
	for {
		c, err := f.lis.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", f.backend)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, b)
		f.mu.Unlock()
		go f.pipe(c, b)
		go f.pipe(b, c)
	}
}

func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		frozen, thaw := f.frozen, f.thaw
		f.mu.Unlock()
		if frozen {
			<-thaw
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen, f.thaw = true, make(chan struct{})
}

func (f *freezer) unfreeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = false
	close(f.thaw)
}

func (f *freezer) close() {
	f.lis.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thaw)
	}
	for _, c := range f.conns {
		c.Close()
	}
}

// TestHungPeerFailsWithinTheDeadline: a call to a peer that stopped
// answering ends at the call deadline, though its caller set none, and
// calls succeed again once the peer answers.
func TestHungPeerFailsWithinTheDeadline(t *testing.T) {
	t.Parallel()
	backend := listen(t, "127.0.0.1:0")
	serve(t, backend, &fakeRegistry{})
	proxy := newFreezer(t, backend.Addr().String())
	const timeout = 300 * time.Millisecond
	c := conn(t, proxy.lis.Addr().String(), dial.Options{CallTimeout: timeout})
	// The test's own bound, far above the call deadline: without one the
	// call would hang here for as long as the peer does.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	warmUp(t, c)
	proxy.freeze()
	start := time.Now()
	_, err := c.GetContract(ctx, &registryv1.GetContractRequest{})
	took := time.Since(start)
	if status.Code(err) != codes.DeadlineExceeded || took > timeout+time.Second {
		t.Errorf("GetContract on a hung peer: %v after %s, want DeadlineExceeded within the %s call deadline", err, took.Round(time.Millisecond), timeout)
	}
	proxy.unfreeze()
	if _, err := c.GetContract(ctx, &registryv1.GetContractRequest{}); err != nil {
		t.Errorf("GetContract once the peer answers again: %v", err)
	}
}

// warmUp calls until a call succeeds: on a loaded machine the first
// connection may take longer than a short call deadline.
func warmUp(t *testing.T, c registryv1.RegistryServiceClient) {
	t.Helper()
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err = c.GetContract(context.Background(), &registryv1.GetContractRequest{}); err == nil {
			return
		}
	}
	t.Fatalf("GetContract before the peer hangs: %v", err)
}

// TestReconnectBackoffIsCapped: while a peer is down, the connection tries
// again at least every ReconnectBackoffMax (plus jitter), so a caller is
// back within about a second of the peer's return; gRPC's default backoff
// grows to two minutes, and after a 90 s outage callers stayed Unavailable
// for 20 s.
func TestReconnectBackoffIsCapped(t *testing.T) {
	t.Parallel()
	// A peer that is down: connections are accepted and closed at once.
	lis := listen(t, "127.0.0.1:0")
	var (
		mu       sync.Mutex
		attempts []time.Time
	)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			attempts = append(attempts, time.Now())
			mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { lis.Close() })
	c := conn(t, lis.Addr().String(), dial.Options{CallTimeout: 100 * time.Millisecond})
	// Callers keep calling, as pipelines retrying ingest do.
	end := time.Now().Add(6 * time.Second)
	for time.Now().Before(end) {
		_, _ = c.GetContract(context.Background(), &registryv1.GetContractRequest{})
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) < 3 {
		t.Fatalf("%d connection attempts in 6s, want several", len(attempts))
	}
	var longest time.Duration
	for i := 1; i < len(attempts); i++ {
		longest = max(longest, attempts[i].Sub(attempts[i-1]))
	}
	if limit := dial.ReconnectBackoffMax*6/5 + 300*time.Millisecond; longest > limit {
		t.Errorf("longest wait between reconnection attempts %s over %d attempts, want at most %s", longest.Round(time.Millisecond), len(attempts), limit)
	}
}

// TestStreamsHaveNoDeadline: a watch outlives the unary call deadline.
func TestStreamsHaveNoDeadline(t *testing.T) {
	t.Parallel()
	lis := listen(t, "127.0.0.1:0")
	serve(t, lis, &fakeRegistry{watchEvery: 100 * time.Millisecond, watchMessageCount: 5})
	c := conn(t, lis.Addr().String(), dial.Options{CallTimeout: 150 * time.Millisecond})
	stream, err := c.WatchEvents(context.Background(), &registryv1.WatchEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("watch ended after %d events: %v, want all 5 over 500ms despite the 150ms unary deadline", n, err)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d events, want 5", n)
	}
}

// relay is a registry whose GetContract asks another registry, as the
// adapter asks idmap on the gate's behalf, and reports that one as the
// dependency when it cannot answer.
type relay struct {
	registryv1.UnimplementedRegistryServiceServer
	next registryv1.RegistryServiceClient
}

func (r *relay) GetContract(ctx context.Context, req *registryv1.GetContractRequest) (*registryv1.GetContractResponse, error) {
	resp, err := r.next.GetContract(ctx, req)
	if err != nil {
		return nil, rpcerr.Unavailable("next-hop", err)
	}
	return resp, nil
}

// TestHungPeerIsReportedByItsNeighbour: with a chain caller → middle →
// hung peer and the same call deadline everywhere, the middle service's
// call ends first (the reserve), so the caller hears the middle's answer
// about the hung peer instead of timing out itself and blaming the middle.
func TestHungPeerIsReportedByItsNeighbour(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	backend := listen(t, "127.0.0.1:0")
	serve(t, backend, &fakeRegistry{})
	hung := newFreezer(t, backend.Addr().String())
	middle := listen(t, "127.0.0.1:0")
	b := rpcerr.NewBoundary(slog.New(slog.DiscardHandler))
	gs := grpc.NewServer(grpc.UnaryInterceptor(b.UnaryInterceptor()))
	registryv1.RegisterRegistryServiceServer(gs, &relay{next: conn(t, hung.lis.Addr().String(), dial.Options{CallTimeout: timeout})})
	go func() { _ = gs.Serve(middle) }()
	t.Cleanup(gs.Stop)
	c := conn(t, middle.Addr().String(), dial.Options{CallTimeout: timeout})
	warmUp(t, c)
	hung.freeze()
	_, err := c.GetContract(context.Background(), &registryv1.GetContractRequest{})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.HasPrefix(st.Message(), "next-hop is unavailable") {
		t.Errorf("GetContract through a chain ending in a hung peer: %v, want the middle's Unavailable naming next-hop", err)
	}
	hung.unfreeze()
}
