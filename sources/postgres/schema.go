package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// evolve handles the first staged change of a table in a new shape (the
// stream's Relation message changed): a shape the active contract already
// carries (a migration registered ahead: an announced change) is adopted;
// an additive one registers a new version at once; a breaking one halts
// the table and raises the alert.
func (s *Source) evolve(ctx context.Context, t *table, first *change) error {
	shape, err := loadShape(ctx, s.target, s.cfg.Name, t.key, first.shapeID)
	if err != nil {
		return err
	}
	if shape.sameAs(t.shape) {
		return s.setVersion(ctx, t, t.version, first.shapeID)
	}
	// An announced change: a newer active version already carries it.
	active, err := s.cfg.Registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: t.subject})
	if err != nil {
		return fmt.Errorf("read the active contract of %s: %w", t.subject, err)
	}
	ev := classifyShape(t.contract, shape)
	fills, volatile, err := s.addedColumnFills(ctx, t, t.shape, shape)
	if err != nil {
		return err
	}
	if v := active.GetVersion(); v.GetVersion() > t.version && len(volatile) == 0 {
		if ok, _ := accepts(v.GetContract(), shape); ok {
			s.log.Info("table changed as announced by a registered version", "table", t.key, "version", v.GetVersion())
			if err := s.switchReplica(ctx, t, v.GetContract(), fills); err != nil {
				return err
			}
			return s.setVersion(ctx, t, v.GetVersion(), first.shapeID)
		}
	}
	if len(ev.changes) == 0 {
		return s.setVersion(ctx, t, t.version, first.shapeID)
	}
	if len(volatile) > 0 {
		h := &Halt{
			Reason: "SCHEMA_CHANGE", ShapeID: first.shapeID, FromVersion: t.version, AtLSN: first.lsn,
			Changes: volatile, Proposed: proposedJSON(ev.proposed),
			Message: fmt.Sprintf("table %s changed at the source at %s: %s; the replica cannot take those values from the stream, so its changes are held. To have the replica equal the source, drop the source and start it again (a new snapshot); to accept NULL in the replica's existing rows instead, register a version of %s carrying the new columns (seam source postgres proposal %s)",
				t.key, lsnText(first.lsn), strings.Join(volatile, "; "), t.subject, t.key),
		}
		s.metrics.schemaChange(ctx, t.key, "breaking")
		return s.halt(ctx, t, h)
	}
	if !ev.breaking {
		version, model, err := s.registerAdditive(ctx, t, ev)
		if err != nil {
			return err
		}
		if err := s.readyReplica(ctx, t, ev.proposed, model, fills); err != nil {
			return err
		}
		s.log.Info("additive change registered", "table", t.key, "subject", t.subject, "version", version, "changes", strings.Join(changeLines(ev.changes), "; "))
		s.metrics.schemaChange(ctx, t.key, "additive")
		return s.setVersion(ctx, t, version, first.shapeID)
	}
	lines := breakingLines(ev.changes)
	model, err := s.canonicalOf(ctx, t.contract)
	if err != nil {
		return err
	}
	// The canonical model gets the new columns as optional fields now, as
	// for an additive change, so the proposal registers as printed.
	if next := extendCanonical(model, ev.proposed); next != nil && t.contract.GetMapping().GetCanonicalVersion() == 0 {
		if _, err := s.cfg.Registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: next}); err != nil {
			return fmt.Errorf("register canonical model %s with the new columns of %s: %w", model.GetName(), t.name, err)
		}
		model = next
	}
	notes := completeProposal(ev.proposed, model)
	h := &Halt{
		Reason: "SCHEMA_CHANGE", ShapeID: first.shapeID, FromVersion: t.version, AtLSN: first.lsn,
		Changes: lines, Proposed: proposedJSON(ev.proposed), ProposalNotes: notes,
		Message: fmt.Sprintf("table %s changed at the source at %s without a migration: %s; its changes are held in order until a version of %s that carries the new columns (with a mapping to %s) is registered and active",
			t.key, lsnText(first.lsn), strings.Join(lines, "; "), t.subject, t.contract.GetMapping().GetCanonical()),
	}
	if len(notes) > 0 {
		h.Message += "; the proposal needs editing first: " + strings.Join(notes, "; ")
	}
	s.metrics.schemaChange(ctx, t.key, "breaking")
	return s.halt(ctx, t, h)
}

