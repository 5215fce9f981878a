package idmap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/seamdata/seam/platform/rpcerr"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"github.com/seamdata/seam/services/idmap/idtable"
)

// errConflicts aborts an import transaction under CONFLICT_POLICY_FAIL.
var errConflicts = errors.New("import has conflicts")

// tableTarget checks that from/to of ns may have a lookup table: both
// formats exist and no deterministic rule already covers both directions.
// With members it is the member list of from instead (to empty or equal),
// which rules never make redundant: they translate any valid id, while a
// member list says which ids exist.
func tableTarget(ns *nsState, from, to string, members bool) (TableKey, bool, error) {
	if _, err := formatOf(ns, "from_format", from); err != nil {
		return TableKey{}, false, err
	}
	if members {
		if to != "" && to != from {
			return TableKey{}, false, rpcerr.InvalidArgument("a member list belongs to one format",
				rpcerr.FieldViolation{Field: "to_format", Description: fmt.Sprintf("leave it empty or give %q, the format of the member list", from)})
		}
		return TableKey{Namespace: ns.spec.GetName(), A: from, B: from}, false, nil
	}
	if _, err := formatOf(ns, "to_format", to); err != nil {
		return TableKey{}, false, err
	}
	if from == to {
		return TableKey{}, false, rpcerr.InvalidArgument("from_format and to_format are the same",
			rpcerr.FieldViolation{Field: "to_format", Description: "must differ from from_format; to load the known ids of one format, import a member list (members: true)"})
	}
	covered := func(a, b string) bool {
		if c := ns.rules[[2]string{a, b}]; c != nil && !c.Lookup {
			return true
		}
		c := ns.rules[[2]string{b, a}]
		return c != nil && !c.Lookup && c.Reverse != nil
	}
	if covered(from, to) && covered(to, from) {
		return TableKey{}, false, rpcerr.FailedPrecondition("DETERMINISTIC_RULE",
			fmt.Sprintf("%s↔%s of %q is translated by a deterministic rule in both directions, so a table would never be read for translation; "+
				"to declare which ids exist (the population the match rate measures), import a member list of %s instead (seam idmap import %s FILE.csv --members %s)",
				from, to, ns.spec.GetName(), from, ns.spec.GetName(), from),
			map[string]string{"namespace": ns.spec.GetName()})
	}
	key, swapped := tableKey(ns.spec.GetName(), from, to)
	return key, swapped, nil
}

// ImportPairs bulk-loads a lookup table from a header and chunks of pairs,
// then commits it in one transaction and swaps the in-memory index.
func (s *Server) ImportPairs(stream grpc.ClientStreamingServer[idmapv1.ImportPairsRequest, idmapv1.ImportPairsResponse]) error {
	ctx := stream.Context()
	h, err := rpcerr.RecvHeader(stream.Recv, (*idmapv1.ImportPairsRequest).GetHeader, "import", "send an ImportHeader first")
	if err != nil {
		return err
	}
	ns, err := s.namespace(h.GetNamespace())
	if err != nil {
		return err
	}
	members := h.GetMembers()
	key, swapped, err := tableTarget(ns, h.GetFromFormat(), h.GetToFormat(), members)
	if err != nil {
		return err
	}
	from, to := ns.formats[h.GetFromFormat()], ns.formats[h.GetToFormat()]
	if members {
		to = from
	}
	var pairs [][2]string // in table orientation (A, B)
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		chunk := msg.GetChunk()
		if chunk == nil {
			return rpcerr.InvalidArgument("a second header in one import", rpcerr.FieldViolation{Field: "chunk", Description: "send the header once, then chunks"})
		}
		for _, p := range chunk.GetPairs() {
			line := len(pairs) + 1
			if line > s.cfg.MaxImportPairs {
				return rpcerr.InvalidArgument(fmt.Sprintf("import exceeds %d pairs", s.cfg.MaxImportPairs),
					rpcerr.FieldViolation{Field: "chunk.pairs", Description: "split the table, or raise MaxImportPairs"})
			}
			if members {
				if p.GetTo() != "" && p.GetTo() != p.GetFrom() {
					return rpcerr.InvalidArgument(fmt.Sprintf("pair %d: a member list takes one id per line, but to %q differs from from %q", line, p.GetTo(), p.GetFrom()),
						rpcerr.FieldViolation{Field: fmt.Sprintf("pairs[%d].to", line), Description: "leave it empty or repeat the id"})
				}
				p = &idmapv1.Pair{From: p.GetFrom(), To: p.GetFrom()}
			}
			if err := from.Check(p.GetFrom()); err != nil {
				return rpcerr.InvalidArgument(fmt.Sprintf("pair %d: from: %v", line, err),
					rpcerr.FieldViolation{Field: fmt.Sprintf("pairs[%d].from", line), Description: err.Error()})
			}
			if err := to.Check(p.GetTo()); err != nil {
				return rpcerr.InvalidArgument(fmt.Sprintf("pair %d: to: %v", line, err),
					rpcerr.FieldViolation{Field: fmt.Sprintf("pairs[%d].to", line), Description: err.Error()})
			}
			if swapped {
				pairs = append(pairs, [2]string{p.GetTo(), p.GetFrom()})
			} else {
				pairs = append(pairs, [2]string{p.GetFrom(), p.GetTo()})
			}
		}
	}
	resp, err := s.commitImport(ctx, ns, key, swapped, h, pairs)
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}

