package gatetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Adapter maps records with core/mapping: contracts and canonical models
// come from the registry over gRPC, identifier translations from idmap over
// gRPC, one Translate call per lookup per batch.
type Adapter struct {
	adapterv1.UnimplementedAdapterServiceServer

	registry registryv1.RegistryServiceClient
	idmap    idmapv1.IdMapServiceClient

	mu      sync.Mutex
	plans   map[string]*mapping.Plan
	down    atomic.Bool
	records atomic.Int64
	decoded atomic.Int64
}

// NewAdapter returns an Adapter using the given peers.
func NewAdapter(registry registryv1.RegistryServiceClient, idmap idmapv1.IdMapServiceClient) *Adapter {
	return &Adapter{registry: registry, idmap: idmap, plans: map[string]*mapping.Plan{}}
}

// SetDown makes every call fail with Unavailable, as an unreachable adapter.
func (a *Adapter) SetDown(down bool) { a.down.Store(down) }

// Records counts the records adapted, successfully or not.
func (a *Adapter) Records() int64 { return a.records.Load() }

// Decoded counts the records that came as decoded values, not raw bytes.
func (a *Adapter) Decoded() int64 { return a.decoded.Load() }

func (a *Adapter) plan(ctx context.Context, subject string, version int32) (*mapping.Plan, error) {
	key := fmt.Sprintf("%s@%d", subject, version)
	a.mu.Lock()
	p := a.plans[key]
	a.mu.Unlock()
	if p != nil {
		return p, nil
	}
	cv, err := a.registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject, Version: version})
	if err != nil {
		return nil, err
	}
	ct := cv.GetVersion().GetContract()
	m, err := a.registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: ct.GetMapping().GetCanonical(), Version: ct.GetMapping().GetCanonicalVersion()})
	if err != nil {
		return nil, err
	}
	p, err = mapping.CompileVersion(ct, m.GetVersion().GetModel(), m.GetVersion().GetVersion(), examples.CustomerCatalog())
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "compile mapping of %s: %v", key, err)
	}
	a.mu.Lock()
	a.plans[key] = p
	a.mu.Unlock()
	return p, nil
}

// Adapt maps one batch.
func (a *Adapter) Adapt(ctx context.Context, req *adapterv1.AdaptRequest) (*adapterv1.AdaptResponse, error) {
	if a.down.Load() {
		return nil, status.Error(codes.Unavailable, "adapter is down (test)")
	}
	p, err := a.plan(ctx, req.GetSubject(), req.GetVersion())
	if err != nil {
		return nil, err
	}
	dec := record.NewDecoder(p.Schema(), record.Options{})
	var b *record.Batch
	switch body := req.GetBatch().GetBody().(type) {
	case nil:
		if d := req.GetDecoded(); d != nil {
			if b, err = dec.DecodePacked(d.GetFields(), d.GetValues(), int(d.GetCount())); err == nil {
				a.decoded.Add(int64(len(b.Records)))
			}
			break
		}
		// As the adapter answers a call without a batch.
		return nil, rpcerr.InvalidArgument("invalid adapt request: batch: no records", rpcerr.FieldViolation{Field: "batch", Description: "no records"})
	case *recordv1.RecordBatch_Raw:
		b, err = dec.Decode(body.Raw.GetFormat(), body.Raw.GetData(), req.GetBatch().GetFirstOffset())
	case *recordv1.RecordBatch_Objects:
		b, err = dec.DecodeObjects(body.Objects.GetRecords(), req.GetBatch().GetFirstOffset())
	}
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decode: %v", err)
	}
	a.records.Add(int64(len(b.Records)))
	mb := p.Map(b.Records)
	for _, l := range mb.Lookups() {
		if len(l.IDs) == 0 {
			continue
		}
		tr, err := a.idmap.Translate(ctx, &idmapv1.TranslateRequest{Namespace: l.Namespace, FromFormat: l.From, ToFormat: l.To, Ids: l.IDs})
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "idmap: %v", err)
		}
		if err := l.Resolve(tr.GetValues(), tr.GetStatuses()); err != nil {
			return nil, status.Errorf(codes.Internal, "%v", err)
		}
	}
	results, err := mb.Results()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	canonical, cver := p.Canonical()
	resp := &adapterv1.AdaptResponse{Version: req.GetVersion(), Results: make([]*adapterv1.AdaptResult, len(results))}
	for i := range results {
		r := &results[i]
		out := &adapterv1.AdaptResult{Index: r.Index, Position: r.Position}
		if r.OK() {
			out.Record = &recordv1.CanonicalRecord{RecordId: r.ID.String(), Body: &recordv1.CanonicalRecord_Json{Json: p.AppendJSON(nil, r.Values)},
				Provenance: &recordv1.Provenance{Subject: req.GetSubject(), ContractVersion: req.GetVersion(), Canonical: canonical, CanonicalVersion: cver,
					Index: r.Index, Position: r.Position, Partition: req.GetPartition(), BatchId: req.GetBatchId()}}
			resp.Adapted++
		} else {
			out.Errors = r.RecordErrors()
			resp.Failed++
		}
		resp.Results[i] = out
	}
	return resp, nil
}
