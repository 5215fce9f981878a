package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// Apply moves each table's staged changes, in log order, through the gate
// into the replica and the outbox. A batch's boundaries are recorded
// (inflight_lsn, inflight_seq) before it is sent, so a restart sends the
// very same batch under the very same identity and the gate answers it
// from its idempotency record instead of ingesting it twice. A change
// whose shape differs from the table's contract is classified first:
// additive shapes register a new version and go on, breaking ones halt the
// table with its changes held here until a migration version is
// registered.

// applyLoop runs one table until ctx ends.
func (s *Source) applyLoop(ctx context.Context, t *table) error {
	select {
	case <-t.snapshotDone:
	case <-ctx.Done():
		return nil
	}
	if err := s.loadRuntime(ctx, t); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		progressed, err := s.step(ctx, t)
		if err != nil {
			if errors.Is(err, errStopped) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("table %s: %w", t.key, err)
		}
		if progressed {
			continue
		}
		select {
		case <-t.wake:
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// loadRuntime reads the table's contract version and shape.
func (s *Source) loadRuntime(ctx context.Context, t *table) error {
	st, err := loadTable(ctx, s.target, s.cfg.Name, t.key)
	if err != nil {
		return err
	}
	return s.adopt(ctx, t, st.Version, st.ShapeID)
}

// adopt makes version and shape the table's current ones in memory.
func (s *Source) adopt(ctx context.Context, t *table, version int32, shapeID int) error {
	cv, err := s.contractVersion(ctx, t.subject, version)
	if err != nil {
		return err
	}
	shape, err := loadShape(ctx, s.target, s.cfg.Name, t.key, shapeID)
	if err != nil {
		return err
	}
	rep, err := s.replicaFor(ctx, t, version)
	if err != nil {
		return err
	}
	t.version, t.contract, t.shapeID, t.shape, t.replica = version, cv.GetContract(), shapeID, shape, rep
	return nil
}

// step does one unit of work and reports whether it did any.
func (s *Source) step(ctx context.Context, t *table) (bool, error) {
	st, err := loadTable(ctx, s.target, s.cfg.Name, t.key)
	if err != nil {
		return false, err
	}
	if st.Halt != nil {
		resumed, err := s.whileHalted(ctx, t, st)
		if err != nil || !resumed {
			return false, err
		}
		return true, nil
	}
	rows, err := s.nextRows(ctx, t, st)
	if err != nil || len(rows) == 0 {
		s.metrics.held(t.key, 0)
		return false, err
	}
	first := rows[0]
	if first.shapeID != t.shapeID && first.op != 't' {
		return true, s.evolve(ctx, t, first)
	}
	if first.op == 't' {
		return true, s.applyTruncate(ctx, t, first)
	}
	// A contained source sends nothing: its changes wait here, in order,
	// instead of piling up in the gate's quarantine.
	if contained, err := s.contained(ctx, t.subject, false); err != nil {
		return false, err
	} else if contained {
		return true, s.halt(ctx, t, &Halt{Reason: "CONTAINED", FromVersion: t.version, AtLSN: first.lsn,
			Message: fmt.Sprintf("the gate contains %s: the changes of table %s are held in order until it is released", t.subject, t.key)})
	}
	// The stream passed into a new commit day: the day before is over,
	// and its partition is sealed before the new day's first batch.
	if day := s.dayOf(first.commitTime); st.OpenPartition != "" && st.OpenPartition != day {
		return true, s.sealDay(ctx, t, st.OpenPartition, day, first)
	}
	batch := rows
	if st.InflightLSN == nil {
		batch = s.cut(rows)
		last := batch[len(batch)-1]
		if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.tables SET inflight_lsn = $3, inflight_seq = $4 WHERE connector = $1 AND source_table = $2",
			s.cfg.Name, t.key, int64(last.lsn), last.seq); err != nil {
			return false, fmt.Errorf("record the batch being sent: %w", err)
		}
	}
	return true, s.applyBatch(ctx, t, st, batch)
}

// nextRows reads the next staged changes of the table: exactly the batch
// recorded in flight, or up to BatchRecords changes of transactions staged
// whole.
func (s *Source) nextRows(ctx context.Context, t *table, st tableState) ([]*change, error) {
	q := `SELECT commit_lsn, seq, op, shape_id, commit_time, flags, vals FROM seam_cdc.log
 WHERE connector = $1 AND source_table = $2 AND (commit_lsn, seq) > ($3, $4)`
	args := []any{s.cfg.Name, t.key, int64(st.AppliedLSN), st.AppliedSeq}
	if st.InflightLSN != nil {
		q += " AND (commit_lsn, seq) <= ($5, $6) ORDER BY commit_lsn, seq"
		args = append(args, int64(*st.InflightLSN), *st.InflightSeq)
	} else {
		q += " AND commit_lsn < (SELECT capture_lsn FROM seam_cdc.connectors WHERE name = $1) ORDER BY commit_lsn, seq LIMIT $5"
		args = append(args, s.cfg.BatchRecords)
	}
	rows, err := s.target.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read staged changes: %w", err)
	}
	defer rows.Close()
	var out []*change
	for rows.Next() {
		var ch change
		var lsn int64
		var op, flags string
		var vals []*string
		if err := rows.Scan(&lsn, &ch.seq, &op, &ch.shapeID, &ch.commitTime, &flags, &vals); err != nil {
			return nil, fmt.Errorf("read staged changes: %w", err)
		}
		ch.lsn, ch.op, ch.flags = uint64(lsn), op[0], []byte(flags)
		ch.vals = make([][]byte, len(vals))
		for i, v := range vals {
			if v != nil {
				ch.vals[i] = []byte(*v)
			}
		}
		out = append(out, &ch)
	}
	return out, rows.Err()
}

