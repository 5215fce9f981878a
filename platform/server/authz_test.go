package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/server/servertest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// TestRESTAuthorizesBeforeReadingTheBody: a caller whose role the route's
// method does not allow (a viewer ingesting), or whose subject list does
// not cover the path's subject (a b.* pipeline ingesting into a.orders),
// is answered 403 from the headers: the server reads (and allocates) next
// to nothing of the 200 MB it offers, declared or chunked.
func TestRESTAuthorizesBeforeReadingTheBody(t *testing.T) {
	n := start(t, server.Config{}, false)
	const offered = 200 << 20
	cases := []struct {
		name, token, subject, framing string
	}{
		{"viewer, chunked", n.tokens["viewer"], "shop.orders", "Transfer-Encoding: chunked\r\n"},
		{"viewer, declared length", n.tokens["viewer"], "shop.orders", fmt.Sprintf("Content-Length: %d\r\n", offered)},
		{"b.* pipeline into a.orders, chunked", n.tokens["b-pipeline"], "a.orders", "Transfer-Encoding: chunked\r\n"},
		{"b.* pipeline into a.orders, gzip", n.tokens["b-pipeline"], "a.orders", "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"},
	}
	warmUp(t, n)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST /v1/subjects/" + tc.subject + ":ingest HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tc.token + "\r\n" + tc.framing + "\r\n"
			body := io.Reader(io.LimitReader(endless(), offered))
			if strings.Contains(tc.framing, "chunked") {
				body = servertest.Chunked(body)
			}
			// The client framing the chunks runs in this process too (and
			// allocates more under -race), hence 32 MB; reading the 200 MB
			// would be far over.
			expectRefusedUnread(t, n, head, body, http.StatusForbidden, 32<<20)
		})
	}
	// The same b.* pipeline token ingests into its own subject.
	small := `{"partition":"p","batch_id":"b","batch":{"objects":{"records":[{"a":1}]}}}`
	head := fmt.Sprintf("POST /v1/subjects/b.orders:ingest HTTP/1.1\r\nHost: seam\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", n.tokens["b-pipeline"], len(small))
	if code, _ := rawRequest(t, n.http, head, strings.NewReader(small)); code != http.StatusOK {
		t.Errorf("b.* pipeline into b.orders: status %d, want 200", code)
	}
}

// TestRESTGzipBombs: 30 gzip bombs in parallel (32 KB that inflate to
// 32 MiB each) are answered 401 without a token in under a second each,
// and the server's heap grows by less than 64 MB; with a token, a bomb
// that inflates past the limit is 413, counted after inflation.
func TestRESTGzipBombs(t *testing.T) {
	const limit = 4 << 20
	n := start(t, server.Config{MaxMessageBytes: limit}, false)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(bytes.Repeat([]byte(" "), 32<<20))
	_ = zw.Close()
	bomb := buf.Bytes()
	post := func(token string) (int, time.Duration) {
		req, err := http.NewRequest(http.MethodPost, "http://"+n.http+"/v1/subjects/shop.orders:ingest", bytes.NewReader(bomb))
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		req.Header.Set("Content-Encoding", "gzip")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		began := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(began)
	}
	var before, peak runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			code, took := post("")
			if code != http.StatusUnauthorized || took > time.Second {
				t.Errorf("unauthenticated gzip bomb: %d after %s, want 401 in under 1s", code, took)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&peak)
	if grew := int64(peak.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Errorf("the heap grew by %d MB for 30 refused bombs, want under 64 MB", grew>>20)
	}
	if code, _ := post(n.token); code != http.StatusRequestEntityTooLarge {
		t.Errorf("authenticated gzip bomb over the limit: %d, want 413", code)
	}
	if got := n.gate.ingests.Load(); got != 0 {
		t.Errorf("the handler ran %d times for bombs", got)
	}
}

