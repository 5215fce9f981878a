package idmap

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/platform/rpcerr"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// exportChunk is how many pairs one message of an export carries.
const exportChunk = 10_000

// ExportPairs streams one table (or member list) from the snapshot the
// call starts on, so an import committed meanwhile never mixes in: every
// chunk names the generation it comes from.
func (s *Server) ExportPairs(req *idmapv1.ExportPairsRequest, stream grpc.ServerStreamingServer[idmapv1.ExportPairsResponse]) error {
	ns, err := s.namespace(req.GetNamespace())
	if err != nil {
		return err
	}
	if req.GetLimit() < 0 {
		return rpcerr.InvalidArgument(fmt.Sprintf("limit %d is negative", req.GetLimit()),
			rpcerr.FieldViolation{Field: "limit", Description: "give 0 for every pair, or how many to export"})
	}
	from, to := req.GetFromFormat(), req.GetToFormat()
	if _, err := formatOf(ns, "from_format", from); err != nil {
		return err
	}
	members := to == "" || to == from
	key, swapped := TableKey{Namespace: ns.spec.GetName(), A: from, B: from}, false
	if !members {
		if _, err := formatOf(ns, "to_format", to); err != nil {
			return err
		}
		key, swapped = tableKey(ns.spec.GetName(), from, to)
	}
	t := ns.tables[[2]string{key.A, key.B}]
	if t == nil {
		what := fmt.Sprintf("lookup table %s↔%s", from, to)
		if members {
			what = "member list of " + from
		}
		return rpcerr.WithReason(codes.NotFound, "TABLE_NOT_FOUND",
			fmt.Sprintf("namespace %q has no %s; import one with `seam idmap import`", ns.spec.GetName(), what),
			map[string]string{"namespace": ns.spec.GetName(), "from_format": from, "to_format": to})
	}
	chunk := &idmapv1.ExportPairsResponse{Generation: t.Generation, TableSize: t.Pairs}
	var sent int64
	var sendErr error
	flush := func() bool {
		if len(chunk.Pairs) == 0 {
			return true
		}
		sendErr = stream.Send(chunk)
		chunk = &idmapv1.ExportPairsResponse{Generation: t.Generation, TableSize: t.Pairs}
		return sendErr == nil
	}
	limit := req.GetLimit()
	t.table.Range(func(a, b string) bool {
		if limit > 0 && sent >= limit {
			return false
		}
		if err := stream.Context().Err(); err != nil {
			sendErr = err
			return false
		}
		p := &idmapv1.Pair{From: a, To: b}
		switch {
		case members:
			p.To = ""
		case swapped:
			p.From, p.To = b, a
		}
		chunk.Pairs = append(chunk.Pairs, p)
		sent++
		return len(chunk.Pairs) < exportChunk || flush()
	})
	if sendErr == nil {
		flush()
	}
	if sent == 0 && sendErr == nil {
		// An empty table still answers with its generation and size.
		sendErr = stream.Send(chunk)
	}
	return sendErr
}