// cut ends a new batch before a change of shape, a truncate, a new commit
// day (a partition of the gate) or the byte bound.
func (s *Source) cut(rows []*change) []*change {
	first := rows[0]
	day := s.dayOf(first.commitTime)
	size := 0
	for i, ch := range rows {
		for _, v := range ch.vals {
			size += len(v)
		}
		if i > 0 && (ch.shapeID != first.shapeID || ch.op == 't' || s.dayOf(ch.commitTime) != day || size > s.cfg.BatchBytes) {
			return rows[:i]
		}
	}
	return rows
}

// image is what is known of a row's columns, by column index.
type image map[int]*string

// applyBatch sends one batch and writes its outcome.
func (s *Source) applyBatch(ctx context.Context, t *table, st tableState, batch []*change) error {
	first, last := batch[0], batch[len(batch)-1]
	send, skipped, err := s.prepare(ctx, t, st, batch)
	if err != nil {
		return err
	}
	var ans gateAnswer
	day := s.dayOf(first.commitTime)
	id := fmt.Sprintf("wal-%s.%d-%s.%d@v%d", lsnName(first.lsn), first.seq, lsnName(last.lsn), last.seq, t.version)
	if len(send) > 0 {
		b := newBatchBuilder(t.shape)
		for _, ch := range send {
			b.add(ch)
		}
		ans, err = s.ingest(ctx, t, t.replica, day, id, t.version, false, b)
		var blocked *blockedError
		if errors.As(err, &blocked) {
			return s.halt(ctx, t, &Halt{Reason: "BATCH_BLOCKED", FromVersion: t.version, AtLSN: first.lsn,
				Message: fmt.Sprintf("table %s halted: the gate blocked batch %s: %s; its changes are held until a new version of %s is active", t.key, id, blocked.msg, t.subject)})
		}
		if err != nil {
			return err
		}
	}
	tx, err := s.target.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := t.replica.apply(ctx, tx, ans.accepted); err != nil {
		return err
	}
	if err := s.publish(ctx, tx, t, t.version, ans.accepted); err != nil {
		return err
	}
	if err := s.markApplied(ctx, tx, t, last, int64(len(ans.accepted)), ans.quarantined, skipped); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "UPDATE seam_cdc.tables SET open_partition = $3 WHERE connector = $1 AND source_table = $2", s.cfg.Name, t.key, day); err != nil {
		return fmt.Errorf("record the open partition of %s: %w", t.key, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("apply changes up to %s.%d: %w", lsnText(last.lsn), last.seq, err)
	}
	s.metrics.applied(ctx, t.key, int64(len(ans.accepted)), last.commitTime)
	// The batch is in, like the day's batches before it; the partition
	// is doomed, so the changes after it are held. (A stop before this
	// halt is recorded finds the partition doomed again with the next
	// batch: will_block stays set while the partition is open.)
	if blocking(ans.partition) {
		return s.halt(ctx, t, &Halt{Reason: "PARTITION_BLOCKED", FromVersion: t.version, AtLSN: last.lsn, Partitions: []string{day},
			Message: fmt.Sprintf("table %s halted after batch %s: %s; its changes are held in order until a replay or a replacement clears the partition, or a newer version of %s is active",
				t.key, id, ans.partition.GetNotice(), t.subject)})
	}
	return nil
}

