package rpcerr_test

import (
	"io"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
)

// TestRecvHeader: a client stream must open with its header; an empty
// stream and one that opens with something else are InvalidArgument on
// field "header", other receive errors pass through.
func TestRecvHeader(t *testing.T) {
	t.Parallel()
	type msg struct{ header *string }
	header := func(m *msg) *string { return m.header }
	want := "send the header first"
	recvs := func(m *msg, err error) func() (*msg, error) { return func() (*msg, error) { return m, err } }
	name := "orders"
	if h, err := rpcerr.RecvHeader(recvs(&msg{header: &name}, nil), header, "ingest", want); err != nil || h != &name {
		t.Errorf("a stream opening with its header: %v, %v; want the header", h, err)
	}
	broken := status.Error(codes.Canceled, "context canceled")
	if _, err := rpcerr.RecvHeader(recvs(nil, broken), header, "ingest", want); err != broken {
		t.Errorf("a broken stream: %v, want its error as it is", err)
	}
	for _, tt := range []struct {
		first *msg
		err   error
		msg   string
	}{
		{nil, io.EOF, "the ingest stream is empty"},
		{&msg{}, nil, "the ingest stream must open with a header"},
	} {
		h, err := rpcerr.RecvHeader(recvs(tt.first, tt.err), header, "ingest", want)
		st := status.Convert(err)
		var br *errdetails.BadRequest
		if d := st.Details(); len(d) == 1 {
			br, _ = d[0].(*errdetails.BadRequest)
		}
		if h != nil || st.Code() != codes.InvalidArgument || st.Message() != tt.msg || br == nil ||
			br.GetFieldViolations()[0].GetField() != "header" || br.GetFieldViolations()[0].GetDescription() != want {
			t.Errorf("RecvHeader = %v, %v (details %v); want InvalidArgument %q on field header saying %q", h, err, st.Details(), tt.msg, want)
		}
	}
}