// importPlan is the outcome of checking an import against the committed table.
type importPlan struct {
	resp   *idmapv1.ImportPairsResponse
	change TableChange
	table  *idtable.Index
}

func (s *Server) commitImport(ctx context.Context, ns *nsState, key TableKey, swapped bool, h *idmapv1.ImportHeader, pairs [][2]string) (*idmapv1.ImportPairsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kindA, kindB := kindOf(ns.formats[key.A]), kindOf(ns.formats[key.B])
	var plan importPlan
	state, err := s.store.UpdateTable(ctx, key, func(c Committed) (TableChange, error) {
		cur, err := s.committedTable(key, c, kindA, kindB)
		if err != nil {
			return TableChange{}, err
		}
		if plan, err = s.planImport(cur, pairs, swapped, h.GetReplace()); err != nil {
			return TableChange{}, err
		}
		if len(plan.resp.Conflicts) > 0 && h.GetOnConflict() != idmapv1.ConflictPolicy_CONFLICT_POLICY_SKIP {
			return TableChange{}, errConflicts
		}
		plan.change.Audit = AuditEntry{Principal: s.cfg.Principal(ctx), Action: "import",
			Detail: fmt.Sprintf("%s→%s members=%v replace=%v received=%d inserted=%d unchanged=%d removed=%d conflicts=%d",
				h.GetFromFormat(), cmp.Or(h.GetToFormat(), h.GetFromFormat()), h.GetMembers(), h.GetReplace(), len(pairs), plan.resp.Inserted, plan.resp.Unchanged, plan.resp.Removed, len(plan.resp.Conflicts))}
		return plan.change, nil
	})
	if errors.Is(err, errConflicts) {
		plan.resp.Committed = false
		plan.resp.Inserted, plan.resp.Unchanged, plan.resp.Removed = 0, 0, 0
		if t := s.snap.Load().namespaces[key.Namespace].tables[[2]string{key.A, key.B}]; t != nil {
			plan.resp.Generation, plan.resp.TableSize = t.Generation, t.Pairs
		}
		return plan.resp, nil
	}
	if err != nil {
		return nil, internal("import", err)
	}
	plan.resp.Committed = true
	plan.resp.Generation, plan.resp.TableSize = state.Generation, state.Pairs
	if plan.table.Len() != int(state.Pairs) {
		// The index and the store disagree: serve what the store says.
		s.cfg.Logger.ErrorContext(ctx, "idmap: import index size differs from store; reloading", "index", plan.table.Len(), "store", state.Pairs)
		if _, err := s.reloadLocked(ctx); err != nil {
			return nil, internal("import", err)
		}
		return plan.resp, nil
	}
	s.publish(s.snap.Load().withTable(&tableState{TableState: state, table: plan.table}))
	return plan.resp, nil
}

