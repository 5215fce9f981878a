package rpcerr_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
)

func unary(t *testing.T, handler grpc.UnaryHandler) (string, error) {
	t.Helper()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, err := rpcerr.UnaryInterceptor(log)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/seam.test.v1.Test/Do"}, handler)
	return logs.String(), err
}

func stream(t *testing.T, handler grpc.StreamHandler) (string, error) {
	t.Helper()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	err := rpcerr.StreamInterceptor(log)(nil, fakeStream{}, &grpc.StreamServerInfo{FullMethod: "/x.v1.X/Watch"}, handler)
	return logs.String(), err
}

// wantStatus checks that err reached the client with code and that its
// message does not hold noLeak (when given).
func wantStatus(t *testing.T, err error, code codes.Code, noLeak string) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("code = %v (%v), want %v", got, err, code)
	}
	if noLeak != "" && strings.Contains(status.Convert(err).Message(), noLeak) {
		t.Errorf("client sees %q, which leaks %q", status.Convert(err).Message(), noLeak)
	}
}

// TestInterceptors runs each handler failure through the unary and the
// stream interceptor: both give the client the same code, mask the same
// internals, and log the cause with an error id.
func TestInterceptors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fail   func() error // what the handler returns, or where it panics
		code   codes.Code
		noLeak string // text that must not reach the client
		inLog  string // text the log must hold
	}{
		{"panic becomes Internal with the stack logged", func() error { panic("boom: secret state") },
			codes.Internal, "secret", "runtime/debug.Stack"},
		{"plain error is masked", func() error { return errors.New("pq: password=hunter2") },
			codes.Internal, "hunter2", "hunter2"},
		{"wrapped plain error is masked", func() error {
			return fmt.Errorf("commit chunk 3: %w", errors.New("pq: could not serialize access, host 10.0.0.7"))
		}, codes.Internal, "10.0.0.7", "10.0.0.7"},
		{"status passes through", func() error { return status.Error(codes.NotFound, "subject x not found") },
			codes.NotFound, "", ""},
		{"wrapped cancellation", func() error { return fmt.Errorf("read: %w", context.Canceled) },
			codes.Canceled, "", ""},
		{"wrapped deadline", func() error { return fmt.Errorf("query: %w", context.DeadlineExceeded) },
			codes.DeadlineExceeded, "", ""},
		{"Unknown status is masked", func() error { return status.Errorf(codes.Unknown, "dial tcp 10.0.0.7:5432: connection refused") },
			codes.Internal, "10.0.0.7", "10.0.0.7"},
		// A stream handler re-wrapping a plain error with status.Errorf and
		// status.Code(err) makes an Unknown status out of database text.
		{"Unknown made from a database error is masked", func() error {
			dbErr := errors.New(`failed to connect to host=db.internal user=seam database=seam: password authentication failed`)
			return status.Errorf(status.Code(dbErr), "chunk 2 (sequence 1): %s", dbErr)
		}, codes.Internal, "db.internal", "db.internal"},
		{"wrapped InvalidArgument keeps its code", func() error {
			return fmt.Errorf("chunk 2: %w", rpcerr.InvalidArgument("bad", rpcerr.FieldViolation{Field: "chunk.sequence", Description: "repeated"}))
		}, codes.InvalidArgument, "", ""},
	}
	for _, tc := range cases {
		for kind, call := range map[string]func(*testing.T) (string, error){
			"unary": func(t *testing.T) (string, error) {
				return unary(t, func(context.Context, any) (any, error) { return nil, tc.fail() })
			},
			"stream": func(t *testing.T) (string, error) {
				return stream(t, func(any, grpc.ServerStream) error { return tc.fail() })
			},
		} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				logs, err := call(t)
				wantStatus(t, err, tc.code, tc.noLeak)
				if tc.inLog != "" && !strings.Contains(logs, tc.inLog) {
					t.Errorf("log lacks %q:\n%s", tc.inLog, logs)
				}
				if tc.code == codes.Internal && !strings.Contains(logs, "error_id=") {
					t.Errorf("log lacks the error id:\n%s", logs)
				}
			})
		}
	}
}

