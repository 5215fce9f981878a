package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/auth/authtest"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/telemetry"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/adapter"
	"github.com/seamdata/seam/services/gate"
	"github.com/seamdata/seam/services/idmap"
	"github.com/seamdata/seam/services/registry"
	"github.com/seamdata/seam/sources/postgres"
	"github.com/seamdata/seam/sources/postgres/postgrestest"
)

// pgServer is the test PostgreSQL (wal_level=logical) of this package.
var pgServer postgrestest.Shared

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec)) // a source process of TestKill9MidSnapshotKeepsCountsExact
	}
	os.Exit(postgrestest.Main(m, &pgServer))
}

// seam is the four Seam services in this process, on a loopback port, as
// `seam up` runs them: they call each other over gRPC.
type seam struct {
	addr     string
	admin    string
	gate     gatev1.GateServiceClient
	registry registryv1.RegistryServiceClient
}

// startSeam runs registry, idmap, adapter and gate on SQLite stores in a
// temporary directory until the test ends.
func startSeam(t testing.TB) *seam {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	tokens, secrets := authtest.Tokens(t, auth.Principal{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}},
		auth.Principal{Name: "seam-services", Roles: []auth.Role{auth.RoleService}})
	admin, svcToken := secrets["admin"], secrets["seam-services"]
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "seam-test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	peer, err := dial.Conn(addr, dial.Options{Token: svcToken})
	if err != nil {
		t.Fatal(err)
	}
	store := func(name string) string { return "sqlite:" + filepath.Join(dir, name+".db") }
	reg, err := registry.New(ctx, registry.Config{StoreURL: store("registry"), Logger: log, Meter: tel.Meter("registry")})
	if err != nil {
		t.Fatal(err)
	}
	idm, err := idmap.New(ctx, idmap.Config{StoreURL: store("idmap"), Logger: log, Meter: tel.Meter("idmap"), Principal: auth.NameFromContext})
	if err != nil {
		t.Fatal(err)
	}
	adp, err := adapter.New(ctx, adapter.Config{Registry: peer, Idmap: peer, Logger: log, Meter: tel.Meter("adapter")})
	if err != nil {
		t.Fatal(err)
	}
	gt, err := gate.New(ctx, gate.Config{StoreURL: store("gate"), Registry: peer, Adapter: peer, Idmap: peer, Logger: log, Meter: tel.Meter("gate")})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Tokens: tokens, Logger: log, Telemetry: tel, ShutdownTimeout: 5 * time.Second},
		server.Service{Name: registryv1.RegistryService_ServiceDesc.ServiceName, Register: reg.Register, Access: registry.Access},
		server.Service{Name: idmapv1.IdMapService_ServiceDesc.ServiceName, Register: idm.Register, Access: idmap.Access},
		server.Service{Name: adapterv1.AdapterService_ServiceDesc.ServiceName, Register: adp.Register, Access: adapter.Access},
		server.Service{Name: gatev1.GateService_ServiceDesc.ServiceName, Register: gt.Register, Access: gate.Access},
	)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{reg.Run, adp.Run, gt.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	wg.Go(func() { _ = srv.Serve(ctx, server.Listeners{GRPC: lis}) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		peer.Close()
		// After the test's checks: a service's Close error is checked by
		// the service's own tests.
		_, _, _, _ = gt.Close(), adp.Close(), idm.Close(), reg.Close()
		_ = tel.Shutdown(context.Background())
	})
	conn, err := dial.Conn(addr, dial.Options{Token: admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &seam{addr: addr, admin: admin, gate: gatev1.NewGateServiceClient(conn), registry: registryv1.NewRegistryServiceClient(conn)}
}

// env is one test's world: a source database, a target database and Seam.
type env struct {
	t      testing.TB
	source string
	target string
	seam   *seam
	src    *pgx.Conn
	tgt    *pgx.Conn
}

// paymentsEnv starts a Seam and an env whose source holds n payments and
// n/10 accounts.
func paymentsEnv(t testing.TB, n int) *env {
	t.Helper()
	e := newEnv(t, startSeam(t))
	loadPayments(e, n)
	return e
}

func newEnv(t testing.TB, sm *seam) *env {
	t.Helper()
	srv := pgServer.Require(t)
	e := &env{t: t, source: createDB(t, srv, "src"), target: createDB(t, srv, "tgt"), seam: sm}
	e.src = connect(t, e.source)
	e.tgt = connect(t, e.target)
	return e
}

// createDB creates a fresh database on srv and returns its URL.
func createDB(t testing.TB, srv *postgrestest.Server, prefix string) string {
	t.Helper()
	url, err := srv.CreateDB(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["TimeZone"] = "UTC"
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (e *env) exec(c *pgx.Conn, sql string, args ...any) {
	e.t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// running is a source running in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
	ready  chan struct{}
	stop   func() error
}

// config returns a source configuration for e.
func (e *env) config(name string, tables ...string) postgres.Config {
	return postgres.Config{
		Name: name, SourceURL: e.source, TargetURL: e.target, Tables: tables,
		Gate: e.seam.gate, Registry: e.seam.registry,
		SnapshotWorkers: 3, ChunkRows: 500, BatchRecords: 200,
		PollInterval: 100 * time.Millisecond, StatusInterval: time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// start runs a source until stopped or the test ends.
func (e *env) start(cfg postgres.Config) *running {
	e.t.Helper()
	r := &running{done: make(chan error, 1), ready: make(chan struct{})}
	var once sync.Once
	prev := cfg.Ready
	cfg.Ready = func() {
		once.Do(func() { close(r.ready) })
		if prev != nil {
			prev()
		}
	}
	src, err := postgres.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- src.Run(ctx) }()
	var stopOnce sync.Once
	var stopErr error
	r.stop = func() error {
		stopOnce.Do(func() {
			cancel()
			select {
			case stopErr = <-r.done:
			case <-time.After(30 * time.Second):
				stopErr = fmt.Errorf("source did not stop within 30s")
			}
		})
		return stopErr
	}
	e.t.Cleanup(func() {
		if err := r.stop(); err != nil {
			e.t.Errorf("source stopped with %v", err)
		}
	})
	return r
}

// column reads the first column of a query's rows.
func column[T any](t testing.TB, c *pgx.Conn, sql string, args ...any) []T {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// runToEnd runs a source in the foreground for at most timeout and
// returns how it ended.
func runToEnd(t testing.TB, cfg postgres.Config, timeout time.Duration) error {
	t.Helper()
	src, err := postgres.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return src.Run(ctx)
}

// startReady runs a source as start does and waits for its snapshot to
// be done.
func (e *env) startReady(cfg postgres.Config) *running {
	e.t.Helper()
	r := e.start(cfg)
	r.waitReady(e.t)
	return r
}

// waitReady waits for the snapshot to be done.
func (r *running) waitReady(t testing.TB) {
	t.Helper()
	select {
	case <-r.ready:
	case err := <-r.done:
		t.Fatalf("source stopped before its snapshot was done: %v", err)
	case <-time.After(120 * time.Second):
		t.Fatal("snapshot not done within 120s")
	}
}

// eventually retries cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %s", what, timeout, last)
}

// rowsOf reads a table as sorted lines "col=value|..." over cols, by
// primary key; where filters (for the replica: not deleted).
func rowsOf(c *pgx.Conn, table string, cols []string, where string) ([]string, error) {
	var sel []string
	for _, col := range cols {
		expr := pgx.Identifier{col}.Sanitize()
		if strings.ContainsAny(col, ":( ") {
			expr = col // an expression, such as balance::float8
		}
		sel = append(sel, fmt.Sprintf("coalesce((%s)::text, 'NULL')", expr))
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, " || '|' || "), table)
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", table, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", table, err)
	}
	sort.Strings(out)
	return out, nil
}

// sameRows compares the source table with its replica, row for row, over
// the given columns, and says how they differ.
func sameRows(t testing.TB, e *env, srcTable, replicaTable string, cols []string) (bool, string) {
	a, err := rowsOf(e.src, srcTable, cols, "")
	if err != nil {
		return false, err.Error()
	}
	b, err := rowsOf(e.tgt, replicaTable, cols, "NOT _seam_deleted")
	if err != nil {
		return false, err.Error()
	}
	if slices.Equal(a, b) {
		return true, ""
	}
	missing, extra := diff(a, b), diff(b, a)
	return false, fmt.Sprintf("replica has %d rows, source %d; %d source rows missing or different (first %v), %d replica rows not in source (first %v)",
		len(b), len(a), len(missing), first(missing), len(extra), first(extra))
}

func diff(a, b []string) []string {
	in := map[string]int{}
	for _, x := range b {
		in[x]++
	}
	var out []string
	for _, x := range a {
		if in[x] > 0 {
			in[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

// first returns up to three rows, each clipped to 200 characters.
func first(s []string) []string {
	out := s[:min(len(s), 3)]
	for i, r := range out {
		if len(r) > 200 {
			out[i] = r[:200] + "…"
		}
	}
	return out
}