// dayOf is the stream partition of a commit time: its date in UTC.
func (s *Source) dayOf(commit time.Time) string {
	if s.cfg.partitionOf != nil {
		return s.cfg.partitionOf(commit)
	}
	return commit.UTC().Format(time.DateOnly)
}

// sealDay seals the table's day partition once the stream has passed into
// the next commit day, and records the new day as the open partition in
// the same statement as a halt when the day was sealed BLOCKED: the
// changes of the new day are then held.
func (s *Source) sealDay(ctx context.Context, t *table, day, next string, first *change) error {
	st, err := s.sealPartition(ctx, t, day)
	if err != nil {
		return err
	}
	if st.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED {
		if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.tables SET open_partition = $3, updated_at = now() WHERE connector = $1 AND source_table = $2",
			s.cfg.Name, t.key, next); err != nil {
			return fmt.Errorf("record the open partition of %s: %w", t.key, err)
		}
		return nil
	}
	return s.haltWith(ctx, t, &Halt{Reason: "PARTITION_BLOCKED", FromVersion: t.version, AtLSN: first.lsn, Partitions: []string{day},
		Message: fmt.Sprintf("table %s halted at the end of commit day %s: %s; its changes are held in order until a replay or a replacement clears the partition, or a newer version of %s is active",
			t.key, day, st.GetNotice(), t.subject)}, next)
}

// markApplied moves the table's position past last and drops the staged
// rows up to it.
func (s *Source) markApplied(ctx context.Context, tx pgx.Tx, t *table, last *change, accepted, quarantined, skipped int64) error {
	if _, err := tx.Exec(ctx, `UPDATE seam_cdc.tables SET applied_lsn = $3, applied_seq = $4, applied_count = applied_count + $5,
       quarantined = quarantined + $6, skipped = skipped + $7, inflight_lsn = NULL, inflight_seq = NULL, updated_at = now()
 WHERE connector = $1 AND source_table = $2`, s.cfg.Name, t.key, int64(last.lsn), last.seq, accepted, quarantined, skipped); err != nil {
		return fmt.Errorf("record the applied position: %w", err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM seam_cdc.log WHERE connector = $1 AND source_table = $2 AND (commit_lsn, seq) <= ($3, $4)",
		s.cfg.Name, t.key, int64(last.lsn), last.seq); err != nil {
		return fmt.Errorf("drop applied changes: %w", err)
	}
	return nil
}

// prepare completes changes that lack columns (deletes sent by key,
// unchanged TOAST values) from the replica's row or an earlier change of
// the batch, and leaves out changes the replica already reflects: after a
// restart in the middle of the snapshot, rows read in the later snapshot
// carry that snapshot's position, and changes committed before it are
// already in them. It returns the changes to send and how many were left
// out.
func (s *Source) prepare(ctx context.Context, t *table, st tableState, batch []*change) ([]*change, int64, error) {
	keyIdx := []int{}
	for i, c := range t.shape {
		if c.Key {
			keyIdx = append(keyIdx, i)
		}
	}
	keyOf := func(ch *change) string {
		var b strings.Builder
		for _, i := range keyIdx {
			b.Write(ch.vals[i])
			b.WriteByte(0)
		}
		return b.String()
	}
	need := map[string]*change{}
	var order []string
	for _, ch := range batch {
		if ch.lsn < st.SnapshotLSN || hasUnsentValues(ch) {
			k := keyOf(ch)
			if _, ok := need[k]; !ok {
				need[k] = ch
				order = append(order, k)
			}
		}
	}
	stored := map[string]storedRow{}
	if len(order) > 0 {
		var err error
		stored, err = s.lookup(ctx, t, keyIdx, order, need)
		if err != nil {
			return nil, 0, err
		}
	}
	images := map[string]image{}
	for k, r := range stored {
		images[k] = r.vals
	}
	var send []*change
	var skipped int64
	for _, ch := range batch {
		k := keyOf(ch)
		if r, ok := stored[k]; ok && ch.lsn < st.SnapshotLSN && ch.lsn < r.lsn {
			skipped++ // already in the row read by the later snapshot
			continue
		}
		img := images[k]
		if hasUnsentValues(ch) {
			if img == nil && ch.op == 'd' {
				skipped++ // a row the replica never held: nothing to tombstone
				continue
			}
			for i, f := range ch.flags {
				if f != 'u' || img == nil {
					continue
				}
				if v, ok := img[i]; ok {
					if v == nil {
						ch.flags[i] = 'n'
					} else {
						ch.flags[i], ch.vals[i] = 't', []byte(*v)
					}
				}
			}
		}
		next := image{}
		for i, f := range ch.flags {
			switch f {
			case 't':
				v := string(ch.vals[i])
				next[i] = &v
			case 'n':
				next[i] = nil
			}
		}
		images[k] = next
		send = append(send, ch)
	}
	return send, skipped, nil
}

func hasUnsentValues(ch *change) bool {
	for _, f := range ch.flags {
		if f == 'u' {
			return true
		}
	}
	return false
}

// storedRow is a replica row read back: its position and the values of
// the columns the contract maps one to one.
type storedRow struct {
	lsn  uint64
	vals image
}

// lookup reads the replica rows of the given keys. Columns come back by
// the source column they are mapped from one to one; others stay unknown.
func (s *Source) lookup(ctx context.Context, t *table, keyIdx []int, order []string, need map[string]*change) (map[string]storedRow, error) {
	rep := t.replica
	fieldOf := map[string]bool{}
	for _, f := range rep.fields {
		fieldOf[f.GetName()] = true
	}
	var cols []int // shape columns read back
	var sel []string
	for i, c := range t.shape {
		m := t.contract.GetMapping().GetFields()[c.Name]
		if m == nil || m.GetFrom() != c.Name || !fieldOf[c.Name] {
			continue
		}
		cols = append(cols, i)
		sel = append(sel, "r."+pgx.Identifier{c.Name}.Sanitize()+"::text")
	}
	var args []any
	var keys []*contractv1.Field
	for _, i := range keyIdx {
		col := t.shape[i]
		if !fieldOf[col.Name] {
			return map[string]storedRow{}, nil
		}
		vals := make([]string, len(order))
		for n, k := range order {
			vals[n] = string(need[k].vals[i])
		}
		args = append(args, vals)
		keys = append(keys, &contractv1.Field{Name: col.Name, Type: fieldType(col.Type)})
	}
	q := fmt.Sprintf("SELECT u.ord, r.%s%s FROM %s", FieldLSN, prefixComma(sel), rep.joinKeys(keys))
	rows, err := s.target.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read replica rows of %s: %w", t.key, err)
	}
	defer rows.Close()
	out := map[string]storedRow{}
	for rows.Next() {
		var ord int64
		var lsn *int64
		vals := make([]*string, len(cols))
		dest := []any{&ord, &lsn}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read replica rows of %s: %w", t.key, err)
		}
		r := storedRow{vals: image{}}
		if lsn != nil {
			r.lsn = uint64(*lsn)
		}
		for j, i := range cols {
			r.vals[i] = vals[j]
		}
		out[order[ord-1]] = r
	}
	return out, rows.Err()
}

