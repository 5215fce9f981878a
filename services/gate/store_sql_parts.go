package gate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/platform/storage"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Partition rows.

const partColumns = `pid, subject, part, attempt, amendment, replaced_by`

func scanPart(row storage.Row) (partRow, error) {
	var p partRow
	err := row.Scan(&p.pid, &p.subject, &p.part, &p.attempt, &p.amendment, &p.replacedBy)
	return p, err
}

func (t *sqlTx) LockPartition(ctx context.Context, subject, part string, create bool, at time.Time) (partRow, bool, error) {
	if create {
		if _, err := t.db.Exec(ctx, t.tx, `INSERT INTO gate_parts (subject, part) VALUES ($1, $2) ON CONFLICT (subject, part) DO NOTHING`, subject, part); err != nil {
			return partRow{}, false, fmt.Errorf("create partition %s/%s: %w", subject, part, err)
		}
	}
	lock := ""
	if t.db.Dialect == storage.Postgres {
		lock = " FOR UPDATE" // SQLite transactions hold the whole database
	}
	p, err := scanPart(t.db.QueryRow(ctx, t.tx, `SELECT `+partColumns+` FROM gate_parts WHERE subject = $1 AND part = $2`+lock, subject, part))
	if errors.Is(err, sql.ErrNoRows) {
		return partRow{}, false, nil
	}
	if err != nil {
		return partRow{}, false, fmt.Errorf("lock partition %s/%s: %w", subject, part, err)
	}
	return p, true, nil
}

const setPartitionSQL = `UPDATE gate_parts SET attempt = $1, amendment = $2, replaced_by = $3, replaced_at = CASE WHEN replaced_by = $3 THEN replaced_at ELSE $4 END WHERE pid = $5`

func setPartitionArgs(p partRow, at time.Time) []any {
	return []any{p.attempt, p.amendment, p.replacedBy, at.UnixNano(), p.pid}
}

func (t *sqlTx) SetPartition(ctx context.Context, p partRow, at time.Time) error {
	if _, err := t.db.Exec(ctx, t.tx, setPartitionSQL, setPartitionArgs(p, at)...); err != nil {
		return fmt.Errorf("update partition %s/%s: %w", p.subject, p.part, err)
	}
	t.wrote(p.pid).part = &p
	return nil
}

// Units.

const unitColumns = `pid, amendment, status, verdict, contract_version, received, accepted, quarantined, duplicates, released, batches,
	id_checked, id_matched, figures, decision, opened_at, updated_at, sealed_at, seal_cause, sealed_by`

func scanUnit(row storage.Row) (unitRow, error) {
	var u unitRow
	var status, verdict, cause int32
	var figures, decision []byte
	var opened, updated, sealed int64
	c := &u.counts
	if err := row.Scan(&u.pid, &u.amendment, &status, &verdict, &u.version, &c.received, &c.accepted, &c.quarantined, &c.duplicates, &c.released, &c.batches,
		&c.idChecked, &c.idMatched, &figures, &decision, &opened, &updated, &sealed, &cause, &u.sealedBy); err != nil {
		return unitRow{}, err
	}
	u.status, u.verdict, u.sealCause = gatev1.PartitionStatus(status), gatev1.PartitionVerdict(verdict), gatev1.SealCause(cause)
	u.openedAt, u.updatedAt = time.Unix(0, opened), time.Unix(0, updated)
	if sealed != 0 {
		u.sealedAt = time.Unix(0, sealed)
	}
	if len(figures) > 0 {
		if err := json.Unmarshal(figures, &u.figures); err != nil {
			return unitRow{}, fmt.Errorf("decode the figures of partition %d amendment %d: %w", u.pid, u.amendment, err)
		}
		u.figures.renameV1()
	}
	if len(decision) > 0 {
		d := &gatev1.PartitionState{}
		if err := proto.Unmarshal(decision, d); err != nil {
			return unitRow{}, fmt.Errorf("decode the decision of partition %d amendment %d: %w", u.pid, u.amendment, err)
		}
		u.decision = d.GetChecks()
	}
	return u, nil
}