// TestGRPCSubjectScope: over gRPC, a token limited to b.* may act on b.
// subjects only, whatever its role: a pipeline cannot ingest into
// another subject, an operator cannot replay one, and a watch must name
// a subject in scope; a role the method does not allow is refused before
// the handler runs.
func TestGRPCSubjectScope(t *testing.T) {
	n := start(t, server.Config{}, false)
	conn := dial(t, n.grpc)
	gate := gatev1.NewGateServiceClient(conn)
	as := func(name string) context.Context {
		tok := n.tokens[name]
		if name == "pipeline" {
			tok = n.token
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		return grpcAuth(ctx, tok)
	}
	replay := func(ctx context.Context, subject string) error {
		s, err := gate.Replay(ctx, &gatev1.ReplayRequest{Window: &gatev1.ReplayWindow{Subject: subject}})
		if err != nil {
			return err
		}
		for {
			if _, err := s.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	watch := func(ctx context.Context, subject string) error {
		s, err := gate.WatchAlerts(ctx, &gatev1.WatchAlertsRequest{Subject: subject})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	ingest := func(ctx context.Context, subject string) error {
		_, err := gate.Ingest(ctx, &gatev1.IngestRequest{Subject: subject})
		return err
	}
	cases := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"b.* pipeline ingests into b.orders", func() error { return ingest(as("b-pipeline"), "b.orders") }, codes.OK},
		{"b.* pipeline ingests into a.orders", func() error { return ingest(as("b-pipeline"), "a.orders") }, codes.PermissionDenied},
		{"b.* pipeline ingests naming no subject", func() error { return ingest(as("b-pipeline"), "") }, codes.PermissionDenied},
		{"unlimited pipeline ingests into a.orders", func() error { return ingest(as("pipeline"), "a.orders") }, codes.OK},
		{"viewer ingests", func() error { return ingest(as("viewer"), "b.orders") }, codes.PermissionDenied},
		{"b.* operator replays b.orders", func() error { return replay(as("b-operator"), "b.orders") }, codes.OK},
		{"b.* operator replays a.orders", func() error { return replay(as("b-operator"), "a.orders") }, codes.PermissionDenied},
		{"b.* pipeline watches a.orders", func() error { return watch(as("b-pipeline"), "a.orders") }, codes.PermissionDenied},
		{"b.* pipeline watches b.orders", func() error { return watch(as("b-pipeline"), "b.orders") }, codes.OK},
	}
	for _, tc := range cases {
		before := n.gate.ingests.Load()
		err := tc.call()
		if got := status.Code(err); got != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
		if tc.want != codes.OK && n.gate.ingests.Load() != before {
			t.Errorf("%s: the handler ran for a refused call", tc.name)
		}
	}
}

// TestStreamEndsWhenTokenRevokedOrExpired: an open watch, over gRPC and
// over REST, ends Unauthenticated within 5 s of its token being revoked
// (the tokens file rewritten without it) or expiring.
func TestStreamEndsWhenTokenRevokedOrExpired(t *testing.T) {
	n := start(t, server.Config{}, false)
	conn := dial(t, n.grpc)
	gate := gatev1.NewGateServiceClient(conn)
	var revokedAt atomic.Value

	// A token that expires in 1.5 s.
	expiring, entry, err := auth.NewToken("short-lived", []auth.Role{auth.RoleViewer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(1500 * time.Millisecond)
	entry.Expires = &exp
	if err := auth.WriteTokensFile(n.tokensFile, auth.TokensFile{Tokens: append(n.entries, entry)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(auth.ReloadInterval + 200*time.Millisecond)

	type result struct {
		err  error
		took time.Duration
	}
	watchGRPC := func(token string) <-chan result {
		out := make(chan result, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := gate.WatchAlerts(grpcAuth(ctx, token), &gatev1.WatchAlertsRequest{Subject: "shop.orders"})
		if err != nil {
			cancel()
			out <- result{err: err}
			return out
		}
		if _, err := s.Recv(); err != nil {
			cancel()
			out <- result{err: fmt.Errorf("first message: %w", err)}
			return out
		}
		go func() {
			defer cancel()
			for {
				if _, err := s.Recv(); err != nil {
					out <- result{err: err, took: time.Since(revokedAt.Load().(time.Time))}
					return
				}
			}
		}()
		return out
	}
	watchREST := func(token string) <-chan result {
		out := make(chan result, 1)
		req, err := http.NewRequest(http.MethodGet, "http://"+n.http+"/v1/alerts:watch?subject=shop.orders", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- result{err: err}
			return out
		}
		go func() {
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var err error
			if i := bytes.LastIndex(b, []byte(`"error"`)); i >= 0 && bytes.Contains(b[i:], []byte(`"code":16`)) {
				err = status.Error(codes.Unauthenticated, string(b[i:]))
			} else {
				err = fmt.Errorf("stream ended with status %d and no Unauthenticated error: %.300s", resp.StatusCode, b[max(0, len(b)-300):])
			}
			out <- result{err: err, took: time.Since(revokedAt.Load().(time.Time))}
		}()
		return out
	}

	revokedAt.Store(time.Now())
	viewerGRPC, viewerREST := watchGRPC(n.tokens["viewer"]), watchREST(n.tokens["viewer"])
	expiringGRPC := watchGRPC(expiring)
	time.Sleep(300 * time.Millisecond)
	// Revoke the viewer: the file without its entry (and without the
	// expiring one, whose expiry ends its stream anyway).
	var kept []auth.TokenEntry
	for _, e := range n.entries {
		if e.Name != "viewer" {
			kept = append(kept, e)
		}
	}
	kept = append(kept, entry)
	if err := auth.WriteTokensFile(n.tokensFile, auth.TokensFile{Tokens: kept}); err != nil {
		t.Fatal(err)
	}
	revokedAt.Store(time.Now())
	for name, c := range map[string]<-chan result{"revoked, gRPC": viewerGRPC, "revoked, REST": viewerREST, "expired, gRPC": expiringGRPC} {
		select {
		case r := <-c:
			if status.Code(r.err) != codes.Unauthenticated || r.took > 5*time.Second {
				t.Errorf("%s: the watch ended with %v after %s, want Unauthenticated within 5s", name, r.err, r.took)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the watch is still open 10s after its token went", name)
		}
	}
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func grpcAuth(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}
