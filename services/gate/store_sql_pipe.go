package gate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/platform/storage"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// A batch's commit on PostgreSQL is one round trip. Through database/sql
// it was about fourteen, each statement sent and waited for in turn: the
// claim, the partition's row and lock, its unit, the ends of its key
// index, the watermark, the writes, a quarantined record at a time, and
// BEGIN and COMMIT. Most of those reads only fetch what this process wrote
// itself, in the batch before: so it keeps the partition as it committed
// it (its row, its latest unit, the ends and keys of its key index) and,
// when it has them, sends the whole transaction as one pipelined pgx
// batch, from BEGIN to COMMIT, with guards in place of the reads:
//
//   - the partition's row is locked FOR UPDATE, and the statement that
//     locks it fails unless the row is the one cached;
//   - the next fails unless the unit is, column for column, the one cached;
//   - the next fails unless the key index's first and last run are the
//     ones the cached key set was read up to.
//
// They run after the lock, READ COMMITTED: each sees every transaction
// committed before it took the lock, as the reads they replace did. A
// guard that fails (another replica, a seal, a replay changed the
// partition), a claim whose key is taken (the plain INSERT fails on it),
// or anything else the batch cannot do without waiting for an answer (a
// seal, a replacement, an alert, a resend's held records) rolls the
// pipeline back, and the commit runs as before, as a transaction that
// reads what it needs: so a pipelined commit writes exactly what that
// transaction would have, or nothing. SQLite is in this process: its
// commits run as they did.

// errNotPipelined stops a pipelined commit that needs an answer from the
// store before it can go on; the commit runs as a transaction instead.
var errNotPipelined = errors.New("gate: the commit needs what a pipelined commit cannot read")

// partKey names a partition.
type partKey struct{ subject, part string }

// partState is a partition as this process last committed it: its row,
// and its latest unit (amendment p.amendment) as written.
type partState struct {
	p    partRow
	unit unitValues
}

// partWrites is what a transaction wrote of a partition: its row, its
// unit, whether it superseded its sending.
type partWrites struct {
	part       *partRow
	unit       unitValues
	superseded bool
}

// maxCachedParts bounds the partitions partCache holds (a few hundred
// bytes each, the unit's figures included).
const maxCachedParts = 4096

// partCache holds the partitions this process committed to last, for the
// pipelined commits; like the key cache, it is never the truth, only what
// the guards compare the store with.
type partCache struct {
	mu sync.Mutex
	m  map[partKey]partState
	// pipelined and fellBack count the commits sent as one pipeline and
	// those that had to run as a transaction after trying.
	pipelined, fellBack atomic.Int64
}

func newPartCache() *partCache { return &partCache{m: map[partKey]partState{}} }

func (c *partCache) get(k partKey) (partState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[k]
	return st, ok
}

func (c *partCache) drop(k partKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// committed records what a committed transaction wrote: a partition whose
// row and latest unit it wrote is cached as written; one it changed
// otherwise is dropped. (A transaction that wrote a unit alone leaves the
// cached partition as it was: a guard finds it changed.)
func (c *partCache) committed(writes map[int64]*partWrites) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range writes {
		if w.part == nil {
			continue
		}
		k := partKey{w.part.subject, w.part.part}
		if !w.unit.of(w.part.amendment) {
			delete(c.m, k)
			continue
		}
		if _, ok := c.m[k]; !ok && len(c.m) >= maxCachedParts {
			for old := range c.m { // any one: each is only a saved read
				delete(c.m, old)
				break
			}
		}
		c.m[k] = partState{p: *w.part, unit: w.unit}
	}
}

// InPartitionTx runs fn, a batch's commit to partition part of subject, in
// one transaction: pipelined in one round trip on PostgreSQL when this
// process committed the partition's last batch, else as InTx does.
func (s *sqlStore) InPartitionTx(ctx context.Context, subject, part string, fn func(tx storeTx) error) error {
	if s.db.Dialect == storage.Postgres {
		k := partKey{subject, part}
		if st, ok := s.parts.get(k); ok {
			if s.pipelined(ctx, k, st, fn) == nil {
				s.parts.pipelined.Add(1)
				return nil
			}
			s.parts.fellBack.Add(1)
			s.parts.drop(k)
		}
	}
	return s.InTx(ctx, fn)
}