func (t *sqlTx) Unit(ctx context.Context, pid int64, amendment int32) (unitRow, bool, error) {
	u, err := scanUnit(t.db.QueryRow(ctx, t.tx, `SELECT `+unitColumns+` FROM gate_units WHERE pid = $1 AND amendment = $2`, pid, amendment))
	if errors.Is(err, sql.ErrNoRows) {
		return unitRow{}, false, nil
	}
	if err != nil {
		return unitRow{}, false, fmt.Errorf("read partition %d amendment %d: %w", pid, amendment, err)
	}
	return u, true, nil
}

const putUnitSQL = `INSERT INTO gate_units (` + unitColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
ON CONFLICT (pid, amendment) DO UPDATE SET status = excluded.status, verdict = excluded.verdict, contract_version = excluded.contract_version,
	received = excluded.received, accepted = excluded.accepted, quarantined = excluded.quarantined, duplicates = excluded.duplicates,
	released = excluded.released, batches = excluded.batches, id_checked = excluded.id_checked, id_matched = excluded.id_matched,
	figures = excluded.figures, decision = excluded.decision, updated_at = excluded.updated_at, sealed_at = excluded.sealed_at,
	seal_cause = excluded.seal_cause, sealed_by = excluded.sealed_by`

// unitValues are a unit's columns as PutUnit writes them, in unitColumns'
// order; scanUnit(unitValues(u)) reads them back as u.
type unitValues []any

func encodeUnit(u unitRow) (unitValues, error) {
	figures, err := json.Marshal(u.figures)
	if err != nil {
		return nil, fmt.Errorf("encode the figures of partition %d amendment %d: %w", u.pid, u.amendment, err)
	}
	var decision []byte
	if len(u.decision) > 0 {
		if decision, err = proto.Marshal(&gatev1.PartitionState{Checks: u.decision}); err != nil {
			return nil, fmt.Errorf("encode the decision of partition %d amendment %d: %w", u.pid, u.amendment, err)
		}
	}
	var sealed int64
	if !u.sealedAt.IsZero() {
		sealed = u.sealedAt.UnixNano()
	}
	c := u.counts
	return unitValues{u.pid, u.amendment, int32(u.status), int32(u.verdict), u.version, c.received, c.accepted, c.quarantined, c.duplicates, c.released, c.batches,
		c.idChecked, c.idMatched, figures, decision, u.openedAt.UnixNano(), u.updatedAt.UnixNano(), sealed, int32(u.sealCause), u.sealedBy}, nil
}

// of says whether v is a unit's values of amendment a.
func (v unitValues) of(a int32) bool {
	if len(v) < 2 {
		return false
	}
	got, ok := v[1].(int32)
	return ok && got == a
}

// Scan copies the values into dest, as a row of gate_units would.
func (v unitValues) Scan(dest ...any) error {
	if len(dest) != len(v) {
		return fmt.Errorf("scan %d values into %d columns", len(v), len(dest))
	}
	for i, d := range dest {
		val := v[i]
		if b, ok := val.([]byte); ok && b != nil {
			val = slices.Clone(b)
		}
		dv := reflect.ValueOf(d).Elem()
		sv := reflect.ValueOf(val)
		if !sv.Type().AssignableTo(dv.Type()) {
			return fmt.Errorf("scan column %d: a %s into a %s", i, sv.Type(), dv.Type())
		}
		dv.Set(sv)
	}
	return nil
}

func (t *sqlTx) PutUnit(ctx context.Context, u unitRow) error {
	vals, err := encodeUnit(u)
	if err != nil {
		return err
	}
	if _, err := t.db.Exec(ctx, t.tx, putUnitSQL, vals...); err != nil {
		return fmt.Errorf("write partition %d amendment %d: %w", u.pid, u.amendment, err)
	}
	t.wrote(u.pid).unit = vals
	return nil
}

func (t *sqlTx) Supersede(ctx context.Context, p partRow, at time.Time) (int64, error) {
	for _, q := range []string{`DELETE FROM gate_units WHERE pid = $1`, `DELETE FROM gate_key_runs WHERE pid = $1`, `DELETE FROM gate_baseline_skips WHERE pid = $1`} {
		if _, err := t.tx.ExecContext(ctx, q, p.pid); err != nil {
			return 0, fmt.Errorf("supersede partition %s/%s: %w", p.subject, p.part, err)
		}
	}
	t.forget(p.pid)
	t.wrote(p.pid).superseded = true
	res, err := t.tx.ExecContext(ctx, `UPDATE gate_quarantine SET state = $1, state_at = $2, state_reason = $3, state_by = $4
