package rpcerr_test

import (
	"context"
	"log/slog"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/server/servertest"
)

// rawCodec sends bytes as they are, so a test can send what no Go client
// would encode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// serveBoundary serves the health service behind a boundary, as
// platform/server does.
func serveBoundary(t *testing.T) *grpc.ClientConn {
	t.Helper()
	b := rpcerr.NewBoundary(slog.New(slog.DiscardHandler))
	gs := grpc.NewServer(grpc.ForceServerCodecV2(b.Codec()),
		grpc.UnaryInterceptor(b.UnaryInterceptor()), grpc.StreamInterceptor(b.StreamInterceptor()))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	return servertest.DialBufconn(t, servertest.ServeBufconn(t, gs))
}

// TestUndecodableRequestIsInvalidArgument: invalid UTF-8 in a string field
// (and a broken wire format) is the caller's mistake, named as such, not
// an Internal error of the server; unary and streaming calls alike.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	t.Parallel()
	conn := serveBoundary(t)
	// HealthCheckRequest{service: "shop\xff"}: field 1, bytes.
	badUTF8 := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("shop\xffx"))
	brokenWire := []byte{0x0a, 0x7f, 'x'} // a length of 127 with one byte after it
	good := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(""))
	cases := []struct {
		name  string
		req   []byte
		code  codes.Code
		field string
	}{
		{"invalid UTF-8", badUTF8, codes.InvalidArgument, "service"},
		{"broken wire format", brokenWire, codes.InvalidArgument, ""},
		{"valid request", good, codes.OK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/unary", func(t *testing.T) {
			req, resp := tc.req, []byte(nil)
			err := conn.Invoke(context.Background(), healthpb.Health_Check_FullMethodName, &req, &resp, grpc.ForceCodec(rawCodec{}))
			checkUndecodable(t, err, tc.code, tc.field)
		})
		t.Run(tc.name+"/stream", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stream, err := conn.NewStream(ctx, &healthpb.Health_ServiceDesc.Streams[0], healthpb.Health_Watch_FullMethodName, grpc.ForceCodec(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			req := tc.req
			if err := stream.SendMsg(&req); err != nil {
				t.Fatal(err)
			}
			if err := stream.CloseSend(); err != nil {
				t.Fatal(err)
			}
			var resp []byte
			checkUndecodable(t, stream.RecvMsg(&resp), tc.code, tc.field)
		})
	}
}

func checkUndecodable(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got %v %q, want %v", st.Code(), st.Message(), code)
	}
	if field == "" {
		return
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 && br.GetFieldViolations()[0].GetField() == field {
			return
		}
	}
	t.Errorf("details %v do not name the field %q (message %q)", st.Details(), field, st.Message())
}
