// Package postgrestest starts a throwaway PostgreSQL server with
// wal_level=logical for tests of the change-data-capture source: initdb of
// the installed server binaries into a temporary directory, a free port on
// 127.0.0.1, trust authentication. It never touches the machine's own
// PostgreSQL configuration. initdb refuses to run as root, so as root the
// server runs as the postgres user on a directory handed to it.
package postgrestest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir    string
	bin    string
	port   int
	runAs  *user.User
	dbSeq  atomic.Int64
	stopFn func() error
}

// Binaries returns the directory of the newest installed PostgreSQL server
// binaries (initdb, pg_ctl, postgres), from $SEAM_PG_BIN or
// /usr/lib/postgresql/*/bin, or an error saying what is missing.
func Binaries() (string, error) {
	if dir := os.Getenv("SEAM_PG_BIN"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err != nil {
			return "", fmt.Errorf("SEAM_PG_BIN=%s holds no initdb: %w", dir, err)
		}
		return dir, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (install the postgresql package, or set SEAM_PG_BIN)")
	}
	sort.Slice(found, func(i, j int) bool { return majorOf(found[i]) < majorOf(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

func majorOf(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// Start initialises and starts a server. The caller stops it with Stop.
func Start() (*Server, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, and initdb refuses root: no postgres user to run the test server as (%w)", err)
		}
		s.runAs = u
	}
	// /tmp, not a test's TempDir: the postgres user must reach the
	// directory, and TempDir's parents are private to root.
	s.dir, err = os.MkdirTemp("", "seam-pgtest-")
	if err != nil {
		return nil, err
	}
	if err := s.handOver(s.dir); err != nil {
		s.cleanup()
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.command("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "-N").CombinedOutput(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("initdb: %w: %s", err, bytes.TrimSpace(out))
	}
	conf := `
listen_addresses = '127.0.0.1'
unix_socket_directories = '` + s.dir + `'
wal_level = logical
max_replication_slots = 64
max_wal_senders = 64
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 64MB
logging_collector = off
log_min_messages = warning
TimeZone = 'UTC'
`
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.cleanup()
		return nil, fmt.Errorf("write postgresql.conf: %w", err)
	}
	for attempt := 0; ; attempt++ {
		s.port, err = freePort()
		if err != nil {
			s.cleanup()
			return nil, err
		}
		out, err := s.command("pg_ctl", "-D", data, "-l", filepath.Join(s.dir, "server.log"), "-o", "-p "+strconv.Itoa(s.port), "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.cleanup()
			return nil, fmt.Errorf("pg_ctl start: %w: %s\n%s", err, bytes.TrimSpace(out), log)
		}
	}
	s.stopFn = func() error {
		out, err := s.command("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop").CombinedOutput()
		if err != nil {
			return fmt.Errorf("pg_ctl stop: %w: %s", err, bytes.TrimSpace(out))
		}
		return nil
	}
	return s, nil
}

// handOver gives dir to the user the server runs as.
func (s *Server) handOver(dir string) error {
	if s.runAs == nil {
		return nil
	}
	uid, _ := strconv.Atoi(s.runAs.Uid)
	gid, _ := strconv.Atoi(s.runAs.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("hand %s to the postgres user: %w", dir, err)
	}
	return os.Chmod(dir, 0o700)
}

// command runs a server binary, as the postgres user when we are root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.runAs != nil {
		uid, _ := strconv.Atoi(s.runAs.Uid)
		gid, _ := strconv.Atoi(s.runAs.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	return cmd
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops the server and removes its files.
func (s *Server) Stop() error {
	var err error
	if s.stopFn != nil {
		err = s.stopFn()
	}
	s.cleanup()
	return err
}

func (s *Server) cleanup() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// URL is the URL of database db on the server.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// CreateDB creates a fresh database named after prefix and returns its URL.
func (s *Server) CreateDB(ctx context.Context, prefix string) (string, error) {
	name := fmt.Sprintf("%s_%d", strings.ToLower(prefix), s.dbSeq.Add(1))
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// Shared is one server for a test binary, started by the first test that
// asks for it (Require) and stopped by Main when the tests are done. A
// binary that never asks starts none: a fuzz worker, a -run that selects
// no PostgreSQL test, or the child processes a kill -9 test spawns. (Go's
// fuzzing runs TestMain in the coordinator and in every worker, so a
// server started there was an initdb per process, left running whenever
// the coordinator killed a worker.)
type Shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Main runs a test binary's tests and stops the shared server, if one of
// them started it. It is meant for TestMain.
func Main(m *testing.M, shared *Shared) int {
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "postgrestest: %v\n", err)
		}
	}
	return code
}

// Require returns the shared server, starting it on first use. When none
// can be started (no server binaries) it skips t, and fails it instead
// under CI=true: CI has the PostgreSQL binaries, so a missing one is a
// broken CI, never a reason to pass.
func (s *Shared) Require(t testing.TB) *Server {
	t.Helper()
	s.once.Do(func() { s.srv, s.err = Start() })
	if s.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no test PostgreSQL with wal_level=logical under CI=true (%v); install the postgresql package", s.err)
		}
		t.Skipf("skipped: no test PostgreSQL with wal_level=logical (%v)", s.err)
	}
	return s.srv
}

// WaitReady waits until the server accepts connections to db.
func (s *Server) WaitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