WHERE subject = $5 AND state = $6 AND part = $7`, int32(gatev1.QuarantineState_QUARANTINE_STATE_SUPERSEDED), at.UnixNano(),
		"superseded by a new sending of the partition", "gate", p.subject, int32(gatev1.QuarantineState_QUARANTINE_STATE_HELD), p.part)
	if err != nil {
		return 0, fmt.Errorf("supersede the quarantine of %s/%s: %w", p.subject, p.part, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("supersede the quarantine of %s/%s: %w", p.subject, p.part, err)
	}
	return n, nil
}

// allChecks, as a baseline skip, keeps a partition out of every check's
// baseline: it held records of a contained source.
const allChecks = "*"

func (t *sqlTx) Trailing(ctx context.Context, subject, part string, want map[string]int) (check.Trailing, error) {
	if len(want) == 0 {
		return nil, nil
	}
	out := check.Trailing{}
	stats := map[int64]check.Stats{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		n := want[name]
		if n <= 0 {
			continue
		}
		// Partitions whose first unit failed the check, or held contained
		// records, are skipped however far back the last that passed is:
		// an outage of any length keeps being judged against the days
		// before it.
		rows, err := t.tx.QueryContext(ctx, `SELECT p.pid, p.part FROM gate_parts p WHERE p.subject = $1 AND p.part < $2
	AND EXISTS (SELECT 1 FROM gate_units u WHERE u.pid = p.pid AND u.amendment = 0 AND u.status = $3)
	AND NOT EXISTS (SELECT 1 FROM gate_baseline_skips k WHERE k.pid = p.pid AND (k.check_name = $4 OR k.check_name = $5))
ORDER BY p.part DESC LIMIT $6`, subject, part, int32(gatev1.PartitionStatus_PARTITION_STATUS_SEALED), name, allChecks, n)
		type sealed struct {
			pid  int64
			part string
		}
		found, err := storage.ScanRows(rows, err, fmt.Sprintf("find the baseline of %s on %s/%s", name, subject, part), func(row storage.Row) (sealed, error) {
			var s sealed
			err := row.Scan(&s.pid, &s.part)
			return s, err
		})
		if err != nil {
			return nil, err
		}
		var samples []check.Sample
		for _, f := range found {
			st, ok := stats[f.pid]
			if !ok {
				if st, err = t.partitionStats(ctx, f.pid); err != nil {
					return nil, fmt.Errorf("read the baseline of %s/%s: %w", subject, part, err)
				}
				stats[f.pid] = st
			}
			samples = append(samples, check.Sample{Partition: f.part, Stats: st})
		}
		slices.Reverse(samples) // oldest first
		out[name] = samples
	}
	return out, nil
}

// partitionStats merges the statistics of a partition's sealed units.
func (t *sqlTx) partitionStats(ctx context.Context, pid int64) (check.Stats, error) {
	var st check.Stats
	rows, err := t.tx.QueryContext(ctx, `SELECT `+unitColumns+` FROM gate_units WHERE pid = $1 AND status = $2 ORDER BY amendment`,
		pid, int32(gatev1.PartitionStatus_PARTITION_STATUS_SEALED))
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		u, err := scanUnit(rows)
		if err != nil {
			return st, err
		}
		st.Merge(u.figures.Stats)
	}
	return st, rows.Err()
}

func (t *sqlTx) SetBaselineSkips(ctx context.Context, pid int64, checks []string) error {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM gate_baseline_skips WHERE pid = $1`, pid); err != nil {
		return fmt.Errorf("record the baseline skips of partition %d: %w", pid, err)
	}
	for _, name := range checks {
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO gate_baseline_skips (pid, check_name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, pid, name); err != nil {
			return fmt.Errorf("record the baseline skips of partition %d: %w", pid, err)
		}
	}
	return nil
}

