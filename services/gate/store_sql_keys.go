package gate

import (
	"container/list"
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// The key index of a partition decides which records are duplicates: a
// record whose contract key the partition has taken before. It is kept as
// key runs: each batch appends one row holding the 16-byte hashes of the
// keys it added (gate_key_runs, ids never reused), and the store holds the
// hashes of each partition it works on in memory, so a batch's duplicate
// check is a lookup in a set and its write one appended row.
//
// A B-tree of (partition, hash) did the same with one random insert per
// key: a batch of a large partition touched about one index page per key
// and wrote each of them to the log on commit, half of the CPU of
// `seam gate ingest` of a 1,000,000-record partition.
//
// The memory is a cache of what is committed, never the truth: before a
// transaction uses a partition's set it reads the partition's first and
// last run id (two index seeks) and reads the runs it has not seen. A set
// whose first run is gone (the partition was sent again and its runs
// deleted) is rebuilt. So a rolled-back batch leaves nothing behind, and
// replicas sharing a PostgreSQL store each see the others' batches: a
// partition's batches run one at a time under its lock (LockPartition),
// PostgreSQL transactions run READ COMMITTED (platform/storage pins it),
// so the runs read after the lock include every batch committed before,
// and the runs a transaction reads are committed ones or its own.

// keySet is the key hashes of a partition's runs up to lastID.
type keySet struct {
	pid int64
	// firstID and lastID are the ids of the first and the last run read
	// into keys; zero when the partition had no runs.
	firstID, lastID int64
	keys            map[[16]byte]struct{}
	elem            *list.Element
}

// keyCache holds the key sets of the partitions most recently used, at
// most max keys (Config.KeyCacheKeys; 16 bytes each, about 30 with the
// set's overhead). The partitions used longest ago leave it first; a
// partition with more keys than max is read whole for each batch.
type keyCache struct {
	mu    sync.Mutex
	max   int
	sets  map[int64]*keySet
	lru   list.List // of *keySet, most recently used first
	total int
}

func newKeyCache(max int) *keyCache {
	return &keyCache{max: max, sets: map[int64]*keySet{}}
}

// take removes pid's set from the cache and returns it (nil when there is
// none): while a transaction uses a set it is the transaction's alone, and
// it goes back to the cache when the transaction's function returns.
func (c *keyCache) take(pid int64) *keySet {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sets[pid]
	if s == nil {
		return nil
	}
	delete(c.sets, pid)
	c.lru.Remove(s.elem)
	c.total -= len(s.keys)
	return s
}

// put returns a set to the cache, as committed up to its lastID, and
// evicts the sets used longest ago while the cache holds too many keys.
func (c *keyCache) put(s *keySet) {
	if len(s.keys) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.sets[s.pid]; old != nil {
		// Another transaction of this process read the same runs; keep
		// the one that read further.
		if old.lastID >= s.lastID && old.firstID == s.firstID {
			return
		}
		delete(c.sets, s.pid)
		c.lru.Remove(old.elem)
		c.total -= len(old.keys)
	}
	s.elem = c.lru.PushFront(s)
	c.sets[s.pid] = s
	c.total += len(s.keys)
	for c.total > c.max {
		last := c.lru.Back().Value.(*keySet)
		delete(c.sets, last.pid)
		c.lru.Remove(last.elem)
		c.total -= len(last.keys)
	}
}

// keyView is a partition's key index as one transaction sees it: the
// committed set, and the keys the transaction added (not yet committed;
// nil until it adds some).
type keyView struct {
	committed *keySet
	added     map[[16]byte]struct{}
	// run is the id of the last run the transaction wrote (0: none).
	run int64
}

// decide says which of hashes are new to v and adds them to it; run is
// their hashes, the run to append (empty when none is new).
func (v *keyView) decide(pid int64, hashes [][]byte) (fresh []bool, run []byte, err error) {
	for i, h := range hashes {
		if len(h) != 16 {
			return nil, nil, fmt.Errorf("index the keys of partition %d: key hash %d is %d bytes, want 16", pid, i, len(h))
		}
	}
	if v.added == nil {
		// Sized once for the batch rather than grown a doubling at a time.
		v.added = make(map[[16]byte]struct{}, len(hashes))
	}
	fresh = make([]bool, len(hashes))
	run = make([]byte, 0, 16*len(hashes))
	for i, h := range hashes {
		k := [16]byte(h)
		if v.has(k) {
			continue
		}
		v.added[k] = struct{}{}
		fresh[i] = true
		run = append(run, h...)
	}
	return fresh, run, nil
}

// merged returns the committed set with the transaction's keys, once it
// committed: its runs were written under the partition's lock, so no other
// run of the partition lies between the set's last and the transaction's.
func (v *keyView) merged() *keySet {
	s := v.committed
	if v.run == 0 {
		return s
	}
	for k := range v.added {
		s.keys[k] = struct{}{}
	}
	if s.firstID == 0 {
		s.firstID = v.run
	}
	s.lastID = v.run
	return s
}

func (v *keyView) has(k [16]byte) bool {
	if _, ok := v.added[k]; ok {
		return true
	}
	_, ok := v.committed.keys[k]
	return ok
}

// InsertKeys adds a batch's key hashes to a partition's key index, as one
// run, and says which were new. A key repeated within the batch is new at
// its first record only.
const insertRunSQL = `INSERT INTO gate_key_runs (pid, hashes) VALUES ($1, $2) RETURNING id`

func (t *sqlTx) InsertKeys(ctx context.Context, pid int64, hashes [][]byte) ([]bool, error) {
	v, err := t.keyView(ctx, pid)
	if err != nil {
		return nil, fmt.Errorf("index the keys of partition %d: %w", pid, err)
	}
	fresh, run, err := v.decide(pid, hashes)
	if err != nil || len(run) == 0 {
		return fresh, err
	}
	if err := t.db.QueryRow(ctx, t.tx, insertRunSQL, pid, run).Scan(&v.run); err != nil {
		return nil, fmt.Errorf("index the keys of partition %d: %w", pid, err)
	}
	return fresh, nil
}

// keyView returns pid's key index in this transaction, reading the runs
// committed since the cached set was read (or all of them).
func (t *sqlTx) keyView(ctx context.Context, pid int64) (*keyView, error) {
	if v := t.views[pid]; v != nil {
		return v, nil
	}
	// This transaction has written no run of pid yet, so every run it
	// reads is committed, and the set may go back to the cache as is.
	// Both ends in one statement (a round trip, on PostgreSQL), each a
	// subquery of its own: SQLite seeks the index for a lone min() or
	// max() but scans every run of pid for both in one SELECT.
	var first, last sql.NullInt64
	if err := t.db.QueryRow(ctx, t.tx, `SELECT (SELECT min(id) FROM gate_key_runs WHERE pid = $1), (SELECT max(id) FROM gate_key_runs WHERE pid = $1)`,
		pid).Scan(&first, &last); err != nil {
		return nil, err
	}
	s := t.cache.take(pid)
	if s != nil && s.lastID != 0 && (s.firstID != first.Int64 || s.lastID > last.Int64) {
		// The runs it was read from are gone: the partition was sent
		// again since.
		s = nil
	}
	if s == nil {
		s = &keySet{pid: pid, keys: map[[16]byte]struct{}{}}
	}
	if s.lastID < last.Int64 {
		if err := t.readRuns(ctx, s, last.Int64); err != nil {
			return nil, err
		}
	}
	s.firstID = first.Int64
	v := &keyView{committed: s}
	if t.views == nil {
		t.views = map[int64]*keyView{}
	}
	t.views[pid] = v
	return v, nil
}

// release returns the key sets this transaction used to the cache: with
// the keys it added when it committed, as they were before it when not.
func (t *sqlTx) release(committed bool) {
	for _, v := range t.views {
		if committed {
			t.cache.put(v.merged())
		} else {
			t.cache.put(v.committed)
		}
	}
	t.views = nil
}

// forget drops what this transaction knows of pid's key index, after it
// deleted the partition's runs.
func (t *sqlTx) forget(pid int64) {
	delete(t.views, pid)
}

// readRuns adds the runs of s's partition after s.lastID, up to last. On
// an error s holds part of them: the caller drops it.
func (t *sqlTx) readRuns(ctx context.Context, s *keySet, last int64) error {
	rows, err := t.db.Query(ctx, t.tx, `SELECT id, hashes FROM gate_key_runs WHERE pid = $1 AND id > $2 AND id <= $3 ORDER BY id`, s.pid, s.lastID, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	var hashes sql.RawBytes
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id, &hashes); err != nil {
			return err
		}
		if len(hashes)%16 != 0 {
			return fmt.Errorf("key run %d is %d bytes, not a whole number of 16-byte hashes", id, len(hashes))
		}
		for i := 0; i < len(hashes); i += 16 {
			s.keys[[16]byte(hashes[i:i+16])] = struct{}{}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.lastID = last
	return nil
}