// setVersion records the table's contract version and shape, and the
// relation's relfilenode the shape is taken on with (fill.go).
func (s *Source) setVersion(ctx context.Context, t *table, version int32, shapeID int) error {
	if shapeID != t.shapeID {
		filenode, err := relFilenode(ctx, s.source, t.name)
		if err != nil {
			return err
		}
		if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.shapes SET filenode = $4 WHERE connector = $1 AND source_table = $2 AND shape_id = $3 AND filenode IS NULL",
			s.cfg.Name, t.key, shapeID, filenode); err != nil {
			return fmt.Errorf("record the relfilenode of %s at shape %d: %w", t.name, shapeID, err)
		}
	}
	if err := s.adopt(ctx, t, version, shapeID); err != nil {
		return err
	}
	if _, err := s.target.Exec(ctx, `UPDATE seam_cdc.tables SET contract_version = $3, shape_id = $4, phase = 'stream', halt = NULL, updated_at = now()
 WHERE connector = $1 AND source_table = $2`, s.cfg.Name, t.key, version, shapeID); err != nil {
		return fmt.Errorf("record version %d of %s: %w", version, t.subject, err)
	}
	return nil
}

// halt stops applying a table: the halt is recorded first, then the alert
// raised (a restart raises it if the first attempt did not).
func (s *Source) halt(ctx context.Context, t *table, h *Halt) error {
	return s.haltWith(ctx, t, h, "")
}

// haltWith halts the table and, when openPartition is set, records it as
// the table's open partition in the same statement.
func (s *Source) haltWith(ctx context.Context, t *table, h *Halt, openPartition string) error {
	raw, err := json.Marshal(h)
	if err != nil {
		return err
	}
	// The batch in flight keeps its identity through a containment (it may
	// be in the gate already); a blocked one is sent again under the next
	// version, so its record goes.
	clear := h.Reason == "BATCH_BLOCKED"
	if _, err := s.target.Exec(ctx, `UPDATE seam_cdc.tables SET phase = 'halted', halt = $3,
       inflight_lsn = CASE WHEN $4 THEN NULL ELSE inflight_lsn END, inflight_seq = CASE WHEN $4 THEN NULL ELSE inflight_seq END,
       open_partition = coalesce(nullif($5, ''), open_partition), updated_at = now()
 WHERE connector = $1 AND source_table = $2`, s.cfg.Name, t.key, raw, clear, openPartition); err != nil {
		return fmt.Errorf("record the halt of %s: %w", t.key, err)
	}
	s.metrics.alert(ctx, t.key, h.Reason)
	if h.Reason != "SCHEMA_CHANGE" {
		// The gate raised its own alert (the block, the containment); the
		// halt's message, in status, carries the gate's notice.
		s.log.Warn("table held", "table", t.key, "reason", h.Reason, "message", h.Message)
		return nil
	}
	s.log.Error("table halted", "table", t.key, "reason", h.Reason, "message", h.Message)
	return s.raise(ctx, t, h)
}

// raise publishes a recorded halt's alert once and records its sequence.
func (s *Source) raise(ctx context.Context, t *table, h *Halt) error {
	seq, err := s.announceHalt(ctx, t, h)
	if err != nil {
		return err
	}
	h.AlertSequence = seq
	raw, _ := json.Marshal(h)
	if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.tables SET halt = $3 WHERE connector = $1 AND source_table = $2 AND halt IS NOT NULL",
		s.cfg.Name, t.key, raw); err != nil {
		return fmt.Errorf("record the alert of %s: %w", t.key, err)
	}
	return nil
}