// TestInternalCarriesTheLoggedErrorID: the id a client reads is the one the
// log holds beside the details, so an operator finds the cause of a
// reported failure.
func TestInternalCarriesTheLoggedErrorID(t *testing.T) {
	t.Parallel()
	logs, err := unary(t, func(context.Context, any) (any, error) {
		return nil, errors.New("ERROR: relation \"gate_batches\" does not exist (SQLSTATE 42P01)")
	})
	st := status.Convert(err)
	id := ""
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == rpcerr.ReasonInternal {
			id = info.GetMetadata()["error_id"]
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
		t.Fatalf("error id in the details = %q (status %v), want 16 hex digits", id, st.Proto())
	}
	if !strings.Contains(st.Message(), id) || strings.Contains(st.Message(), "gate_batches") {
		t.Errorf("message %q: want the error id %s and no database text", st.Message(), id)
	}
	if !strings.Contains(logs, "error_id="+id) || !strings.Contains(logs, "gate_batches") {
		t.Errorf("log lacks error_id=%s beside the cause:\n%s", id, logs)
	}
}

type fakeStream struct{ grpc.ServerStream }

func (fakeStream) Context() context.Context { return context.Background() }

// TestDetailsSurviveRewrapping: a handler adding context to a peer's or a
// domain error with %w keeps the code and every detail clients branch on.
func TestDetailsSurviveRewrapping(t *testing.T) {
	t.Parallel()
	domain := rpcerr.FailedPrecondition("BATCH_BLOCKED", "check customer_present failed 4 of 1000 records", map[string]string{"check": "customer_present"},
		rpcerr.PreconditionViolation{Type: "BLOCK", Subject: "customer_present", Description: "4 of 1000"})
	fromPeer := status.Convert(domain).Err() // as a client receives it
	for name, inner := range map[string]error{"domain error": domain, "peer status": fromPeer} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := unary(t, func(context.Context, any) (any, error) {
				return nil, fmt.Errorf("chunk 3 (sequence 2): %w", inner)
			})
			st := status.Convert(err)
			if st.Code() != codes.FailedPrecondition || rpcerr.Reason(err) != "BATCH_BLOCKED" || len(st.Details()) != 2 {
				t.Fatalf("got %v %q with %d details (reason %q), want FailedPrecondition BATCH_BLOCKED with 2 details",
					st.Code(), st.Message(), len(st.Details()), rpcerr.Reason(err))
			}
			if !strings.HasPrefix(st.Message(), "chunk 3 (sequence 2): ") {
				t.Errorf("message %q lost the context added to it", st.Message())
			}
		})
	}
}

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
	if got := status.Code(rpcerr.PermissionDenied("NOT_CONSUMER_OWNER", "team-ml owns it")); got != codes.PermissionDenied {
		t.Errorf("PermissionDenied code = %v", got)
	}
}

// TestUnavailableNamesTheRightPeer: the caller learns which service is down
// and never the addresses or dial errors of the transport.
func TestUnavailableNamesTheRightPeer(t *testing.T) {
	t.Parallel()
	transport := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 10.1.2.3:7072: connect: connection refused"`)
	hung := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	// What the adapter answers when idmap is down, as the gate receives it.
	adapterSaysIdmap := status.Convert(rpcerr.Unavailable("idmap", transport)).Err()
	cases := []struct {
		name        string
		err         error
		want        string // the dependency in the details
		contains    []string
		notContains []string
	}{
		{"refused connection", rpcerr.Unavailable("registry", transport), "registry",
			[]string{"registry is unavailable", "could not be reached"}, []string{"10.1.2.3", "7072", "dial"}},
		{"hung peer", rpcerr.Unavailable("adapter", hung), "adapter",
			[]string{"adapter is unavailable", "did not answer within"}, nil},
		{"context around the status", rpcerr.Unavailable("registry", fmt.Errorf("no contract of shop.orders is known locally: %w", transport)), "registry",
			[]string{"no contract of shop.orders is known locally: it could not be reached"}, []string{"10.1.2.3"}},
		{"a peer reporting its own dependency", rpcerr.Unavailable("adapter", adapterSaysIdmap), "idmap",
			[]string{"idmap is unavailable", "reported by adapter"}, []string{"adapter is unavailable", "10.1.2.3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(tc.err)
			if st.Code() != codes.Unavailable || rpcerr.Reason(tc.err) != rpcerr.ReasonDependencyUnavailable {
				t.Fatalf("got %v %q, want Unavailable with reason %s", st.Code(), st.Message(), rpcerr.ReasonDependencyUnavailable)
			}
			var dep string
			for _, d := range st.Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok {
					dep = info.GetMetadata()["dependency"]
				}
			}
			if dep != tc.want {
				t.Errorf("dependency %q, want %q", dep, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(st.Message(), s) {
					t.Errorf("message %q lacks %q", st.Message(), s)
				}
			}
			for _, s := range tc.notContains {
				if strings.Contains(st.Message(), s) {
					t.Errorf("message %q contains %q", st.Message(), s)
				}
			}
			if !errors.Is(tc.err, errors.Unwrap(tc.err)) || errors.Unwrap(tc.err) == nil {
				t.Errorf("the cause is not kept for the log")
			}
		})
	}
}

