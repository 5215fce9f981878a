package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"

	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/dial"
)

// globals are the flags every command shares.
type globals struct {
	DataDir string
	Addr    string
	Token   string
	TLS     bool
	TLSCA   string
	Output  string
	Timeout time.Duration
}

func (g *globals) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.DataDir, "data-dir", "./seam-data", "data directory of `seam up` (its store, and the admin token the client uses by default)")
	fs.StringVar(&g.Addr, "addr", "127.0.0.1:7070", "gRPC address of Seam (host:port, several separated by commas, or dns:///name:port)")
	fs.StringVar(&g.Token, "token", "", "bearer token (default: the local admin token in --data-dir)")
	fs.BoolVar(&g.TLS, "tls", false, "connect over TLS, trusting the system roots or --tls-ca")
	fs.StringVar(&g.TLSCA, "tls-ca", "", "PEM CA bundle to trust (implies --tls)")
	fs.StringVarP(&g.Output, "output", "o", "table", "output format: table or json")
	fs.DurationVar(&g.Timeout, "timeout", 30*time.Second, "deadline of each call (0: none)")
}

func (g *globals) validateOutput() error {
	if g.Output != "table" && g.Output != "json" {
		return usageError("--output %q: use table or json", g.Output)
	}
	return nil
}

// token returns the token to send: --token or SEAM_TOKEN, else the admin
// token `seam up` wrote into the data directory.
func (g *globals) token() string {
	if g.Token != "" {
		return g.Token
	}
	data, err := os.ReadFile(filepath.Join(g.DataDir, auth.AdminTokenFileName))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// connect opens a client connection to Seam.
func (g *globals) connect() (*grpc.ClientConn, error) {
	if err := g.validateOutput(); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if g.TLS || g.TLSCA != "" {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if g.TLSCA != "" {
			pem, err := os.ReadFile(g.TLSCA)
			if err != nil {
				return nil, usageError("read --tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, usageError("--tls-ca %s holds no PEM certificate", g.TLSCA)
			}
			tlsCfg.RootCAs = pool
		}
	}
	// Each call is bounded by --timeout (callCtx), not by the peer policy.
	conn, err := dial.Conn(g.Addr, dial.Options{Token: g.token(), TLS: tlsCfg, CallTimeout: dial.NoCallTimeout})
	if err != nil {
		return nil, usageError("%w", err)
	}
	return conn, nil
}

// callCtx returns the context of one call, bounded by --timeout.
func (g *globals) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.Timeout)
}

// rpcError turns a failed call into a one-line error with the right exit
// code: connection problems and bad requests are usage errors (2); a
// refusal on the merits (failed precondition) is a "no" (1).
func (g *globals) rpcError(what string, err error) error {
	st := status.Convert(err)
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return usageError("%s: cannot reach Seam at %s (%s); is `seam up` running, and is --addr right?", what, g.Addr, msg)
	case codes.Unauthenticated:
		return usageError("%s: %s; pass --token, set SEAM_TOKEN, or run from the directory of `seam up`", what, msg)
	case codes.PermissionDenied:
		return usageError("%s: permission denied: %s", what, msg)
	case codes.FailedPrecondition, codes.AlreadyExists:
		return answerNo("%s: %s", what, msg)
	}
	return usageError("%s: %s (%s)", what, msg, st.Code())
}

var (
	jsonOut  = protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}
	jsonLine = protojson.MarshalOptions{UseProtoNames: true}
)

// printJSON writes m as JSON with proto field names.
func printJSON(w io.Writer, m proto.Message) error {
	b, err := jsonOut.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// printValue writes a plain Go value as indented JSON.
func printValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cols ...string) { fmt.Fprintln(t.tw, strings.Join(cols, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// withClient wires a command that calls Seam: it validates output, opens
// the connection and closes it after run.
func withClient(g *globals, run func(cmd *cobra.Command, args []string, conn *grpc.ClientConn) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		conn, err := g.connect()
		if err != nil {
			return err
		}
		defer conn.Close()
		return run(cmd, args, conn)
	}
}

// follow reads a resumable server stream until ctx ends. open starts the
// stream (again after a disconnect: the request it uses must already hold
// the position emit last recorded), emit handles each message, and
// transient errors reconnect with backoff, so nothing is missed or shown
// twice.
func follow[T any](ctx context.Context, g *globals, what string, open func() (grpc.ServerStreamingClient[T], error), emit func(*T) error) error {
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
			return g.rpcError(what, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