// Statements only a pipelined commit sends.
const (
	pipeBeginSQL = `BEGIN ISOLATION LEVEL READ COMMITTED`
	// pipeStale ends a guard's statement: an integer only when the guard
	// holds, so the statement fails, and the transaction with it, when not.
	pipeStale    = ` THEN '0' ELSE 'seam: the partition changed since this gate cached it' END AS INTEGER)`
	lockGuardSQL = `SELECT CAST(CASE WHEN attempt = $2 AND amendment = $3 AND replaced_by = $4` + pipeStale + ` FROM gate_parts WHERE pid = $1 FOR UPDATE`
	unitGuardSQL = `SELECT CAST(CASE WHEN EXISTS (SELECT 1 FROM gate_units WHERE pid = $1 AND amendment = $2 AND status = $3 AND verdict = $4
	AND contract_version = $5 AND received = $6 AND accepted = $7 AND quarantined = $8 AND duplicates = $9 AND released = $10 AND batches = $11
	AND id_checked = $12 AND id_matched = $13 AND figures = $14 AND decision IS NOT DISTINCT FROM $15 AND opened_at = $16 AND updated_at = $17
	AND sealed_at = $18 AND seal_cause = $19 AND sealed_by = $20)` + pipeStale
	keyGuardSQL = `SELECT CAST(CASE WHEN COALESCE((SELECT min(id) FROM gate_key_runs WHERE pid = $1), 0) = $2
	AND COALESCE((SELECT max(id) FROM gate_key_runs WHERE pid = $1), 0) = $3` + pipeStale
	// The watermark moves in the statement, not after reading it: a batch
	// that does not move it still takes no lock on the subject's row (the
	// SELECT yields no row to insert).
	advanceWatermarkSQL = `INSERT INTO gate_watermarks (subject, event_time)
SELECT CAST($1 AS TEXT), CAST($2 AS BIGINT) WHERE NOT EXISTS (SELECT 1 FROM gate_watermarks WHERE subject = $1 AND event_time >= $2)
ON CONFLICT (subject) DO UPDATE SET event_time = excluded.event_time WHERE gate_watermarks.event_time < excluded.event_time`
	notifySQL = `SELECT pg_notify($1, '')`
)

