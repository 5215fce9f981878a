// Package rest serves a source's incident over REST, for the console.
package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/incident"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	"github.com/seamdata/seam/core/infer"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/server"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// Routes serve a source's incident to the console over REST, from the
// same Build, Preflight, Apply and Reconcile as `seam incident`, so the
// page and the command show one plan and carry out the same steps:
//
//	GET  /v1/subjects/{subject}/incident        the view, as `seam incident SUBJECT -o json` prints it
//	POST /v1/subjects/{subject}/incident:plan   the same with an uploaded pairs CSV (as --pairs)
//	POST /v1/subjects/{subject}/incident:apply  --apply: each step, the replay's progress, then the view, streamed
//
// The incident reads and changes three services (gate, registry, idmap)
// at once, so it is a route of `seam up`, where all three are one
// process, rather than an RPC of one of them. Every call it makes carries
// the caller's token: a viewer sees the plan, and only a caller the
// services let contain, register and replay (an admin, for the notice
// waiver) can apply it.
func Routes() []server.Route {
	return []server.Route{
		{Pattern: "GET /v1/subjects/{subject}/incident", New: handler(false)},
		{Pattern: "POST /v1/subjects/{subject}/incident:plan", New: handler(false)},
		{Pattern: "POST /v1/subjects/{subject}/incident:apply", New: handler(true)},
	}
}

// Request is the body of the POST routes.
type Request struct {
	// PairsCSV is the content of a new-id,target-id pairs CSV (--pairs);
	// PairsName its file name, shown in the steps.
	PairsCSV  string `json:"pairs_csv"`
	PairsName string `json:"pairs_name"`
	NoHeader  bool   `json:"no_header"`
	// Reason is --reason: kept with the containment, the notice waiver
	// and the backfill. Apply needs one.
	Reason string `json:"reason"`
}

func handler(apply bool) func(conn grpc.ClientConnInterface) http.Handler {
	return func(conn grpc.ClientConnInterface) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(w, r, conn, apply)
		})
	}
}

func serve(w http.ResponseWriter, r *http.Request, conn grpc.ClientConnInterface, apply bool) {
	subject := r.PathValue("subject")
	var req Request
	if r.Method == http.MethodPost {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			writeError(w, rpcerr.InvalidArgument(fmt.Sprintf("the body of %s %s is not a JSON incident request (pairs_csv, pairs_name, no_header, reason): %v", r.Method, r.URL.Path, err)))
			return
		}
	}
	// The inference's defaults, as `seam incident` has them without flags.
	o := incident.Options{Reason: req.Reason, NoHeader: req.NoHeader, Proposal: proposal.Options{Limit: proposal.DefaultLimit,
		Options: infer.Options{MinShare: infer.DefaultMinShare, MinCount: infer.DefaultMinCount}}}
	if req.PairsCSV != "" {
		o.PairsData = []byte(req.PairsCSV)
		o.Pairs = req.PairsName
		if o.Pairs == "" {
			o.Pairs = "pairs.csv"
		}
	}
	if apply && strings.TrimSpace(req.Reason) == "" {
		writeError(w, rpcerr.InvalidArgument("applying the fix needs a reason: it is kept with the containment, the notice waiver and the backfill"))
		return
	}
	// The caller's token goes with every call, as the gateway forwards it.
	ctx := metadata.AppendToOutgoingContext(r.Context(), "authorization", r.Header.Get("Authorization"))
	c := proposal.NewClients(conn)
	inc, err := incident.Build(ctx, c, subject, o)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if !apply {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(inc.View(nil, nil))
		return
	}
	// As a server stream of the gateway: one {"result": …} per line.
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(v map[string]any) {
		_ = enc.Encode(map[string]any{"result": v})
		_ = rc.Flush()
	}
	inc.OnStep = func(i int, s *incident.Step) {
		send(map[string]any{"step": map[string]any{"index": i, "of": len(inc.Steps), "step": s}})
	}
	inc.OnProgress = func(p *gatev1.ReplayProgress) {
		send(map[string]any{"progress": map[string]any{"partition": p.GetPartition(), "held": p.GetHeld(), "released": p.GetReleased(),
			"remaining": p.GetRemaining(), "done": p.GetDone(), "partitions": p.GetPartitions()}})
	}
	var rec *incident.Reconciliation
	applyErr := inc.Preflight(req.Reason)
	if applyErr == nil {
		if applyErr = inc.Apply(ctx, io.Discard, io.Discard); applyErr == nil {
			if rec, err = inc.Reconcile(ctx, c); err != nil {
				applyErr = fmt.Errorf("reconcile %s: %s", subject, status.Convert(err).Message())
			}
		}
	}
	send(map[string]any{"incident": inc.View(rec, applyErr)})
}

// writeError answers err in the gateway's error shape with its HTTP
// status: a gRPC status keeps its code, a bad pairs file is a 400.
func writeError(w http.ResponseWriter, err error) {
	st, ok := status.FromError(err)
	if !ok {
		code := codes.Internal
		var e *exit.Error
		if errors.As(err, &e) {
			code = codes.InvalidArgument
		}
		st = status.New(code, err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(runtime.HTTPStatusFromCode(st.Code()))
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(st.Code()), "message": st.Message(), "details": []any{}})
}