// committedTable returns the committed table of the locked generation:
// the index in memory when it is that generation, the index brought
// forward by the change log when it is older, else the table read whole in
// the transaction.
func (s *Server) committedTable(key TableKey, c Committed, kindA, kindB idtable.Kind) (*idtable.Index, error) {
	if ns := s.snap.Load().namespaces[key.Namespace]; ns != nil {
		if t := ns.tables[[2]string{key.A, key.B}]; t != nil {
			if t.Generation == c.Generation {
				return t.table, nil
			}
			if t.Generation < c.Generation {
				idx, err := catchUp(t.table, t.Generation, c.Generation, c.Changes)
				if err == nil {
					return idx, nil
				}
				if !errors.Is(err, ErrNoChangeLog) {
					s.cfg.Logger.Warn("idmap: applying the change log failed; reading the whole table", "table", key, "error", err)
				}
			}
		}
	}
	if c.Generation == 0 {
		return idtable.NewIndex(idtable.Empty(kindA, kindB)), nil
	}
	var all [][2]string
	if err := c.LoadPairs(func(a, b string) error {
		all = append(all, [2]string{a, b})
		return nil
	}); err != nil {
		return nil, err
	}
	t, err := buildTable(kindA, kindB, all, nil, nil)
	if err != nil {
		return nil, err
	}
	return idtable.NewIndex(t), nil
}

// applyChange returns cur with change applied: in the overlay when the
// change is small, so it costs O(k); rebuilt at once when the change is
// larger than CompactAt or the table was empty, which costs about what
// writing the change costs anyway.
func (s *Server) applyChange(cur *idtable.Index, change TableChange) (*idtable.Index, error) {
	k := len(change.DeleteA) + len(change.Insert)
	if k == 0 {
		return cur, nil
	}
	if cur.Len() > 0 && k <= s.cfg.CompactAt {
		return cur.Apply(change.DeleteA, change.Insert)
	}
	drop := make(map[string]bool, len(change.DeleteA))
	for _, a := range change.DeleteA {
		drop[a] = true
	}
	kindA, kindB := cur.Kinds()
	t, err := buildTable(kindA, kindB, change.Insert, cur, drop)
	if err != nil {
		return nil, err
	}
	return idtable.NewIndex(t), nil
}

// buildTable builds a compact table of base's pairs (minus dropA) plus extra.
func buildTable(kindA, kindB idtable.Kind, extra [][2]string, base *idtable.Index, dropA map[string]bool) (*idtable.Table, error) {
	n := len(extra)
	if base != nil {
		n += base.Len()
	}
	b, err := idtable.NewBuilder(kindA, kindB, n)
	if err != nil {
		return nil, err
	}
	var addErr error
	if base != nil {
		base.Range(func(a, bID string) bool {
			if dropA[a] {
				return true
			}
			addErr = b.Add(a, bID)
			return addErr == nil
		})
		if addErr != nil {
			return nil, addErr
		}
	}
	for _, p := range extra {
		if err := b.Add(p[0], p[1]); err != nil {
			return nil, err
		}
	}
	return b.Build(), nil
}

