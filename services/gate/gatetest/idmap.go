// Package gatetest holds in-process stand-ins for the gate's peers, for
// tests and benchmarks of the gate while the real idmap and adapter
// services are not functional: an idmap that answers Contains and
// Translate from tables held in memory, and an adapter that maps records
// with the core mapping compiler exactly as the real adapter is meant to.
package gatetest

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/idpack"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// Idmap is an in-memory idmap: sets of known ids per namespace and format,
// and lookup tables per direction.
type Idmap struct {
	idmapv1.UnimplementedIdMapServiceServer

	mu     sync.RWMutex
	known  map[string]map[string]bool   // "namespace/format" → ids
	tables map[string]map[string]string // "namespace/from/to" → from → to
	down   atomic.Bool
	calls  atomic.Int64
	packed atomic.Int64
}

// NewIdmap returns an empty Idmap.
func NewIdmap() *Idmap {
	return &Idmap{known: map[string]map[string]bool{}, tables: map[string]map[string]string{}}
}

// AddIDs makes ids known in namespace/format.
func (m *Idmap) AddIDs(namespace, format string, ids ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := namespace + "/" + format
	if m.known[k] == nil {
		m.known[k] = map[string]bool{}
	}
	for _, id := range ids {
		m.known[k][id] = true
	}
}

// AddPairs loads a lookup table from → to; the from ids become known in
// their format.
func (m *Idmap) AddPairs(namespace, from, to string, pairs map[string]string) {
	m.mu.Lock()
	k := namespace + "/" + from + "/" + to
	if m.tables[k] == nil {
		m.tables[k] = map[string]string{}
	}
	ids := make([]string, 0, len(pairs))
	for f, t := range pairs {
		m.tables[k][f] = t
		ids = append(ids, f)
	}
	m.mu.Unlock()
	m.AddIDs(namespace, from, ids...)
}

// SetDown makes every call fail with Unavailable, as an unreachable idmap.
func (m *Idmap) SetDown(down bool) { m.down.Store(down) }

// Calls counts the calls answered.
func (m *Idmap) Calls() int64 { return m.calls.Load() }

// Packed counts the Contains calls answered from packed ids.
func (m *Idmap) Packed() int64 { return m.packed.Load() }

// answer counts a call and read-locks the tables until done, or fails as
// an unreachable idmap does.
func (m *Idmap) answer() (done func(), err error) {
	if m.down.Load() {
		return nil, status.Error(codes.Unavailable, "idmap is down (test)")
	}
	m.calls.Add(1)
	m.mu.RLock()
	return m.mu.RUnlock, nil
}

// Contains answers which ids are known.
func (m *Idmap) Contains(_ context.Context, req *idmapv1.ContainsRequest) (*idmapv1.ContainsResponse, error) {
	done, err := m.answer()
	if err != nil {
		return nil, err
	}
	defer done()
	set := m.known[req.GetNamespace()+"/"+req.GetFormat()]
	ids := req.GetIds()
	if p := req.GetPacked(); p != nil {
		m.packed.Add(1)
		if ids, err = idpack.Strings(p); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	resp := &idmapv1.ContainsResponse{Present: make([]bool, len(ids))}
	for i, id := range ids {
		if set[id] {
			resp.Present[i] = true
			resp.Found++
		}
	}
	return resp, nil
}

// Translate answers from the lookup table of the direction.
func (m *Idmap) Translate(_ context.Context, req *idmapv1.TranslateRequest) (*idmapv1.TranslateResponse, error) {
	done, err := m.answer()
	if err != nil {
		return nil, err
	}
	defer done()
	table := m.tables[req.GetNamespace()+"/"+req.GetFromFormat()+"/"+req.GetToFormat()]
	resp := &idmapv1.TranslateResponse{Values: make([]string, len(req.GetIds())), Statuses: make([]idmapv1.TranslateStatus, len(req.GetIds()))}
	for i, id := range req.GetIds() {
		if v, ok := table[id]; ok {
			resp.Values[i], resp.Statuses[i] = v, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
			resp.Hits++
			continue
		}
		resp.Statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
	}
	return resp, nil
}
