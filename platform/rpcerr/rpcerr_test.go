package rpcerr_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
)

func unary(t *testing.T, handler grpc.UnaryHandler) (error, string) {
	t.Helper()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, err := rpcerr.UnaryInterceptor(log)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/seam.test.v1.Test/Do"}, handler)
	return err, logs.String()
}

func TestUnaryInterceptor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		handler grpc.UnaryHandler
		code    codes.Code
		noLeak  string // text that must not reach the client
		inLog   string // text the log must hold
	}{
		{"panic becomes Internal with the stack logged", func(context.Context, any) (any, error) { panic("boom: secret state") },
			codes.Internal, "secret", "runtime/debug.Stack"},
		{"plain error is masked", func(context.Context, any) (any, error) { return nil, errors.New("pq: password=hunter2") },
			codes.Internal, "hunter2", "hunter2"},
		{"status passes through", func(context.Context, any) (any, error) {
			return nil, status.Error(codes.NotFound, "subject x not found")
		},
			codes.NotFound, "", ""},
		{"wrapped cancellation", func(context.Context, any) (any, error) { return nil, fmt.Errorf("read: %w", context.Canceled) },
			codes.Canceled, "", ""},
		{"wrapped deadline", func(context.Context, any) (any, error) { return nil, fmt.Errorf("query: %w", context.DeadlineExceeded) },
			codes.DeadlineExceeded, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err, logs := unary(t, tc.handler)
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
			if tc.noLeak != "" && strings.Contains(status.Convert(err).Message(), tc.noLeak) {
				t.Errorf("client sees %q, which leaks %q", status.Convert(err).Message(), tc.noLeak)
			}
			if tc.inLog != "" && !strings.Contains(logs, tc.inLog) {
				t.Errorf("log lacks %q:\n%s", tc.inLog, logs)
			}
		})
	}
}

func TestStreamInterceptorRecoversPanics(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	err := rpcerr.StreamInterceptor(slog.New(slog.NewTextHandler(&logs, nil)))(nil, fakeStream{}, &grpc.StreamServerInfo{FullMethod: "/x.v1.X/Watch"},
		func(any, grpc.ServerStream) error { panic("stream boom") })
	if status.Code(err) != codes.Internal || !strings.Contains(logs.String(), "stream boom") {
		t.Errorf("code %v, log %q; want Internal and the panic logged", status.Code(err), logs.String())
	}
}

type fakeStream struct{ grpc.ServerStream }

func (fakeStream) Context() context.Context { return context.Background() }

func TestDetails(t *testing.T) {
	t.Parallel()
	err := rpcerr.InvalidArgument("bad contract", rpcerr.FieldViolation{Field: "fields[2].type", Description: "unknown type"})
	br, ok := status.Convert(err).Details()[0].(*errdetails.BadRequest)
	if !ok || br.GetFieldViolations()[0].GetField() != "fields[2].type" {
		t.Errorf("InvalidArgument details = %v, want a BadRequest naming fields[2].type", status.Convert(err).Details())
	}
	err = rpcerr.FailedPrecondition("BREAKING_CHANGE_NEEDS_NOTICE", "owes 14d", map[string]string{"subject": "shop.orders"},
		rpcerr.PreconditionViolation{Type: "FIELD_TYPE_CHANGED", Subject: "fields.customer_id.type", Description: "INT64 → UUID"})
	if got := rpcerr.Reason(err); got != "BREAKING_CHANGE_NEEDS_NOTICE" || status.Code(err) != codes.FailedPrecondition {
		t.Errorf("FailedPrecondition reason %q code %v", got, status.Code(err))
	}
	if got := status.Code(rpcerr.Unavailable("idmap", errors.New("dial tcp: refused"))); got != codes.Unavailable {
		t.Errorf("Unavailable code = %v", got)
	}
}
