// Package client is how seam commands are built and reach Seam: the
// skeleton of a command (command.go), the flags every command shares, the
// connection (address, token, TLS), the deadline of each call, and the
// translation of a failed call into a one-line message with the right
// exit code.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/seamdata/seam/platform/backoff"

	"github.com/spf13/pflag"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/naming"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/rpcerr"
)

// Globals are the flags every command shares, and the build's version.
type Globals struct {
	DataDir string
	Addr    string
	Token   string
	TLS     bool
	TLSCA   string
	Output  string
	Timeout time.Duration
	// Version is the seam build's version (not a flag).
	Version string
	// addrFrom says where Addr came from when no flag gave it: the
	// addresses file of seam up, for messages about reaching it.
	addrFrom string
}

// DefaultDataDir is where `seam up` keeps its stores and tokens.
const DefaultDataDir = "./seam-data"

// AddClientFlags declares the flags of a command that calls Seam: where
// Seam is, who calls, how long a call may take, and -o. Declared on a
// group's persistent flags they reach every subcommand.
func (g *Globals) AddClientFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.Addr, "addr", "", "gRPC address of Seam: host:port, several separated by commas, or dns:///name:port (default: the address seam up wrote into --data-dir, else "+DefaultAddr+")")
	fs.StringVar(&g.Token, "token", "", "bearer token (default: the admin token seam up wrote into --data-dir)")
	fs.StringVar(&g.DataDir, "data-dir", DefaultDataDir, "data directory of seam up, where the client finds its address and admin token")
	fs.BoolVar(&g.TLS, "tls", false, "connect over TLS, trusting the system roots or --tls-ca")
	fs.StringVar(&g.TLSCA, "tls-ca", "", "PEM CA bundle to trust (implies --tls)")
	fs.DurationVar(&g.Timeout, "timeout", 30*time.Second, "deadline of each call; a stream fails after this long without progress, a watch after this long without a connection (0: none)")
	g.AddOutputFlag(fs)
}

// AddOutputFlag declares -o alone, for commands that answer without
// calling Seam.
func (g *Globals) AddOutputFlag(fs *pflag.FlagSet) {
	fs.StringVarP(&g.Output, "output", "o", output.Table, "output format: table or json")
}

// JSON reports whether -o json was asked for.
func (g *Globals) JSON() bool { return g.Output == output.JSON }

// ValidateOutput checks -o.
func (g *Globals) ValidateOutput() error {
	if g.Output != output.Table && g.Output != output.JSON {
		return exit.Usagef("--output %q: use table or json", g.Output)
	}
	return nil
}

// BearerToken returns the token to send: --token or SEAM_TOKEN, else the
// admin token `seam up` wrote into the data directory.
func (g *Globals) BearerToken() string {
	if g.Token != "" {
		return g.Token
	}
	data, err := os.ReadFile(filepath.Join(g.DataDir, auth.AdminTokenFileName))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Conn is a connection to Seam whose unary calls without a deadline get
// --timeout, so no call of any command waits for ever.
type Conn struct {
	*grpc.ClientConn
	timeout time.Duration
}

// WithTimeout wraps conn so its unary calls without a deadline get d.
func WithTimeout(conn *grpc.ClientConn, d time.Duration) *Conn {
	return &Conn{ClientConn: conn, timeout: d}
}

// Invoke bounds a unary call by the connection's timeout unless its
// context already has a deadline.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if _, ok := ctx.Deadline(); !ok && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	return c.ClientConn.Invoke(ctx, method, args, reply, opts...)
}

// Connect opens a client connection to Seam.
func (g *Globals) Connect() (*Conn, error) {
	if err := g.ValidateOutput(); err != nil {
		return nil, err
	}
	if err := g.resolveAddr(); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if g.TLS || g.TLSCA != "" {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if g.TLSCA != "" {
			pool, err := ReadCA(g.TLSCA)
			if err != nil {
				return nil, exit.Usagef("%w", err)
			}
			tlsCfg.RootCAs = pool
		}
	}
	// Each call is bounded by --timeout (CallCtx), not by the peer policy.
	conn, err := dial.Conn(g.Addr, dial.Options{Token: g.BearerToken(), TLS: tlsCfg, CallTimeout: dial.NoCallTimeout})
	if err != nil {
		return nil, exit.Usagef("%w", err)
	}
	return WithTimeout(conn, g.Timeout), nil
}

// ReadCA reads the PEM CA bundle of --tls-ca: the certificates a client
// of Seam trusts.
func ReadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", path)
	}
	return pool, nil
}

// CallCtx returns the context of one call, bounded by --timeout.
func (g *Globals) CallCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.Timeout)
}

