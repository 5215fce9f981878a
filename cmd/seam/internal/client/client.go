// Package client is how seam commands reach Seam: the flags every command
// shares, the connection (address, token, TLS), the deadline of each call,
// and the translation of a failed call into a one-line message with the
// right exit code.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/dial"
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
}

// Register declares the shared flags on fs.
func (g *Globals) Register(fs *pflag.FlagSet) {
	fs.StringVar(&g.DataDir, "data-dir", "./seam-data", "data directory of `seam up` (its store, and the admin token the client uses by default)")
	fs.StringVar(&g.Addr, "addr", "127.0.0.1:7070", "gRPC address of Seam (host:port, several separated by commas, or dns:///name:port)")
	fs.StringVar(&g.Token, "token", "", "bearer token (default: the local admin token in --data-dir)")
	fs.BoolVar(&g.TLS, "tls", false, "connect over TLS, trusting the system roots or --tls-ca")
	fs.StringVar(&g.TLSCA, "tls-ca", "", "PEM CA bundle to trust (implies --tls)")
	fs.StringVarP(&g.Output, "output", "o", output.Table, "output format: table or json")
	fs.DurationVar(&g.Timeout, "timeout", 30*time.Second, "deadline of each call (0: none)")
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

// Connect opens a client connection to Seam.
func (g *Globals) Connect() (*grpc.ClientConn, error) {
	if err := g.ValidateOutput(); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if g.TLS || g.TLSCA != "" {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if g.TLSCA != "" {
			pem, err := os.ReadFile(g.TLSCA)
			if err != nil {
				return nil, exit.Usagef("read --tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, exit.Usagef("--tls-ca %s holds no PEM certificate", g.TLSCA)
			}
			tlsCfg.RootCAs = pool
		}
	}
	conn, err := dial.Conn(g.Addr, dial.Options{Token: g.BearerToken(), TLS: tlsCfg})
	if err != nil {
		return nil, exit.Usagef("%w", err)
	}
	return conn, nil
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
		return exit.Usagef("%s: cannot reach Seam at %s (%s); is `seam up` running, and is --addr right?", what, g.Addr, msg)
	case codes.Unauthenticated:
		return exit.Usagef("%s: %s; pass --token, set SEAM_TOKEN, or run from the directory of `seam up`", what, msg)
	case codes.PermissionDenied:
		return exit.Usagef("%s: permission denied: %s", what, msg)
	case codes.FailedPrecondition, codes.AlreadyExists:
		return exit.Failf("%s: %s", what, msg)
	}
	return exit.Usagef("%s: %s (%s)", what, msg, st.Code())
}

// RunFunc is the body of a command that calls Seam.
type RunFunc func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error

// Run wires a command that calls Seam: it validates the output format,
// opens the connection and closes it after run.
func (g *Globals) Run(run RunFunc) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		conn, err := g.Connect()
		if err != nil {
			return err
		}
		defer conn.Close()
		return run(cmd, args, conn)
	}
}

// Follow reads a resumable server stream until ctx ends. open starts the
// stream (again after a disconnect: the request it uses must already hold
// the position emit last recorded), emit handles each message, and
// transient errors reconnect with backoff, so nothing is missed or shown
// twice.
func Follow[T any](ctx context.Context, g *Globals, what string, open func() (grpc.ServerStreamingClient[T], error), emit func(*T) error) error {
	backoff := 250 * time.Millisecond
	for {
		stream, err := open()
		if err == nil {
			for {
				var msg *T
				if msg, err = stream.Recv(); err != nil {
					break
				}
				backoff = 250 * time.Millisecond
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
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
