package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/dial"
)

// healthNames are the gRPC health service names of the services.
var healthNames = map[string]string{
	"registry": "seam.registry.v1.RegistryService",
	"idmap":    "seam.idmap.v1.IdMapService",
	"adapter":  "seam.adapter.v1.AdapterService",
	"gate":     "seam.gate.v1.GateService",
	"up":       "",
}

// proc is one seam process the suite starts, kills, stops and restarts
// with the same arguments (and so the same ports and store).
type proc struct {
	name     string
	args     []string
	grpcAddr string
	httpAddr string
	metrics  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *tail
}

// tail keeps the last bytes a process wrote, for failure messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 16<<10 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-8<<10:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// cluster is a set of seam processes sharing a tokens file and a data
// directory.
type cluster struct {
	bin         string
	dir         string
	store       string // "" for SQLite files in dir
	peerTimeout time.Duration
	readTimeout time.Duration
	env         []string
	tokens      map[string]string // by principal name
	svcToken    string
	procs       map[string]*proc
}

// principals of the suite: a pipeline, a viewer, a pipeline limited to
// other subjects, two owner teams, an admin and the services' own
// identity.
var principals = []auth.TokenEntry{
	{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}},
	{Name: "pipeline", Roles: []auth.Role{auth.RolePipeline}},
	{Name: "viewer", Roles: []auth.Role{auth.RoleViewer}},
	{Name: "pipeline-other", Roles: []auth.Role{auth.RolePipeline}, Subjects: []string{"other.*"}},
	{Name: "team-payments", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"pay.*", "finance.*"}},
	{Name: "team-risk", Roles: []auth.Role{auth.RoleOwner}, Subjects: []string{"risk.*"}},
	{Name: "seam-services", Roles: []auth.Role{auth.RoleService}},
}

func newCluster(bin, dir, store string, peerTimeout, readTimeout time.Duration) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir, store: store, peerTimeout: peerTimeout, readTimeout: readTimeout,
		tokens: map[string]string{}, procs: map[string]*proc{}}
	var entries []auth.TokenEntry
	for _, p := range principals {
		tok, e, err := auth.NewToken(p.Name, p.Roles, p.Subjects)
		if err != nil {
			return nil, err
		}
		c.tokens[p.Name] = tok
		entries = append(entries, e)
	}
	c.svcToken = c.tokens["seam-services"]
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := auth.WriteTokensFile(filepath.Join(dir, "tokens.json"), auth.TokensFile{Tokens: entries}); err != nil {
		return nil, err
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEAM_") && !strings.HasPrefix(kv, "OTEL_") {
			c.env = append(c.env, kv)
		}
	}
	return c, nil
}

// freshDatabase creates an empty database on the PostgreSQL server of url
// for one run, and returns its URL and a function that drops it.
func freshDatabase(ctx context.Context, url string) (string, func(), error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "", nil, fmt.Errorf("-store %q: %w", url, err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", nil, fmt.Errorf("connect to -store: %w", err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("seam_chaos_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, url); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			conn.Close(ctx)
		}
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// freePort returns a loopback address nobody listens on now. The suite
// keeps it for the life of the process it is given to, across restarts.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// add declares a process: service is registry, idmap, adapter, gate or up
// (all four in one process, with REST and a metrics address).
func (c *cluster) add(name, service string, peers map[string]string) (*proc, error) {
	grpcAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, grpcAddr: grpcAddr}
	cmd := []string{service, "serve"}
	if service == "up" {
		cmd = []string{"up"}
	}
	p.args = append(cmd,
		"--data-dir", filepath.Join(c.dir, name),
		"--grpc-addr", grpcAddr,
		"--tokens-file", filepath.Join(c.dir, "tokens.json"),
		"--service-token", c.svcToken,
		"--peer-timeout", c.peerTimeout.String(),
		"--shutdown-timeout", "2s",
		"--log-level", "warn")
	if service == "up" {
		if p.httpAddr, err = freePort(); err != nil {
			return nil, err
		}
		if p.metrics, err = freePort(); err != nil {
			return nil, err
		}
		p.args = append(p.args, "--http-addr", p.httpAddr, "--metrics-addr", p.metrics, "--http-read-timeout", c.readTimeout.String())
	} else {
		p.args = append(p.args, "--http-addr=")
	}
	if c.store != "" && service != "up" {
		// The corpus node keeps an embedded store of its own.
		p.args = append(p.args, "--store", c.store)
	}
	for _, peer := range []string{"registry", "idmap", "adapter"} {
		if addr := peers[peer]; addr != "" {
			p.args = append(p.args, "--"+peer+"-addr", addr)
		}
	}
	c.procs[name] = p
	return p, nil
}

