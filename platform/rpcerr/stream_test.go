package rpcerr_test

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
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

// bidi is a bidirectional stream of strings: it receives in, then ends
// with end (io.EOF for a client that closed its side), and records what
// is sent; a send fails with sendErr.
type bidi struct {
	grpc.ServerStream
	in      []string
	end     error
	sent    []string
	sendErr error
}

func (b *bidi) Recv() (*string, error) {
	if len(b.in) == 0 {
		return nil, b.end
	}
	m := b.in[0]
	b.in = b.in[1:]
	return &m, nil
}

func (b *bidi) Send(m *string) error {
	if b.sendErr != nil {
		return b.sendErr
	}
	b.sent = append(b.sent, *m)
	return nil
}

// TestAnswerEach: every request gets its answer, in order, until the
// client closes its side; the first error of the stream or of an answer
// ends the stream with it.
func TestAnswerEach(t *testing.T) {
	t.Parallel()
	upper := func(req *string) (*string, error) {
		if *req == "bad" {
			return nil, errors.New("bad request")
		}
		resp := strings.ToUpper(*req)
		return &resp, nil
	}
	for _, tt := range []struct {
		name     string
		stream   *bidi
		wantErr  string // "" for none
		wantSent []string
	}{
		{"closed", &bidi{in: []string{"a", "b", "c"}, end: io.EOF}, "", []string{"A", "B", "C"}},
		{"empty", &bidi{end: io.EOF}, "", nil},
		{"broken", &bidi{in: []string{"a"}, end: errors.New("connection reset")}, "connection reset", []string{"A"}},
		{"bad answer", &bidi{in: []string{"a", "bad", "c"}, end: io.EOF}, "bad request", []string{"A"}},
		{"send fails", &bidi{in: []string{"a"}, end: io.EOF, sendErr: errors.New("send refused")}, "send refused", nil},
	} {
		got := ""
		if err := rpcerr.AnswerEach(tt.stream, upper); err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("%s: AnswerEach = %q, want %q", tt.name, got, tt.wantErr)
		}
		if !slices.Equal(tt.stream.sent, tt.wantSent) {
			t.Errorf("%s: sent %q, want %q", tt.name, tt.stream.sent, tt.wantSent)
		}
	}
}