// RPCError turns a failed call into a one-line error with the right exit
// code: connection problems and bad requests are usage errors (2); a
// refusal on the merits (failed precondition) is a "no" (1). An error
// that already carries an exit code is returned as it is.
func (g *Globals) RPCError(what string, err error) error {
	if exit.Coded(err) {
		return err
	}
	st := status.Convert(err)
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return exit.Usagef("%s: cannot reach Seam at %s%s (%s); is `seam up` running, and is --addr right?", what, g.Addr, g.addrFrom, msg)
	case codes.Unauthenticated:
		return exit.Usagef("%s: %s; pass --token, set SEAM_TOKEN, or run from the directory of `seam up`", what, msg)
	case codes.PermissionDenied:
		return exit.Usagef("%s: permission denied: %s", what, msg)
	case codes.InvalidArgument:
		// A name that breaks the naming rule is bad input, as an invalid
		// file is: exit 3, with the field and the rule.
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					if strings.HasPrefix(v.GetDescription(), naming.ViolationPrefix) {
						return exit.Invalidf("%s: %s: %s", what, msg, strings.TrimPrefix(v.GetDescription(), naming.ViolationPrefix))
					}
				}
			}
		}
	case codes.FailedPrecondition, codes.AlreadyExists:
		return exit.Failf("%s: %s", what, msg)
	}
	return exit.Usagef("%s: %s (%s)", what, msg, st.Code())
}

// DocumentError is RPCError for a call that sends a document (a contract,
// a canonical model, a consumer): Seam refusing it as invalid exits
// exit.Invalid, as a document refused before sending would.
func (g *Globals) DocumentError(what string, err error) error {
	if status.Code(err) == codes.InvalidArgument {
		return exit.Invalidf("%s: %s", what, status.Convert(err).Message())
	}
	return g.RPCError(what, err)
}

// Stream returns the context of a stream that may run long (an upload, a
// replay): it ends when --timeout passes without progress. Call progress
// after every message sent or received; call stop when done.
func (g *Globals) Stream(ctx context.Context) (sctx context.Context, progress func(), stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if g.Timeout <= 0 {
		return ctx, func() {}, func() { cancel(nil) }
	}
	idle := g.Timeout
	timer := time.AfterFunc(idle, func() {
		cancel(rpcerr.WithReason(codes.DeadlineExceeded, "NO_PROGRESS", fmt.Sprintf("no progress for %s (--timeout)", idle), nil))
	})
	return ctx, func() { timer.Reset(idle) }, func() { timer.Stop(); cancel(nil) }
}

// Allow keeps a stream that Stream bounds by idle (--timeout) from ending
// for about d after the last message sent, while the caller waits for an
// answer the server works out with nothing to send meanwhile (an import's
// checks and index over every pair it took). Call the function it returns
// once the answer came. With idle 0 (no --timeout) it does nothing.
func Allow(progress func(), idle, d time.Duration) (done func()) {
	if idle <= 0 || d <= idle {
		return func() {}
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(idle / 2)
		defer tick.Stop()
		until := time.Now().Add(d - idle)
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				if now.After(until) {
					return
				}
				progress()
			}
		}
	}()
	return sync.OnceFunc(func() { close(stop) })
}

// Follow reads a resumable server stream until ctx ends. open starts the
// stream (again after a disconnect: the request it uses must already hold
// the position emit last recorded), emit handles each message, and
// transient errors reconnect with backoff, so nothing is missed or shown
// twice. A stream that cannot be opened again for --timeout ends the
// command with the last error, so a watch never hangs on a Seam that is
// down.
func Follow[T any](ctx context.Context, g *Globals, what string, open func() (grpc.ServerStreamingClient[T], error), emit func(*T) error) error {
	retry := backoff.Backoff{Min: 250 * time.Millisecond, Max: 10 * time.Second}
	var failingSince time.Time
	for {
		stream, err := open()
		if err == nil {
			for {
				var msg *T
				if msg, err = stream.Recv(); err != nil {
					break
				}
				retry.Reset()
				failingSince = time.Time{}
				if err := emit(msg); err != nil {
					return err
				}
			}
		}
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			return nil
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Internal, codes.Unknown:
		default:
			return g.RPCError(what, err)
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if g.Timeout > 0 && time.Since(failingSince) >= g.Timeout {
			return g.RPCError(what, err)
		}
		if retry.Wait(ctx) != nil {
			return nil
		}
	}
}

// Watch is Follow for a stream of numbered items (alerts, events) that
// resumes after the last item shown: next takes the item out of a message
// and records its number in the request open sends. Each item goes to w
// as one JSON object a line with -o json (NDJSON: a stream has no end to
// close one document with), else as print writes it.
func Watch[Msg any, Item proto.Message](ctx context.Context, g *Globals, what string, w io.Writer, open func() (grpc.ServerStreamingClient[Msg], error), next func(*Msg) Item, print func(io.Writer, Item)) error {
	return Follow(ctx, g, what, open, func(msg *Msg) error {
		item := next(msg)
		if g.JSON() {
			return output.ProtoLine(w, item)
		}
		print(w, item)
		return nil
	})
}

// Cause returns why a stream's context ended when it ended err: the
// --timeout of Stream rather than a bare "context canceled".
func Cause(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return c
		}
	}
	return err
}