// Code names the code a call ends with for every kind of error a handler
// returns, wrapped or not.
func TestCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{rpcerr.NotFound("subject", "x.y", ""), codes.NotFound},
		{fmt.Errorf("chunk 3: %w", rpcerr.NotFound("subject", "x.y", "")), codes.NotFound},
		{fmt.Errorf("read containment: %w", context.Canceled), codes.Canceled},
		{fmt.Errorf("commit: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{status.Error(codes.Canceled, "gone"), codes.Canceled},
		{errors.New("disk full"), codes.Unknown},
		{status.Error(codes.Unknown, "what"), codes.Unknown},
	} {
		if got := rpcerr.Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A peer's refusal relayed by Relay reaches the caller with this server's
// code and message and the peer's details, through the boundary and a
// further %w wrapping.
func TestRelayKeepsThePeersDetails(t *testing.T) {
	t.Parallel()
	// What the gate receives from the adapter: a status off the wire.
	peer := status.Convert(rpcerr.InvalidArgument("amount is not a number",
		rpcerr.FieldViolation{Field: "records[3].amount", Description: "not a number"})).Err()
	relayed := rpcerr.Relay(codes.InvalidArgument, "adapter refused the batch: amount is not a number", peer)
	logs, err := unary(t, func(context.Context, any) (any, error) {
		return nil, fmt.Errorf("adapting batch b1: %w", relayed)
	})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "adapter refused the batch: amount is not a number") {
		t.Fatalf("got %v %q, want InvalidArgument saying the adapter refused the batch", st.Code(), st.Message())
	}
	var field string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) == 1 {
			field = br.GetFieldViolations()[0].GetField()
		}
	}
	if field != "records[3].amount" {
		t.Errorf("details %v, want the peer's field violation of records[3].amount", st.Details())
	}
	if logs != "" {
		t.Errorf("a relayed refusal was logged: %s", logs)
	}
	// A peer's answer without details (a transport's) relays as code and
	// message alone.
	if st := status.Convert(rpcerr.Relay(codes.DeadlineExceeded, "the call's deadline passed", context.DeadlineExceeded)); st.Code() != codes.DeadlineExceeded || len(st.Details()) != 0 {
		t.Errorf("relay of a plain error: %v %v, want DeadlineExceeded without details", st.Code(), st.Details())
	}
}

// WithDetails puts the reason first and the service's own details after.
func TestWithDetails(t *testing.T) {
	t.Parallel()
	extra := &errdetails.ResourceInfo{ResourceType: "batch", ResourceName: "b1"}
	st := status.Convert(rpcerr.WithDetails(codes.FailedPrecondition, "BATCH_BLOCKED", "batch b1 is BLOCKED", map[string]string{"batch_id": "b1"}, extra))
	if st.Code() != codes.FailedPrecondition || rpcerr.Reason(st.Err()) != "BATCH_BLOCKED" || len(st.Details()) != 2 {
		t.Fatalf("got %v reason %q details %v, want FailedPrecondition, BATCH_BLOCKED and two details", st.Code(), rpcerr.Reason(st.Err()), st.Details())
	}
	if ri, ok := st.Details()[1].(*errdetails.ResourceInfo); !ok || ri.GetResourceName() != "b1" {
		t.Errorf("second detail %v, want the ResourceInfo of b1", st.Details()[1])
	}
}