func prefixComma(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return ", " + strings.Join(s, ", ")
}

// applyTruncate empties the replica (tombstones, or removes with hard
// deletes) and publishes a truncate change.
func (s *Source) applyTruncate(ctx context.Context, t *table, ch *change) error {
	tx, err := s.target.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	rep := t.replica
	if s.cfg.HardDeletes {
		_, err = tx.Exec(ctx, "DELETE FROM "+rep.ident)
	} else {
		_, err = tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = true, %s = 'd', %s = $1, %s = $2 WHERE (%s, %s) < ($1, $2) AND NOT %s",
			rep.ident, columnDeleted, FieldOp, FieldLSN, FieldSeq, FieldLSN, FieldSeq, columnDeleted), int64(ch.lsn), ch.seq)
	}
	if err != nil {
		return fmt.Errorf("truncate the replica of %s: %w", t.key, err)
	}
	rec, _ := json.Marshal(map[string]any{FieldOp: "t", FieldLSN: ch.lsn, FieldSeq: ch.seq, FieldCommitTime: ch.commitTime.UTC().Format(time.RFC3339Nano)})
	if err := s.publish(ctx, tx, t, t.version, []canonicalRow{{op: 't', lsn: ch.lsn, seq: ch.seq, json: rec}}); err != nil {
		return err
	}
	if err := s.markApplied(ctx, tx, t, ch, 0, 0, 0); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("truncate the replica of %s: %w", t.key, err)
	}
	s.log.Info("table truncated at the source; replica emptied", "table", t.key, "lsn", lsnText(ch.lsn))
	return nil
}
