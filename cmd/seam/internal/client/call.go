package client

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/cmd/seam/internal/output"
)

// RPC is a unary method of a generated gRPC client, such as
// registryv1.NewRegistryServiceClient(conn).ListConsumers.
type RPC[Req, Resp any] func(context.Context, Req, ...grpc.CallOption) (Resp, error)

// Call makes one call bounded by --timeout; a failure comes back as
// RPCError(what, err).
func Call[Req, Resp any](ctx context.Context, g *Globals, what string, rpc RPC[Req, Resp], req Req) (Resp, error) {
	return call(ctx, g, g.RPCError, what, rpc, req)
}

// CallDocument is Call for a call that sends a document: a failure comes
// back as DocumentError(what, err).
func CallDocument[Req, Resp any](ctx context.Context, g *Globals, what string, rpc RPC[Req, Resp], req Req) (Resp, error) {
	return call(ctx, g, g.DocumentError, what, rpc, req)
}

func call[Req, Resp any](ctx context.Context, g *Globals, fail func(what string, err error) error, what string, rpc RPC[Req, Resp], req Req) (Resp, error) {
	ctx, cancel := g.CallCtx(ctx)
	defer cancel()
	resp, err := rpc(ctx, req)
	if err != nil {
		return resp, fail(what, err)
	}
	return resp, nil
}

// Print writes a response to the command's output: the message itself
// with -o json, else what human writes.
func Print[Resp proto.Message](cmd *cobra.Command, g *Globals, resp Resp, human func(w io.Writer, resp Resp) error) error {
	if g.JSON() {
		return output.Proto(cmd.OutOrStdout(), resp)
	}
	return human(cmd.OutOrStdout(), resp)
}

// Show is Call then Print: the whole body of a command that reads one
// thing from Seam and shows it.
func Show[Req any, Resp proto.Message](cmd *cobra.Command, g *Globals, what string, rpc RPC[Req, Resp], req Req, human func(w io.Writer, resp Resp) error) error {
	resp, err := Call(cmd.Context(), g, what, rpc, req)
	if err != nil {
		return err
	}
	return Print(cmd, g, resp, human)
}

// Send is CallDocument then Print: the end of a command that sends a
// document to Seam and shows the answer.
func Send[Req any, Resp proto.Message](cmd *cobra.Command, g *Globals, what string, rpc RPC[Req, Resp], req Req, human func(w io.Writer, resp Resp) error) error {
	resp, err := CallDocument(cmd.Context(), g, what, rpc, req)
	if err != nil {
		return err
	}
	return Print(cmd, g, resp, human)
}