func (s *sqlStore) OpenBefore(ctx context.Context, subject, cutoff string) ([]string, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT p.part FROM gate_parts p JOIN gate_units u ON u.pid = p.pid AND u.amendment = 0
WHERE p.subject = $1 AND p.part < $2 AND u.status = $3 ORDER BY p.part`, subject, cutoff, int32(gatev1.PartitionStatus_PARTITION_STATUS_OPEN))
	return storage.ScanRows(rows, err, fmt.Sprintf("list the open partitions of %s", subject), func(row storage.Row) (string, error) {
		var p string
		err := row.Scan(&p)
		return p, err
	})
}

func (t *sqlTx) AdvanceWatermark(ctx context.Context, subject string, at time.Time) error {
	// Most batches do not move the watermark: read first, so they take no
	// lock on the subject's row. Two that do race on the conditional
	// update, which PostgreSQL re-checks after waiting.
	var w int64
	err := t.db.QueryRow(ctx, t.tx, `SELECT event_time FROM gate_watermarks WHERE subject = $1`, subject).Scan(&w)
	switch {
	case err == nil && w >= at.UnixNano():
		return nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("read the watermark of %s: %w", subject, err)
	}
	if _, err := t.db.Exec(ctx, t.tx, `INSERT INTO gate_watermarks (subject, event_time) VALUES ($1, $2)
ON CONFLICT (subject) DO UPDATE SET event_time = excluded.event_time WHERE gate_watermarks.event_time < excluded.event_time`, subject, at.UnixNano()); err != nil {
		return fmt.Errorf("advance the watermark of %s: %w", subject, err)
	}
	return nil
}

func (s *sqlStore) Watermark(ctx context.Context, subject string) (time.Time, bool, error) {
	var w int64
	err := s.db.SQL.QueryRowContext(ctx, `SELECT event_time FROM gate_watermarks WHERE subject = $1`, subject).Scan(&w)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read the watermark of %s: %w", subject, err)
	}
	return time.Unix(0, w).UTC(), true, nil
}

// Reads outside transactions.

func (s *sqlStore) Head(ctx context.Context, subject, part string, amendment *int32) (partRow, unitRow, bool, error) {
	p, err := scanPart(s.db.QueryRow(ctx, nil, `SELECT `+partColumns+` FROM gate_parts WHERE subject = $1 AND part = $2`, subject, part))
	if errors.Is(err, sql.ErrNoRows) {
		return partRow{}, unitRow{}, false, nil
	}
	if err != nil {
		return partRow{}, unitRow{}, false, fmt.Errorf("read partition %s/%s: %w", subject, part, err)
	}
	a := p.amendment
	if amendment != nil {
		a = *amendment
	}
	u, err := scanUnit(s.db.QueryRow(ctx, nil, `SELECT `+unitColumns+` FROM gate_units WHERE pid = $1 AND amendment = $2`, p.pid, a))
	if errors.Is(err, sql.ErrNoRows) {
		return p, unitRow{pid: p.pid, amendment: a}, amendment == nil, nil
	}
	if err != nil {
		return partRow{}, unitRow{}, false, fmt.Errorf("read partition %s/%s amendment %d: %w", subject, part, a, err)
	}
	return p, u, true, nil
}

func (s *sqlStore) Units(ctx context.Context, subject, from, to string) ([]partUnits, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT `+partColumns+` FROM gate_parts WHERE subject = $1 AND part >= $2 AND part <= $3 ORDER BY part`, subject, from, to)
	parts, err := storage.ScanRows(rows, err, "read partitions of "+subject, scanPart)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	out := make([]partUnits, len(parts))
	byPid := map[int64]int{}
	for i, p := range parts {
		byPid[p.pid] = i
		out[i] = partUnits{part: p}
	}
	urows, err := s.db.SQL.QueryContext(ctx, `SELECT `+unitColumns+` FROM gate_units WHERE pid IN (SELECT pid FROM gate_parts WHERE subject = $1 AND part >= $2 AND part <= $3)
ORDER BY pid, amendment`, subject, from, to)
	if err != nil {
		return nil, fmt.Errorf("read partitions of %s: %w", subject, err)
	}
	defer urows.Close()
	for urows.Next() {
		u, err := scanUnit(urows)
		if err != nil {
			return nil, fmt.Errorf("read partitions of %s: %w", subject, err)
		}
		if i, ok := byPid[u.pid]; ok {
			out[i].units = append(out[i].units, u)
		}
	}
	return out, urows.Err()
}