// whileHalted counts the held changes and resumes the table once a newer
// active version carries its shape.
func (s *Source) whileHalted(ctx context.Context, t *table, st tableState) (bool, error) {
	h := st.Halt
	if h.AlertSequence == 0 && h.Reason == "SCHEMA_CHANGE" {
		if err := s.raise(ctx, t, h); err != nil {
			return false, err
		}
	}
	var held int64
	if err := s.target.QueryRow(ctx, "SELECT count(*) FROM seam_cdc.log WHERE connector = $1 AND source_table = $2", s.cfg.Name, t.key).Scan(&held); err != nil {
		return false, err
	}
	s.metrics.held(t.key, held)
	if h.Reason == "CONTAINED" {
		contained, err := s.contained(ctx, t.subject, true)
		if err != nil || contained {
			return false, err
		}
		if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.tables SET phase = 'stream', halt = NULL, updated_at = now() WHERE connector = $1 AND source_table = $2",
			s.cfg.Name, t.key); err != nil {
			return false, fmt.Errorf("record the release of %s: %w", t.key, err)
		}
		s.log.Info("source released; held changes apply in log order", "table", t.key, "held", held)
		return true, nil
	}
	if h.Reason == "PARTITION_BLOCKED" {
		cleared, why, err := s.partitionsCleared(ctx, t, h.Partitions)
		if err != nil {
			return false, err
		}
		if cleared {
			if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.tables SET phase = 'stream', halt = NULL, updated_at = now() WHERE connector = $1 AND source_table = $2",
				s.cfg.Name, t.key); err != nil {
				return false, fmt.Errorf("record the release of %s: %w", t.key, err)
			}
			s.log.Info("blocked partition cleared; held changes apply in log order", "table", t.key, "partitions", strings.Join(h.Partitions, ","), "held", held)
			return true, nil
		}
		s.log.Debug("partition still blocked", "table", t.key, "why", why)
	}
	active, err := s.cfg.Registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: t.subject})
	if err != nil {
		return false, fmt.Errorf("read the active contract of %s: %w", t.subject, err)
	}
	v := active.GetVersion()
	if v.GetVersion() <= h.FromVersion {
		return false, nil
	}
	shapeID := t.shapeID
	if h.Reason == "SCHEMA_CHANGE" {
		shapeID = h.ShapeID
	}
	shape, err := loadShape(ctx, s.target, s.cfg.Name, t.key, shapeID)
	if err != nil {
		return false, err
	}
	if ok, why := accepts(v.GetContract(), shape); !ok {
		s.log.Warn("the active version does not carry the table's columns; still halted", "table", t.key, "version", v.GetVersion(), "why", why)
		return false, nil
	}
	var fills []columnFill
	if shapeID != t.shapeID {
		// Rows that predate a column added with a constant default hold
		// it (a NOT NULL DEFAULT column halts as breaking, and lands here).
		if fills, _, err = s.addedColumnFills(ctx, t, t.shape, shape); err != nil {
			return false, err
		}
	}
	if err := s.switchReplica(ctx, t, v.GetContract(), fills); err != nil {
		return false, err
	}
	if err := s.setVersion(ctx, t, v.GetVersion(), shapeID); err != nil {
		return false, err
	}
	s.log.Info("table resumed through the migration version; held changes apply in log order", "table", t.key, "version", v.GetVersion(), "held", held)
	return true, nil
}

// switchReplica readies the replica for a contract version: the columns
// of its canonical model, and the added columns' defaults in the rows
// that predate them, in one transaction.
func (s *Source) switchReplica(ctx context.Context, t *table, c *contractv1.Contract, fills []columnFill) error {
	model, err := s.canonicalOf(ctx, c)
	if err != nil {
		return err
	}
	return s.readyReplica(ctx, t, c, model, fills)
}

// readyReplica gives the replica the columns of model, and the added
// columns' defaults in the rows that predate them, in one transaction.
func (s *Source) readyReplica(ctx context.Context, t *table, c *contractv1.Contract, model *contractv1.CanonicalModel, fills []columnFill) error {
	tx, err := s.target.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := ensureReplica(ctx, tx, s.cfg.TargetSchema, t.target, model); err != nil {
		return err
	}
	n, err := fillReplica(ctx, tx, s.cfg.TargetSchema, t.target, c, model, fills)
	if err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if len(fills) > 0 {
		s.log.Info("existing replica rows took the added columns' defaults", "table", t.key, "rows", n)
	}
	return nil
}

// partitionsCleared reports whether none of the partitions is doomed any
// more: a replay released its failing records (re-sealing it when it was
// sealed), or a replacement sent it corrected.
func (s *Source) partitionsCleared(ctx context.Context, t *table, parts []string) (bool, string, error) {
	for _, p := range parts {
		resp, err := s.cfg.Gate.GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: t.subject, Partition: p})
		if err != nil {
			if transient(err) {
				return false, err.Error(), nil
			}
			return false, "", fmt.Errorf("read partition %s of %s: %w", p, t.subject, err)
		}
		if blocking(resp.GetPartition()) {
			return false, resp.GetPartition().GetNotice(), nil
		}
	}
	return true, "", nil
}

// contained reports whether the gate contains subject. Answers are cached
// for a second unless fresh is asked.
func (s *Source) contained(ctx context.Context, subject string, fresh bool) (bool, error) {
	s.mu.Lock()
	stale := fresh || time.Since(s.containAt) > time.Second
	s.mu.Unlock()
	if stale {
		resp, err := s.cfg.Gate.ListContainments(ctx, &gatev1.ListContainmentsRequest{})
		if err != nil {
			return false, fmt.Errorf("read the gate's containments: %w", err)
		}
		set := map[string]bool{}
		for _, c := range resp.GetContainments() {
			if c.GetContained() {
				set[c.GetSubject()] = true
			}
		}
		s.mu.Lock()
		s.containSet, s.containAt = set, time.Now()
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.containSet[subject], nil
}