// pipelined runs fn on a pipeTx and, when it asked for nothing the
// pipeline cannot answer, sends its statements between BEGIN and COMMIT as
// one batch. An error means nothing was written.
func (s *sqlStore) pipelined(ctx context.Context, k partKey, st partState, fn func(tx storeTx) error) error {
	t := &pipeTx{key: k, state: st, cache: s.keys, b: &pgx.Batch{}}
	t.b.Queue(pipeBeginSQL)
	committed := false
	defer func() {
		if t.view == nil {
			return
		}
		if committed {
			s.keys.put(t.view.merged())
		} else {
			s.keys.put(t.view.committed)
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	t.b.Queue("COMMIT")
	err := s.db.Pipeline(ctx, t.b, func(br pgx.BatchResults) error {
		runs := t.runAt
		for i := range t.b.Len() {
			if len(runs) > 0 && runs[0] == i {
				runs = runs[1:]
				if err := br.QueryRow().Scan(&t.view.run); err != nil {
					return err
				}
				continue
			}
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	committed = true
	s.parts.committed(map[int64]*partWrites{st.p.pid: &t.writes})
	return nil
}

// pipeTx is storeTx for a pipelined commit: it answers the reads of the
// cached partition from the cache, queuing the guards that check it, and
// queues the writes. What else a commit asks fails with errNotPipelined.
type pipeTx struct {
	key   partKey
	state partState
	cache *keyCache
	b     *pgx.Batch
	// unitGuarded is set once the unit's guard is queued.
	unitGuarded bool
	// view is the partition's key index, once InsertKeys took its set
	// from the cache; runAt are the positions in b of the key runs it
	// appends (each answering its id).
	view   *keyView
	runAt  []int
	writes partWrites
}

func (t *pipeTx) ClaimBatch(_ context.Context, k batchKey, digest []byte, at time.Time) (bool, error) {
	// No ON CONFLICT: a key taken fails the statement, and the pipeline;
	// the transaction after it finds the key taken.
	t.b.Queue(claimBatchSQL, claimBatchArgs(k, digest, at)...)
	return true, nil
}

func (t *pipeTx) LockPartition(_ context.Context, subject, part string, _ bool, _ time.Time) (partRow, bool, error) {
	if (partKey{subject, part}) != t.key {
		return partRow{}, false, errNotPipelined
	}
	p := t.state.p
	t.b.Queue(lockGuardSQL, p.pid, p.attempt, p.amendment, p.replacedBy)
	return p, true, nil
}

func (t *pipeTx) Unit(_ context.Context, pid int64, amendment int32) (unitRow, bool, error) {
	if pid != t.state.p.pid || !t.state.unit.of(amendment) {
		return unitRow{}, false, errNotPipelined
	}
	if !t.unitGuarded {
		t.b.Queue(unitGuardSQL, t.state.unit...)
		t.unitGuarded = true
	}
	u, err := scanUnit(t.state.unit)
	return u, err == nil, err
}

func (t *pipeTx) InsertKeys(_ context.Context, pid int64, hashes [][]byte) ([]bool, error) {
	if pid != t.state.p.pid {
		return nil, errNotPipelined
	}
	if t.view == nil {
		s := t.cache.take(pid)
		if s == nil {
			return nil, errNotPipelined
		}
		t.view = &keyView{committed: s}
		t.b.Queue(keyGuardSQL, pid, s.firstID, s.lastID)
	}
	fresh, run, err := t.view.decide(pid, hashes)
	if err != nil || len(run) == 0 {
		return fresh, err
	}
	t.runAt = append(t.runAt, t.b.Len())
	t.b.Queue(insertRunSQL, pid, run)
	return fresh, nil
}

func (t *pipeTx) InsertQuarantine(_ context.Context, rows []quarantineRow) error {
	for _, q := range rows {
		args, err := quarantineArgs(q)
		if err != nil {
			return err
		}
		t.b.Queue(insertQuarantineSQL, args...)
	}
	return nil
}

func (t *pipeTx) AdvanceWatermark(_ context.Context, subject string, at time.Time) error {
	t.b.Queue(advanceWatermarkSQL, subject, at.UnixNano())
	return nil
}

func (t *pipeTx) PutUnit(_ context.Context, u unitRow) error {
	vals, err := encodeUnit(u)
	if err != nil {
		return err
	}
	t.b.Queue(putUnitSQL, vals...)
	if u.pid == t.state.p.pid {
		t.writes.unit = vals
	}
	return nil
}

func (t *pipeTx) SetPartition(_ context.Context, p partRow, at time.Time) error {
	t.b.Queue(setPartitionSQL, setPartitionArgs(p, at)...)
	if p.pid == t.state.p.pid {
		t.writes.part = &p
	}
	return nil
}

func (t *pipeTx) FinishBatch(_ context.Context, k batchKey, b batchRow) error {
	t.b.Queue(finishBatchSQL, finishBatchArgs(k, b)...)
	return nil
}

func (t *pipeTx) PutAnswer(_ context.Context, k batchKey, form answerForm, records []byte, expires time.Time) error {
	// The caller reuses records once this returns; the batch is sent later.
	t.b.Queue(putAnswerSQL, k.subject, k.part, k.batchID, slices.Clone(records), expires.UnixNano(), int(form))
	return nil
}

func (t *pipeTx) Enqueue(ctx context.Context, e outboxEvent, at time.Time) error {
	t.b.Queue(enqueueSQL, e.EventID, slices.Clone(e.Payload), at.UnixNano())
	return t.Notify(ctx, outboxChannel)
}

func (t *pipeTx) Audit(_ context.Context, at time.Time, principal, subject, action, detail string) error {
	t.b.Queue(auditSQL, at.UnixNano(), principal, subject, action, detail)
	return nil
}

func (t *pipeTx) Notify(_ context.Context, channel string) error {
	t.b.Queue(notifySQL, channel)
	return nil
}

// What a pipelined commit cannot do: each needs an answer from the store
// to go on, or is no batch's everyday work (a seal, a replacement, an
// alert, a replay), and runs in the transaction after it.

func (t *pipeTx) HeldDigests(context.Context, string, string, []string) (map[string]bool, error) {
	return nil, errNotPipelined
}

func (t *pipeTx) Supersede(context.Context, partRow, time.Time) (int64, error) {
	return 0, errNotPipelined
}

func (t *pipeTx) Trailing(context.Context, string, string, map[string]int) (check.Trailing, error) {
	return nil, errNotPipelined
}

func (t *pipeTx) SetBaselineSkips(context.Context, int64, []string) error { return errNotPipelined }

func (t *pipeTx) InsertAlert(context.Context, *gatev1.Alert, string) (bool, error) {
	return false, errNotPipelined
}

func (t *pipeTx) NewShape(context.Context, string, string, string, string, time.Time) (bool, error) {
	return false, errNotPipelined
}

func (t *pipeTx) LearnedShapes(context.Context, string) (map[string]learnedField, error) {
	return nil, errNotPipelined
}

func (t *pipeTx) LearnShapes(context.Context, string, string, int32, []shapeFigure) error {
	return errNotPipelined
}

func (t *pipeTx) HoldingAlerts(context.Context, string, string, int32, time.Time) ([]*gatev1.Alert, error) {
	return nil, errNotPipelined
}

func (t *pipeTx) SetAlertState(context.Context, int64, gatev1.AlertState, string, string, time.Time) (*gatev1.Alert, bool, error) {
	return nil, false, errNotPipelined
}

func (t *pipeTx) Containment(context.Context, string) (containment, bool, error) {
	return containment{}, false, errNotPipelined
}

func (t *pipeTx) WriteContainment(context.Context, containment, string, outboxEvent) error {
	return errNotPipelined
}

func (t *pipeTx) Rewrite(context.Context, string, []*recordv1.RecordError) error {
	return errNotPipelined
}

func (t *pipeTx) Release(context.Context, releaseRow) (bool, error) { return false, errNotPipelined }