// planImport checks pairs (table orientation) against cur and one another.
// A pair clashes when its A id already maps to another B id, or its B id
// is already mapped from another A id: in the import itself, or in the
// committed table when merging. The first pair wins; every later clash is a
// conflict reported with both sides, in the caller's orientation.
func (s *Server) planImport(cur *idtable.Index, pairs [][2]string, swapped, replace bool) (importPlan, error) {
	resp := &idmapv1.ImportPairsResponse{Received: int64(len(pairs))}
	byA := make(map[string]int, len(pairs))
	byB := make(map[string]int, len(pairs))
	accepted := make([][2]string, 0, len(pairs))
	var insert [][2]string
	caller := func(p [2]string) *idmapv1.Pair {
		if swapped {
			return &idmapv1.Pair{From: p[1], To: p[0]}
		}
		return &idmapv1.Pair{From: p[0], To: p[1]}
	}
	conflict := func(line int, p, existing [2]string, sideA bool, where string) {
		dir := "from"
		if sideA == swapped {
			dir = "to"
		}
		c := &idmapv1.Conflict{Pair: caller(p), Existing: caller(existing), Direction: dir, Line: int64(line)}
		if dir == "from" {
			c.Message = fmt.Sprintf("line %d: %q already maps to %q %s", line, c.Pair.From, c.Existing.To, where)
		} else {
			c.Message = fmt.Sprintf("line %d: %q is already mapped from %q %s", line, c.Pair.To, c.Existing.From, where)
		}
		resp.Conflicts = append(resp.Conflicts, c)
	}
	for i, p := range pairs {
		line := i + 1
		if j, ok := byA[p[0]]; ok {
			if accepted[j][1] != p[1] {
				conflict(line, p, accepted[j], true, "earlier in this import")
			}
			continue // an exact repeat is harmless
		}
		if j, ok := byB[p[1]]; ok {
			conflict(line, p, accepted[j], false, "earlier in this import")
			continue
		}
		curB, hasA := cur.LookupAB(p[0])
		if !replace {
			if hasA && curB != p[1] {
				conflict(line, p, [2]string{p[0], curB}, true, "in the table")
				continue
			}
			if curA, ok := cur.LookupBA(p[1]); ok && curA != p[0] {
				conflict(line, p, [2]string{curA, p[1]}, false, "in the table")
				continue
			}
		}
		byA[p[0]], byB[p[1]] = len(accepted), len(accepted)
		accepted = append(accepted, p)
		if hasA && curB == p[1] {
			resp.Unchanged++
		} else {
			insert = append(insert, p)
		}
	}
	plan := importPlan{resp: resp}
	resp.Inserted = int64(len(insert))
	if replace {
		// Everything not re-imported identically goes: its A id is
		// deleted, and pairs whose A id stays but whose B changed are
		// reinserted.
		cur.Range(func(a, b string) bool {
			if j, ok := byA[a]; !ok || accepted[j][1] != b {
				plan.change.DeleteA = append(plan.change.DeleteA, a)
				resp.Removed++
			}
			return true
		})
	}
	plan.change.Insert = insert
	var err error
	if plan.table, err = s.applyChange(cur, plan.change); err != nil {
		return plan, fmt.Errorf("index a checked import: %w", err)
	}
	return plan, nil
}

// UpsertPair sets the pair of one from id, replacing its previous pair.
func (s *Server) UpsertPair(ctx context.Context, req *idmapv1.UpsertPairRequest) (*idmapv1.UpsertPairResponse, error) {
	ns, err := s.namespace(req.GetNamespace())
	if err != nil {
		return nil, err
	}
	members := req.GetFromFormat() == req.GetToFormat()
	key, swapped, err := tableTarget(ns, req.GetFromFormat(), req.GetToFormat(), members)
	if err != nil {
		return nil, err
	}
	p := req.GetPair()
	if members && p.GetTo() == "" {
		p = &idmapv1.Pair{From: p.GetFrom(), To: p.GetFrom()}
	}
	if members && p.GetTo() != p.GetFrom() {
		return nil, rpcerr.InvalidArgument("a member list holds ids, not pairs",
			rpcerr.FieldViolation{Field: "pair.to", Description: fmt.Sprintf("leave it empty or repeat %q", p.GetFrom())})
	}
	if err := ns.formats[req.GetFromFormat()].Check(p.GetFrom()); err != nil {
		return nil, rpcerr.InvalidArgument(err.Error(), rpcerr.FieldViolation{Field: "pair.from", Description: err.Error()})
	}
	if err := ns.formats[req.GetToFormat()].Check(p.GetTo()); err != nil {
		return nil, rpcerr.InvalidArgument(err.Error(), rpcerr.FieldViolation{Field: "pair.to", Description: err.Error()})
	}
	if req.GetReason() == "" {
		return nil, rpcerr.InvalidArgument("reason is empty", rpcerr.FieldViolation{Field: "reason", Description: "say why the pair changes; it is kept in the audit log"})
	}
	// keyID is the caller's from id; otherID its partner, in table sides.
	keyID, otherID := p.GetFrom(), p.GetTo()
	var clash error
	changed, err := s.updatePairs(ctx, ns, key, func(cur *idtable.Index) (TableChange, error) {
		// The current partners of both ids, in table orientation.
		lookKey, lookOther := cur.LookupAB, cur.LookupBA
		if swapped {
			lookKey, lookOther = cur.LookupBA, cur.LookupAB
		}
		old, hasOld := lookKey(keyID)
		if owner, ok := lookOther(otherID); ok && owner != keyID {
			clash = rpcerr.FailedPrecondition("PAIR_CONFLICT",
				fmt.Sprintf("%s %q is already mapped from %s %q; delete that pair first", req.GetToFormat(), otherID, req.GetFromFormat(), owner),
				map[string]string{"existing_from": owner, "existing_to": otherID})
			return TableChange{}, clash
		}
		audit := AuditEntry{Principal: s.cfg.Principal(ctx), Action: "upsert_pair",
			Detail: fmt.Sprintf("%s→%s %q→%q (was %q): %s", req.GetFromFormat(), req.GetToFormat(), keyID, otherID, old, req.GetReason())}
		if hasOld && old == otherID {
			return TableChange{Audit: audit}, nil
		}
		pair := [2]string{keyID, otherID}
		if swapped {
			pair = [2]string{otherID, keyID}
		}
		change := TableChange{Insert: [][2]string{pair}, Audit: audit}
		if hasOld {
			a := keyID
			if swapped {
				a = old
			}
			change.DeleteA = []string{a}
		}
		return change, nil
	})
	if clash != nil && errors.Is(err, clash) {
		return nil, clash
	}
	if err != nil {
		return nil, internal("upsert pair", err)
	}
	return &idmapv1.UpsertPairResponse{Changed: changed}, nil
}

