package gate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
)

// A chunk's error says which chunk ended the stream and keeps what the
// caller acts on: a status's code and details, and a cancellation (the
// caller went away) stays one instead of becoming an internal error.
func TestChunkErrorKeepsCodeDetailsAndCancellation(t *testing.T) {
	t.Parallel()
	refused := chunkError(3, 7, rpcerr.FailedPrecondition("ANSWER_NOT_PACKABLE", "the verdicts cannot be packed", map[string]string{"batch_id": "b"}))
	if st := status.Convert(refused); st.Code() != codes.FailedPrecondition || st.Message() != "chunk 3 (sequence 7): the verdicts cannot be packed" {
		t.Errorf("a refused chunk ends the stream with %v %q, want FailedPrecondition naming the chunk", st.Code(), st.Message())
	}
	if r := rpcerr.Reason(refused); r != "ANSWER_NOT_PACKABLE" {
		t.Errorf("the refusal's reason is %q, want its ErrorInfo kept (ANSWER_NOT_PACKABLE)", r)
	}

	gone := chunkError(4, 9, fmt.Errorf("read containment of shop.orders: %w", context.Canceled))
	if !errors.Is(gone, context.Canceled) || rpcerr.Code(gone) != codes.Canceled {
		t.Errorf("a chunk cut short by its caller leaving: %v (code %v), want it to stay a cancellation", gone, rpcerr.Code(gone))
	}
	if want := "chunk 4 (sequence 9): read containment of shop.orders: context canceled"; gone.Error() != want {
		t.Errorf("its message %q, want %q", gone.Error(), want)
	}

	broke := chunkError(1, 0, errors.New("disk full"))
	if cause := errors.Unwrap(broke); rpcerr.Code(broke) != codes.Unknown || cause == nil || cause.Error() != "disk full" {
		t.Errorf("another error: %v (code %v), want it Unknown with its cause kept (the boundary masks it as internal and logs it whole)", broke, rpcerr.Code(broke))
	}
}

// A peer call cut short because the batch's own call ended (its caller
// went away, or its deadline passed while the peer worked) ends the call
// the same way; a peer that cannot be reached, or gives up while the call
// is still on, is unavailable.
func TestPeerErrorBlamesThePeerOnlyForItsOwnFailures(t *testing.T) {
	t.Parallel()
	live := context.Background()
	gone, cancel := context.WithCancel(live)
	cancel()
	late, cancelLate := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancelLate()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{gone, status.Error(codes.Canceled, "context canceled"), codes.Canceled},
		{late, status.Error(codes.DeadlineExceeded, "context deadline exceeded"), codes.DeadlineExceeded},
		{late, status.Error(codes.Canceled, "context canceled"), codes.DeadlineExceeded},
		{live, status.Error(codes.DeadlineExceeded, "the adapter's own lookup timed out"), codes.Unavailable},
		{live, status.Error(codes.Canceled, "the adapter is stopping"), codes.Unavailable},
		{gone, status.Error(codes.Unavailable, "connection refused"), codes.Unavailable},
		{live, status.Error(codes.Unavailable, "connection refused"), codes.Unavailable},
		{live, status.Error(codes.InvalidArgument, "bad batch"), codes.InvalidArgument},
		{live, errors.New("the adapter answered 3 results for 4 records"), codes.Unavailable},
	} {
		if got := rpcerr.Code(peerError(c.ctx, "adapter", c.err)); got != c.want {
			t.Errorf("peerError(%v) with the call's context %v ends the call %v, want %v", c.err, c.ctx.Err(), got, c.want)
		}
	}
}

// A peer's refusal reaches the pipeline wrapped once: the gate's words
// naming the peer, and the peer's details (which field, which reason) as
// the peer sent them.
func TestPeerErrorKeepsThePeersDetails(t *testing.T) {
	t.Parallel()
	refusal := status.Convert(rpcerr.FailedPrecondition("MAPPING_MISSING", "no mapping of shop.orders v3 to orders.order v2",
		map[string]string{"subject": "shop.orders", "version": "3"},
		rpcerr.PreconditionViolation{Type: "MAPPING", Subject: "shop.orders", Description: "register a mapping for v3"})).Err()
	st := status.Convert(peerError(context.Background(), "adapter", refusal))
	if st.Code() != codes.FailedPrecondition || st.Message() != "adapter refused the batch: no mapping of shop.orders v3 to orders.order v2" {
		t.Fatalf("got %v %q, want FailedPrecondition naming the adapter with its message", st.Code(), st.Message())
	}
	if got := rpcerr.Reason(st.Err()); got != "MAPPING_MISSING" {
		t.Errorf("reason %q, want the adapter's MAPPING_MISSING", got)
	}
	var violations []string
	for _, d := range st.Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok {
			for _, v := range pf.GetViolations() {
				violations = append(violations, v.GetType()+" "+v.GetSubject())
			}
		}
	}
	if len(violations) != 1 || violations[0] != "MAPPING shop.orders" {
		t.Errorf("precondition violations %v, want the adapter's one of MAPPING shop.orders", violations)
	}
}