func (s *sqlStore) PartitionAlerts(ctx context.Context, subject, part string, amendment int32, since time.Time) ([]*gatev1.Alert, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT `+alertColumns+` FROM gate_alerts WHERE subject = $1 AND part = $2 AND amendment = $3 AND at >= $4 ORDER BY seq`,
		subject, part, amendment, since.UnixNano())
	return storage.ScanRows(rows, err, fmt.Sprintf("list the alerts of %s/%s", subject, part), scanAlert)
}

func (s *sqlStore) FoldLegacyFields(ctx context.Context) error {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT DISTINCT pid FROM gate_legacy_fields`)
	pids, err := storage.ScanRows(rows, err, "read the field statistics of schema 4", func(row storage.Row) (int64, error) {
		var pid int64
		err := row.Scan(&pid)
		return pid, err
	})
	if err != nil {
		return err
	}
	for _, pid := range pids {
		err := s.InTx(ctx, func(tx storeTx) error {
			t := tx.(*sqlTx)
			lock := ""
			if t.db.Dialect == storage.Postgres {
				lock = " FOR UPDATE"
			}
			if _, err := t.tx.ExecContext(ctx, `SELECT pid FROM gate_parts WHERE pid = $1`+lock, pid); err != nil {
				return fmt.Errorf("lock partition %d: %w", pid, err)
			}
			frows, err := t.tx.QueryContext(ctx, `DELETE FROM gate_legacy_fields WHERE pid = $1 RETURNING field, count, nulls, numbers, mean, ids, matched`, pid)
			if err != nil {
				return fmt.Errorf("fold the field statistics of partition %d: %w", pid, err)
			}
			fields := map[string]check.FieldStats{}
			for frows.Next() {
				var name string
				var f check.FieldStats
				if err := frows.Scan(&name, &f.Count, &f.Nulls, &f.Numbers, &f.Mean, &f.IDs, &f.Matched); err != nil {
					frows.Close()
					return fmt.Errorf("fold the field statistics of partition %d: %w", pid, err)
				}
				fields[name] = f
			}
			frows.Close()
			if err := frows.Err(); err != nil {
				return fmt.Errorf("fold the field statistics of partition %d: %w", pid, err)
			}
			if len(fields) == 0 {
				return nil
			}
			u, ok, err := t.Unit(ctx, pid, 0)
			if err != nil || !ok {
				return err
			}
			u.figures.Stats.Rows = u.counts.received
			u.figures.Stats.Merge(check.Stats{Fields: fields})
			return t.PutUnit(ctx, u)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Batches.

func (s *sqlStore) Batch(ctx context.Context, k batchKey) (storedBatch, bool, error) {
	var b storedBatch
	var st int32
	var legacy, verdicts []byte
	var seqs string
	var at int64
	err := s.db.QueryRow(ctx, nil, `SELECT status, contract_version, received, accepted, quarantined, duplicates, amendment, attempt, response, digest, verdicts, alert_seqs, created_at
FROM gate_batches WHERE subject = $1 AND part = $2 AND batch_id = $3`, k.subject, k.part, k.batchID).
		Scan(&st, &b.version, &b.received, &b.accepted, &b.quarantined, &b.duplicates, &b.amendment, &b.attempt, &legacy, &b.digest, &verdicts, &seqs, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return storedBatch{}, false, nil
	}
	if err != nil {
		return storedBatch{}, false, fmt.Errorf("read batch %s of %s/%s: %w", k.batchID, k.subject, k.part, err)
	}
	b.status, b.verdicts, b.at = gatev1.BatchStatus(st), verdicts, time.Unix(0, at)
	for _, f := range strings.Fields(seqs) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return storedBatch{}, false, fmt.Errorf("read batch %s of %s/%s: alert sequence %q: %w", k.batchID, k.subject, k.part, f, err)
		}
		b.alertSeqs = append(b.alertSeqs, n)
	}
	if verdicts == nil && len(legacy) > 0 { // a whole answer, from before compact rows
		if b.status == gatev1.BatchStatus_BATCH_STATUS_BLOCKED {
			b.blocked = &gatev1.BlockedDetail{}
			err = proto.Unmarshal(legacy, b.blocked)
		} else {
			b.legacy = &gatev1.IngestResponse{}
			err = proto.Unmarshal(legacy, b.legacy)
		}
		if err != nil {
			return storedBatch{}, false, fmt.Errorf("decode stored batch %s of %s/%s: %w", k.batchID, k.subject, k.part, err)
		}
	}
	return b, true, nil
}

// claimBatchSQL inserts a batch's idempotency row; claimBatchSQL + onConflictNothing
// inserts it unless its key is taken.
const (
	claimBatchSQL = `INSERT INTO gate_batches (subject, part, batch_id, status, contract_version, received, accepted, quarantined, response, created_at, digest)
VALUES ($1, $2, $3, 0, 0, 0, 0, 0, $4, $5, $6)`
	onConflictNothing = ` ON CONFLICT (subject, part, batch_id) DO NOTHING`
)

func claimBatchArgs(k batchKey, digest []byte, at time.Time) []any {
	return []any{k.subject, k.part, k.batchID, []byte{}, at.UnixNano(), digest}
}

func (t *sqlTx) ClaimBatch(ctx context.Context, k batchKey, digest []byte, at time.Time) (bool, error) {
	res, err := t.db.Exec(ctx, t.tx, claimBatchSQL+onConflictNothing, claimBatchArgs(k, digest, at)...)
	if err != nil {
		return false, fmt.Errorf("claim batch %s of %s/%s: %w", k.batchID, k.subject, k.part, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claim batch %s: %w", k.batchID, err)
	}
	return n == 1, nil
}

const finishBatchSQL = `UPDATE gate_batches SET status = $1, contract_version = $2, received = $3, accepted = $4, quarantined = $5,
	duplicates = $6, amendment = $7, attempt = $8, verdicts = $9, alert_seqs = $10 WHERE subject = $11 AND part = $12 AND batch_id = $13`

func finishBatchArgs(k batchKey, b batchRow) []any {
	seqs := make([]string, len(b.alertSeqs))
	for i, s := range b.alertSeqs {
		seqs[i] = strconv.FormatInt(s, 10)
	}
	return []any{int32(b.status), b.version, b.received, b.accepted, b.quarantined, b.duplicates, b.amendment, b.attempt, b.verdicts, strings.Join(seqs, " "),
		k.subject, k.part, k.batchID}
}

func (t *sqlTx) FinishBatch(ctx context.Context, k batchKey, b batchRow) error {
	if _, err := t.db.Exec(ctx, t.tx, finishBatchSQL, finishBatchArgs(k, b)...); err != nil {
		return fmt.Errorf("store verdicts of batch %s: %w", k.batchID, err)
	}
	return nil
}

const putAnswerSQL = `INSERT INTO gate_answers (subject, part, batch_id, records, expires_at, form) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (subject, part, batch_id) DO UPDATE SET records = excluded.records, expires_at = excluded.expires_at, form = excluded.form`

func (t *sqlTx) PutAnswer(ctx context.Context, k batchKey, form answerForm, records []byte, expires time.Time) error {
	if _, err := t.db.Exec(ctx, t.tx, putAnswerSQL, k.subject, k.part, k.batchID, records, expires.UnixNano(), int(form)); err != nil {
		return fmt.Errorf("keep the answer of batch %s: %w", k.batchID, err)
	}
	return nil
}

func (s *sqlStore) Answer(ctx context.Context, k batchKey, now time.Time) (answerForm, []byte, bool, error) {
	var b []byte
	var form int
	err := s.db.QueryRow(ctx, nil, `SELECT form, records FROM gate_answers WHERE subject = $1 AND part = $2 AND batch_id = $3 AND expires_at > $4`,
		k.subject, k.part, k.batchID, now.UnixNano()).Scan(&form, &b)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("read the answer of batch %s: %w", k.batchID, err)
	}
	return answerForm(form), b, true, nil
}

func (s *sqlStore) QuarantineReasons(ctx context.Context, k batchKey) (map[int64][]*recordv1.RecordError, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT idx, reasons FROM gate_quarantine WHERE subject = $1 AND part = $2 AND batch_id = $3`, k.subject, k.part, k.batchID)
	if err != nil {
		return nil, fmt.Errorf("read the quarantine of batch %s: %w", k.batchID, err)
	}
	defer rows.Close()
	out := map[int64][]*recordv1.RecordError{}
	for rows.Next() {
		var idx int64
		var blob []byte
		if err := rows.Scan(&idx, &blob); err != nil {
			return nil, fmt.Errorf("read the quarantine of batch %s: %w", k.batchID, err)
		}
		v := &gatev1.RecordVerdict{}
		if err := proto.Unmarshal(blob, v); err != nil {
			return nil, fmt.Errorf("decode the reasons of record %d of batch %s: %w", idx, k.batchID, err)
		}
		out[idx] = v.GetReasons()
	}
	return out, rows.Err()
}

// expireLimit bounds the rows one retention statement deletes, so a large
// backlog is worked off in short transactions.
const expireLimit = 1000

func (s *sqlStore) Expire(ctx context.Context, now, batchesBefore, quarantineBefore time.Time) (int64, error) {
	steps := []struct {
		what, query string
		args        []any
	}{
		{"expired answers", `DELETE FROM gate_answers WHERE (subject, part, batch_id) IN
	(SELECT subject, part, batch_id FROM gate_answers WHERE expires_at <= $1 LIMIT $2)`, []any{now.UnixNano(), expireLimit}},
		{"idempotency rows", `DELETE FROM gate_batches WHERE (subject, part, batch_id) IN
	(SELECT subject, part, batch_id FROM gate_batches WHERE created_at < $1 LIMIT $2)`, []any{batchesBefore.UnixNano(), expireLimit}},
		{"answers of expired rows", `DELETE FROM gate_answers WHERE (subject, part, batch_id) IN
	(SELECT a.subject, a.part, a.batch_id FROM gate_answers a LEFT JOIN gate_batches b ON b.subject = a.subject AND b.part = a.part AND b.batch_id = a.batch_id
	WHERE b.batch_id IS NULL LIMIT $1)`, []any{expireLimit}},
		{"settled quarantine", `DELETE FROM gate_quarantine WHERE id IN
	(SELECT id FROM gate_quarantine WHERE state IN ($1, $2, $3) AND state_at < $4 LIMIT $5)`, []any{
			int32(gatev1.QuarantineState_QUARANTINE_STATE_RELEASED), int32(gatev1.QuarantineState_QUARANTINE_STATE_DISCARDED),
			int32(gatev1.QuarantineState_QUARANTINE_STATE_SUPERSEDED), quarantineBefore.UnixNano(), expireLimit}},
	}
	var total int64
	for _, st := range steps {
		for {
			res, err := s.db.SQL.ExecContext(ctx, st.query, st.args...)
			if err != nil {
				return total, fmt.Errorf("retention: delete %s: %w", st.what, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return total, fmt.Errorf("retention: delete %s: %w", st.what, err)
			}
			total += n
			if n < expireLimit {
				break
			}
			if err := ctx.Err(); err != nil {
				return total, err
			}
		}
	}
	if total > 0 {
		// Deleted rows free pages; give them back, so retention shrinks
		// the file and not only the tables.
		if err := s.db.ReclaimSpace(ctx); err != nil {
			return total, fmt.Errorf("retention: %w", err)
		}
	}
	return total, nil
}

// Contract versions.

func (s *sqlStore) Versions(ctx context.Context, subject string) ([]storedVersion, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT version, status, effective_at, data_effective_at FROM gate_contracts WHERE subject = $1 AND status <> 0 ORDER BY version`, subject)
	return storage.ScanRows(rows, err, fmt.Sprintf("read the known versions of %s", subject), func(row storage.Row) (storedVersion, error) {
		v := storedVersion{subject: subject}
		var status int32
		var eff, data int64
		if err := row.Scan(&v.version, &status, &eff, &data); err != nil {
			return v, err
		}
		v.status, v.effective = registryv1.VersionStatus(status), time.Unix(0, eff).UTC()
		if data != 0 {
			v.dataEffective = time.Unix(0, data).UTC()
		}
		return v, nil
	})
}