// DeletePair removes the pair of one from id.
func (s *Server) DeletePair(ctx context.Context, req *idmapv1.DeletePairRequest) (*idmapv1.DeletePairResponse, error) {
	ns, err := s.namespace(req.GetNamespace())
	if err != nil {
		return nil, err
	}
	key, swapped, err := tableTarget(ns, req.GetFromFormat(), req.GetToFormat(), req.GetFromFormat() == req.GetToFormat())
	if err != nil {
		return nil, err
	}
	if err := ns.formats[req.GetFromFormat()].Check(req.GetFrom()); err != nil {
		return nil, rpcerr.InvalidArgument(err.Error(), rpcerr.FieldViolation{Field: "from", Description: err.Error()})
	}
	if req.GetReason() == "" {
		return nil, rpcerr.InvalidArgument("reason is empty", rpcerr.FieldViolation{Field: "reason", Description: "say why the pair is deleted; it is kept in the audit log"})
	}
	deleted, err := s.updatePairs(ctx, ns, key, func(cur *idtable.Index) (TableChange, error) {
		a, partner := req.GetFrom(), ""
		var ok bool
		if swapped {
			partner, ok = cur.LookupBA(req.GetFrom())
			a = partner
		} else {
			partner, ok = cur.LookupAB(req.GetFrom())
		}
		audit := AuditEntry{Principal: s.cfg.Principal(ctx), Action: "delete_pair",
			Detail: fmt.Sprintf("%s→%s %q (was %q, present=%v): %s", req.GetFromFormat(), req.GetToFormat(), req.GetFrom(), partner, ok, req.GetReason())}
		if !ok {
			return TableChange{Audit: audit}, nil
		}
		return TableChange{DeleteA: []string{a}, Audit: audit}, nil
	})
	if err != nil {
		return nil, internal("delete pair", err)
	}
	return &idmapv1.DeletePairResponse{Deleted: deleted}, nil
}

// updatePairs changes key's table by the change plan makes of the
// committed table, under mu, and publishes the new index. A change with
// only an audit entry changes no pair: changed is false.
func (s *Server) updatePairs(ctx context.Context, ns *nsState, key TableKey, plan func(cur *idtable.Index) (TableChange, error)) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kindA, kindB := kindOf(ns.formats[key.A]), kindOf(ns.formats[key.B])
	var next *idtable.Index
	state, err := s.store.UpdateTable(ctx, key, func(c Committed) (TableChange, error) {
		next = nil
		cur, err := s.committedTable(key, c, kindA, kindB)
		if err != nil {
			return TableChange{}, err
		}
		change, err := plan(cur)
		if err != nil || len(change.DeleteA)+len(change.Insert) == 0 {
			return change, err
		}
		next, err = s.applyChange(cur, change)
		return change, err
	})
	if err != nil || next == nil {
		return false, err
	}
	s.publish(s.snap.Load().withTable(&tableState{TableState: state, table: next}))
	return true, nil
}