// start runs p and waits until it reports SERVING.
func (c *cluster) start(ctx context.Context, p *proc) error {
	p.mu.Lock()
	p.log = &tail{}
	p.exited = make(chan struct{})
	p.cmd = exec.Command(c.bin, p.args...)
	dieWithSuite(p.cmd)
	p.cmd.Env = c.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return c.waitServing(ctx, p, 60*time.Second)
}

// waitServing polls p's health until it answers SERVING.
func (c *cluster) waitServing(ctx context.Context, p *proc, limit time.Duration) error {
	conn, err := dial.Conn(p.grpcAddr, dial.Options{CallTimeout: time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-p.exitedCh():
			return fmt.Errorf("%s exited before serving:\n%s", p.name, p.log)
		default:
		}
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: healthNames[p.service()]})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not report SERVING within %s (%v):\n%s", p.name, limit, err, p.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) service() string {
	if p.args[0] == "up" {
		return "up"
	}
	return p.args[0]
}

func (p *proc) exitedCh() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// signal sends sig to p's process.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s to %s: %w", sig, p.name, err)
	}
	return nil
}

// freeze stops p with SIGSTOP and waits until every thread of it is
// stopped: the signal is asynchronous, and on a loaded machine a process
// can serve a call or two after kill(2) returned.
func (p *proc) freeze() error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	pid := p.pid()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if allStopped(pid) {
			return nil
		}
	}
	return fmt.Errorf("%s did not stop within 5s of SIGSTOP", p.name)
}

// allStopped reports whether every thread of pid is in state T (stopped).
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// kill9 ends p with SIGKILL and waits for it to be gone.
func (p *proc) kill9() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.exitedCh()
	return nil
}

// stop ends p gracefully (SIGCONT first, in case it is stopped), with
// SIGKILL after 10 s.
func (p *proc) stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// alive reports whether p runs and its health answers SERVING.
func (c *cluster) alive(ctx context.Context, p *proc) bool {
	select {
	case <-p.exitedCh():
		return false
	default:
	}
	return c.waitServing(ctx, p, 5*time.Second) == nil
}

func (c *cluster) stopAll() {
	var wg sync.WaitGroup
	for _, p := range c.procs {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// conn dials p as principal.
func (c *cluster) conn(p *proc, principal string, timeout time.Duration) (*grpc.ClientConn, error) {
	return dial.Conn(p.grpcAddr, dial.Options{Token: c.tokens[principal], CallTimeout: timeout})
}

// rss returns the resident set size of pid in bytes, from /proc.
func rss(pid int) (int64, error) {
	return procStatus(pid, "VmRSS:")
}

func procStatus(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
}

// openFiles counts the file descriptors pid holds.
func openFiles(pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(entries)
}

// sampler samples a process's RSS every 10 ms and keeps the peak since the
// last mark.
type sampler struct {
	pid  int
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func newSampler(pid int) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := rss(s.pid); err == nil {
				s.mu.Lock()
				s.peak = max(s.peak, v)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// mark starts a new measurement: it returns the RSS now, and the peak
// restarts from it.
func (s *sampler) mark() int64 {
	v, _ := rss(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak = v
	return v
}

func (s *sampler) peakSinceMark() int64 {
	if v, err := rss(s.pid); err == nil {
		s.mu.Lock()
		s.peak = max(s.peak, v)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func (s *sampler) close() {
	close(s.stop)
	<-s.done
}
