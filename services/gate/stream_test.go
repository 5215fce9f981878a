package gate

import (
	"context"
	"errors"
	"fmt"
	"testing"

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

// A peer call cut short because the batch's own caller went away is a
// cancellation, not the peer being unavailable; a peer that cannot be
// reached or does not answer in time is.
func TestPeerErrorBlamesThePeerOnlyForItsOwnFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want codes.Code
	}{
		{status.Error(codes.Canceled, "context canceled"), codes.Canceled},
		{status.Error(codes.Unavailable, "connection refused"), codes.Unavailable},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), codes.Unavailable},
		{status.Error(codes.InvalidArgument, "bad batch"), codes.InvalidArgument},
		{errors.New("the adapter answered 3 results for 4 records"), codes.Unavailable},
	} {
		if got := rpcerr.Code(peerError("adapter", c.err)); got != c.want {
			t.Errorf("peerError(%v) ends the call %v, want %v", c.err, got, c.want)
		}
	}
}
