package proposal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// RunReplay receives a summary-only replay, handing each partition's
// progress to progress (nil: none).
func RunReplay(ctx context.Context, gate gatev1.GateServiceClient, req *gatev1.ReplayRequest, progress func(*gatev1.ReplayProgress)) (*gatev1.ReplaySummary, error) {
	stream, err := gate.Replay(ctx, req)
	if err != nil {
		return nil, err
	}
	var sum *gatev1.ReplaySummary
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if sum == nil {
				return nil, fmt.Errorf("the replay ended without a summary; run it again with replay id %s", req.GetReplayId())
			}
			return sum, nil
		}
		if err != nil {
			return nil, err
		}
		if p := msg.GetProgress(); p != nil && progress != nil {
			progress(p)
		}
		if s := msg.GetSummary(); s != nil {
			sum = s
		}
	}
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// FormatOf is the format name of ns, or a format of that name alone
// when ns does not have it (yet).
func FormatOf(ns *idmapv1.Namespace, name string) *idmapv1.Format {
	for _, f := range ns.GetFormats() {
		if f.GetName() == name {
			return f
		}
	}
	return &idmapv1.Format{Name: name}
}
