package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// chunkBounds is one primary-key range of a snapshot: lo < key <= hi, each
// the text forms of the key columns; nil is open.
type chunkBounds struct{ lo, hi []string }

// planChunks splits a table into ranges of about size rows by its primary
// key, in the snapshot tx sees. It returns the ranges and the row count.
func planChunks(ctx context.Context, tx pgx.Tx, t TableName, s Shape, size int) ([]chunkBounds, int64, error) {
	var rows int64
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+t.ident()).Scan(&rows); err != nil {
		return nil, 0, fmt.Errorf("count the rows of %s: %w", t, err)
	}
	if rows <= int64(size) {
		return []chunkBounds{{}}, rows, nil
	}
	keys := keyList(s)
	var text []string
	for _, k := range s.keys() {
		text = append(text, pgx.Identifier{k.Name}.Sanitize()+"::text")
	}
	q := fmt.Sprintf("SELECT %s FROM (SELECT %s, row_number() OVER (ORDER BY %s) AS rn FROM %s) s WHERE rn %% $1 = 0 ORDER BY rn",
		strings.Join(text, ", "), keys, keys, t.ident())
	res, err := tx.Query(ctx, q, size)
	if err != nil {
		return nil, 0, fmt.Errorf("split %s into chunks: %w", t, err)
	}
	var bounds [][]string
	for res.Next() {
		vals, err := scanTexts(res, len(s.keys()))
		if err != nil {
			res.Close()
			return nil, 0, fmt.Errorf("split %s into chunks: %w", t, err)
		}
		bounds = append(bounds, vals)
	}
	if err := res.Err(); err != nil {
		return nil, 0, fmt.Errorf("split %s into chunks: %w", t, err)
	}
	out := make([]chunkBounds, 0, len(bounds)+1)
	var lo []string
	for _, b := range bounds {
		out = append(out, chunkBounds{lo: lo, hi: b})
		lo = b
	}
	out = append(out, chunkBounds{lo: lo})
	return out, rows, nil
}

// scanTexts reads the current row of res: n columns, each selected as text.
func scanTexts(res pgx.Rows, n int) ([]string, error) {
	vals := make([]string, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, res.Scan(ptrs...)
}

// keyList is the primary key columns, quoted and comma separated.
func keyList(s Shape) string {
	var q []string
	for _, k := range s.keys() {
		q = append(q, pgx.Identifier{k.Name}.Sanitize())
	}
	return strings.Join(q, ", ")
}

// keyCompare is "(k1, k2) op ($n::text::type1, $n+1::text::type2)".
func keyCompare(s Shape, op string, first int) string {
	var params []string
	for i, k := range s.keys() {
		params = append(params, fmt.Sprintf("$%d::text::%s", first+i, k.TypeName))
	}
	return fmt.Sprintf("(%s) %s (%s)", keyList(s), op, strings.Join(params, ", "))
}

// pendingChunk is a chunk not yet read whole.
type pendingChunk struct {
	table *table
	chunk int
	lo    []string
	hi    []string
	last  []string
	// started: batches of the chunk may have reached the gate in an
	// earlier run, so the chunk is resent whole, with replace.
	started bool
	// partition is the chunk's gate partition.
	partition string
}

// chunkPartition names the gate partition of a snapshot chunk: the
// handoff position (the consistent point, the same for every run of a
// source) and the chunk's number.
func chunkPartition(consistent uint64, chunk int) string {
	return fmt.Sprintf("snapshot-%s-chunk%d", lsnName(consistent), chunk)
}

// errSnapshotAged ends a snapshot pass whose workers' transactions reached
// the SnapshotTransactionLimit with chunks left to read.
var errSnapshotAged = errors.New("the snapshot's transactions reached their time limit")

// snapshotAll reads the snapshot in passes: each pass reads chunks in one
// exported snapshot until its workers' transactions are as old as
// SnapshotTransactionLimit; the chunks left are read in a fresh exported
// snapshot (resnapshot), with the exactness a restart has (docs/sources.md,
// "The handoff"). No transaction at the source outlives a pass.
func (s *Source) snapshotAll(ctx context.Context, snap *exportedSnapshot) error {
	for {
		err := s.snapshot(ctx, snap)
		if !errors.Is(err, errSnapshotAged) {
			return err
		}
		snap.close()
		s.metrics.snapshotRefreshed(ctx)
		if snap, err = s.resnapshot(ctx); err != nil {
			return err
		}
		defer snap.close()
	}
}

// snapshot reads every pending chunk in the exported snapshot with
// SnapshotWorkers workers, each in one repeatable-read transaction that
// imported the snapshot, and sends the rows through the gate to the
// replica. A table's stream is applied once all its chunks are done.
func (s *Source) snapshot(ctx context.Context, snap *exportedSnapshot) error {
	states, err := loadTables(ctx, s.target, s.cfg.Name)
	if err != nil {
		return err
	}
	shapes := map[string]Shape{}
	versions := map[string]int32{}
	for _, st := range states {
		if st.Phase != "snapshot" {
			continue
		}
		sh, err := loadShape(ctx, s.target, s.cfg.Name, st.Source, st.ShapeID)
		if err != nil {
			return err
		}
		shapes[st.Source] = sh
		versions[st.Source] = st.Version
	}
	// The snapshot must show the tables as their contracts describe them;
	// after a restart the fresh snapshot may not.
	if err := s.inSnapshot(ctx, snap, func(tx pgx.Tx) error {
		for key, sh := range shapes {
			now, err := readShape(ctx, tx, s.tables[key].name)
			if err != nil {
				return err
			}
			if !now.sameAs(sh) {
				return fmt.Errorf("table %s changed its columns while its snapshot was interrupted; the remaining chunks cannot be read as its contract describes them: drop the source (seam source postgres drop --name %s) and start it again", key, s.cfg.Name)
			}
		}
		return nil
	}); err != nil {
		return err
	}

	conn, _, err := loadConnector(ctx, s.target, s.cfg.Name)
	if err != nil {
		return err
	}
	rows, err := s.target.Query(ctx, `SELECT source_table, chunk, lo, hi, last, started FROM seam_cdc.chunks
 WHERE connector = $1 AND NOT done ORDER BY source_table, chunk`, s.cfg.Name)
	if err != nil {
		return fmt.Errorf("read the pending chunks: %w", err)
	}
	var work []pendingChunk
	left := map[string]int{}
	for rows.Next() {
		var p pendingChunk
		var name string
		if err := rows.Scan(&name, &p.chunk, &p.lo, &p.hi, &p.last, &p.started); err != nil {
			rows.Close()
			return fmt.Errorf("read the pending chunks: %w", err)
		}
		p.table = s.tables[name]
		if p.table == nil {
			continue
		}
		p.partition = chunkPartition(conn.ConsistentLSN, p.chunk)
		work = append(work, p)
		left[name]++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the pending chunks: %w", err)
	}
	if snap.resumed {
		if err := s.recountRows(ctx, snap, work, shapes); err != nil {
			return err
		}
	}
	// Tables whose chunks were all done before a crash finish now.
	for key := range shapes {
		if left[key] == 0 {
			if err := s.finishTableSnapshot(ctx, s.tables[key]); err != nil {
				return err
			}
		}
	}
	s.reportProgress(ctx)

	var mu sync.Mutex
	queue := make(chan pendingChunk)
	// stopFeed ends the feeding once every worker is gone, also when they
	// left chunks in the queue because their transactions aged.
	stopFeed := make(chan struct{})
	var aged atomic.Bool
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(queue)
		for _, w := range work {
			select {
			case queue <- w:
			case <-gctx.Done():
				return nil
			case <-stopFeed:
				return nil
			}
		}
		return nil
	})
	// Once every worker has imported the snapshot its exporter is no longer
	// needed: closing it ends its transaction and drops a resumed
	// snapshot's temporary slot, so neither outlives the read. The
	// workers' own transactions end with their last chunk.
	workers := min(s.cfg.SnapshotWorkers, max(len(work), 1))
	var importedN sync.WaitGroup
	importedN.Add(workers)
	go func() {
		importedN.Wait()
		snap.close()
		s.log.Info("snapshot imported by every worker; its exporting transaction is closed", "lsn", lsnText(snap.lsn))
	}()
	var running sync.WaitGroup
	running.Add(workers)
	go func() {
		running.Wait()
		close(stopFeed)
	}()
	for range workers {
		var once sync.Once
		imported := func() { once.Do(importedN.Done) }
		g.Go(func() error {
			defer running.Done()
			defer imported() // a worker that failed to import releases the exporter too
			began := time.Now()
			return s.inSnapshotThen(gctx, snap, imported, func(tx pgx.Tx) error {
				for {
					if limit := s.cfg.SnapshotTransactionLimit; limit > 0 && time.Since(began) >= limit {
						// Between chunks: the transaction ends here, and the
						// chunks left wait for a fresh snapshot.
						aged.Store(true)
						return nil
					}
					p, ok := <-queue
					if !ok {
						return nil
					}
					if err := s.readChunk(gctx, tx, snap.lsn, p, shapes[p.table.key], versions[p.table.key]); err != nil {
						return err
					}
					mu.Lock()
					left[p.table.key]--
					last := left[p.table.key] == 0
					mu.Unlock()
					if last {
						if err := s.finishTableSnapshot(gctx, p.table); err != nil {
							return err
						}
					}
					s.reportProgress(gctx)
				}
			})
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if aged.Load() {
		mu.Lock()
		unread := 0
		for _, n := range left {
			unread += n
		}
		mu.Unlock()
		if unread > 0 {
			s.log.Info("the snapshot's transactions reached their time limit; the chunks left are read in a fresh snapshot",
				"limit", s.cfg.SnapshotTransactionLimit, "chunks_left", unread, "lsn", lsnText(snap.lsn))
			return errSnapshotAged
		}
	}
	if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.connectors SET phase = 'stream', updated_at = now() WHERE name = $1 AND phase = 'snapshot'", s.cfg.Name); err != nil {
		return fmt.Errorf("record the end of the snapshot: %w", err)
	}
	s.log.Info("snapshot done; every table streams from the handoff position")
	return nil
}

// recountRows sets each resumed table's snapshot total to what the
// snapshot will have published when it is done: the rows its chunks
// published in earlier runs, plus the rows its pending chunks hold beyond
// the key they had applied, in the fresh snapshot. The first run's count
// no longer holds (rows came and went between the two snapshots), and
// progress would read over 100%. A row a resent chunk publishes at or
// before that key (one the replica lacks) is added to the total as it is
// found (applySnapshotPart).
func (s *Source) recountRows(ctx context.Context, snap *exportedSnapshot, work []pendingChunk, shapes map[string]Shape) error {
	pending := map[string]int64{}
	err := s.inSnapshot(ctx, snap, func(tx pgx.Tx) error {
		for _, p := range work {
			shape := shapes[p.table.key]
			var where []string
			var args []any
			lo := p.lo
			if p.started && p.last != nil {
				lo = p.last
			}
			if lo != nil {
				where = append(where, keyCompare(shape, ">", len(args)+1))
				for _, v := range lo {
					args = append(args, v)
				}
			}
			if p.hi != nil {
				where = append(where, keyCompare(shape, "<=", len(args)+1))
				for _, v := range p.hi {
					args = append(args, v)
				}
			}
			q := "SELECT count(*) FROM " + p.table.name.ident()
			if len(where) > 0 {
				q += " WHERE " + strings.Join(where, " AND ")
			}
			var n int64
			if err := tx.QueryRow(ctx, q, args...).Scan(&n); err != nil {
				return fmt.Errorf("count chunk %d of %s: %w", p.chunk, p.table.name, err)
			}
			pending[p.table.key] += n
		}
		return nil
	})
	if err != nil {
		return err
	}
	for key, n := range pending {
		if _, err := s.target.Exec(ctx, `UPDATE seam_cdc.tables t SET rows_total = $3 + coalesce((SELECT sum(c.rows_done) FROM seam_cdc.chunks c
   WHERE c.connector = t.connector AND c.source_table = t.source_table), 0), updated_at = now()
 WHERE connector = $1 AND source_table = $2`, s.cfg.Name, key, n); err != nil {
			return fmt.Errorf("record the snapshot total of %s: %w", key, err)
		}
	}
	return nil
}

// readChunk reads one chunk in batches sent through the gate to the
// chunk's partition; each batch lands in the replica with the chunk's
// progress in one transaction. A chunk started in an earlier run is read
// whole again and its first batch replaces the partition's earlier
// sending, so the gate counts each row of the chunk once; the rows up to
// the key the chunk had applied go to the gate only (the replica and the
// stream have them), unless the replica lacks their key. A read chunk's
// partition is sealed.
func (s *Source) readChunk(ctx context.Context, tx pgx.Tx, lsn uint64, p pendingChunk, shape Shape, version int32) error {
	var where []string
	var args []any
	add := func(op string, vals []string) {
		if vals == nil {
			return
		}
		where = append(where, keyCompare(shape, op, len(args)+1))
		for _, v := range vals {
			args = append(args, v)
		}
	}
	add(">", p.lo)
	add("<=", p.hi)
	if !p.started {
		add(">", p.last)
	}
	var cols []string
	for _, c := range shape {
		cols = append(cols, pgx.Identifier{c.Name}.Sanitize())
	}
	resend := p.started && p.last != nil
	var gone []*change
	if resend {
		// Rows the chunk published before and the fresh snapshot no longer
		// holds (deleted since; their deletes follow in the stream) go to
		// the replaced partition too, from the replica, to the gate only:
		// the partition then counts what the chunk published. Read before
		// the chunk's query, which holds tx's connection.
		var err error
		if gone, err = s.vanishedRows(ctx, tx, p, shape, version); err != nil {
			return err
		}
		// The last column says whether the row is at or before the key the
		// chunk had applied.
		cols = append(cols, keyCompare(shape, "<=", len(args)+1))
		for _, v := range p.last {
			args = append(args, v)
		}
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(cols, ", "), p.table.name.ident())
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + keyList(shape)
	rows, err := tx.Query(ctx, q, append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
	if err != nil {
		return fmt.Errorf("read chunk %d of %s: %w", p.chunk, p.table.name, err)
	}
	defer rows.Close()
	keyIdx := []int{}
	for i, c := range shape {
		if c.Key {
			keyIdx = append(keyIdx, i)
		}
	}
	b := newBatchBuilder(shape)
	part := 0
	var lastKey []string
	replace := p.started
	warned := false
	send := func() error {
		if b.count == 0 {
			return nil
		}
		if !p.started {
			// Recorded before the first batch can reach the gate: a restart
			// then knows the partition may hold a sending to replace.
			if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.chunks SET started = true WHERE connector = $1 AND source_table = $2 AND chunk = $3",
				s.cfg.Name, p.table.key, p.chunk); err != nil {
				return fmt.Errorf("record chunk %d of %s started: %w", p.chunk, p.table.name, err)
			}
			p.started = true
		}
		id := fmt.Sprintf("snapshot-%s-chunk%d-part%d-after-%s@v%d", lsnName(lsn), p.chunk, part, keyText(p.last), version)
		advance := !b.changes[len(b.changes)-1].resent
		state, err := s.applySnapshotPart(ctx, p, b, id, version, replace, advance, lastKey)
		if err != nil {
			return err
		}
		if blocking(state) && !warned {
			warned = true
			s.log.Warn("a snapshot chunk's partition will be BLOCKED; the chunk is read to its end and sealed, and the table halts when its snapshot is done",
				"table", p.table.key, "partition", p.partition, "notice", state.GetNotice())
		}
		replace = false
		part++
		if advance {
			p.last = lastKey
		}
		b.reset()
		return nil
	}
	if len(gone) > 0 {
		for _, ch := range gone {
			b.add(ch)
			if b.count >= s.cfg.BatchRecords || b.size() >= s.cfg.BatchBytes {
				if err := send(); err != nil {
					return err
				}
			}
		}
		if err := send(); err != nil {
			return err
		}
	}
	for rows.Next() {
		raw := rows.RawValues()
		resent := false
		if resend {
			resent = string(raw[len(raw)-1]) == "t"
			raw = raw[:len(raw)-1]
		}
		// Position (snapshot LSN, -1): before any change committed at that
		// LSN, which the stream carries (a commit may start exactly there).
		ch := change{op: 'r', lsn: lsn, seq: -1, resent: resent}
		ch.flags = make([]byte, len(raw))
		ch.vals = make([][]byte, len(raw))
		for i, v := range raw {
			if v == nil {
				ch.flags[i] = 'n'
				continue
			}
			ch.flags[i] = 't'
			ch.vals[i] = append([]byte(nil), v...)
		}
		b.add(&ch)
		lastKey = make([]string, len(keyIdx))
		for j, i := range keyIdx {
			lastKey[j] = string(ch.vals[i])
		}
		if b.count >= s.cfg.BatchRecords || b.size() >= s.cfg.BatchBytes {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read chunk %d of %s: %w", p.chunk, p.table.name, err)
	}
	if err := send(); err != nil {
		return err
	}
	if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.chunks SET done = true WHERE connector = $1 AND source_table = $2 AND chunk = $3",
		s.cfg.Name, p.table.key, p.chunk); err != nil {
		return fmt.Errorf("record chunk %d of %s done: %w", p.chunk, p.table.name, err)
	}
	return s.sealChunk(ctx, p.table, p.chunk, p.partition, p.started)
}

// vanishedRows are the rows a resent chunk published in earlier runs (the
// outbox marks them with the chunk) whose keys its range no longer holds
// in the fresh snapshot tx sees, as snapshot reads built from their
// replica rows, marked resent. The replica holds them (its deletes wait
// for the snapshot's end); a replica whose columns are not the source's
// one to one cannot rebuild them, and none are returned.
func (s *Source) vanishedRows(ctx context.Context, tx pgx.Tx, p pendingChunk, shape Shape, version int32) ([]*change, error) {
	rep, err := s.replicaFor(ctx, p.table, version)
	if err != nil {
		return nil, err
	}
	fieldOf := map[string]bool{}
	for _, f := range rep.fields {
		fieldOf[f.GetName()] = true
	}
	var cols, keys []string
	for _, c := range shape {
		if !fieldOf[c.Name] {
			s.log.Warn("a resent snapshot chunk cannot rebuild the rows deleted since it was first read: the replica lacks a column", "table", p.table.key, "column", c.Name)
			return nil, nil
		}
		cols = append(cols, "r."+pgx.Identifier{c.Name}.Sanitize()+"::text")
		if c.Key {
			keys = append(keys, c.Name)
		}
	}
	// The keys the fresh snapshot holds in the chunk's applied part.
	var where []string
	var args []any
	for _, b := range []struct {
		op   string
		vals []string
	}{{">", p.lo}, {"<=", p.last}} {
		if b.vals == nil {
			continue
		}
		where = append(where, keyCompare(shape, b.op, len(args)+1))
		for _, v := range b.vals {
			args = append(args, v)
		}
	}
	var keyText []string
	for _, k := range keys {
		keyText = append(keyText, pgx.Identifier{k}.Sanitize()+"::text")
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(keyText, ", "), p.table.name.ident())
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	res, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the keys of chunk %d of %s: %w", p.chunk, p.table.name, err)
	}
	fresh := make([][]string, len(keys))
	for res.Next() {
		vals, err := scanTexts(res, len(keys))
		if err != nil {
			res.Close()
			return nil, fmt.Errorf("read the keys of chunk %d of %s: %w", p.chunk, p.table.name, err)
		}
		for i, v := range vals {
			fresh[i] = append(fresh[i], v)
		}
	}
	res.Close()
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("read the keys of chunk %d of %s: %w", p.chunk, p.table.name, err)
	}
	// The published keys of the chunk, from the outbox, matched to the
	// replica's rows and to the fresh keys by value, in the replica's
	// column types.
	targs := []any{s.cfg.Name, p.table.key, p.chunk}
	var pubKeys, join, un, alias, in []string
	for j, k := range keys {
		c := shape[shape.index(k)]
		typ := targetType(fieldType(c.Type))
		pubKeys = append(pubKeys, fmt.Sprintf("(o.record->>%s)::%s AS k%d", quoteLiteral(k), typ, j))
		join = append(join, fmt.Sprintf("r.%s = pub.k%d", pgx.Identifier{k}.Sanitize(), j))
		targs = append(targs, fresh[j])
		un = append(un, fmt.Sprintf("$%d::text[]", len(targs)))
		alias = append(alias, fmt.Sprintf("f%d", j))
		in = append(in, fmt.Sprintf("f.f%d::%s = r.%s", j, typ, pgx.Identifier{k}.Sanitize()))
	}
	tq := fmt.Sprintf(`SELECT r.`+FieldLSN+`, %s FROM (SELECT DISTINCT %s FROM seam_cdc.outbox o
 WHERE o.connector = $1 AND o.source_table = $2 AND o.chunk = $3 AND o.op = 'r') pub
  JOIN %s r ON %s
 WHERE NOT EXISTS (SELECT 1 FROM unnest(%s) AS f(%s) WHERE %s)`,
		strings.Join(cols, ", "), strings.Join(pubKeys, ", "), rep.ident, strings.Join(join, " AND "),
		strings.Join(un, ", "), strings.Join(alias, ", "), strings.Join(in, " AND "))
	rows, err := s.target.Query(ctx, tq, targs...)
	if err != nil {
		return nil, fmt.Errorf("read the rows chunk %d of %s published before and no longer holds: %w", p.chunk, p.table.name, err)
	}
	defer rows.Close()
	var out []*change
	for rows.Next() {
		var at int64
		vals := make([]*string, len(shape))
		ptrs := []any{&at}
		for i := range vals {
			ptrs = append(ptrs, &vals[i])
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read the rows chunk %d of %s published before: %w", p.chunk, p.table.name, err)
		}
		// At the position it was published with: the snapshot it was read in.
		ch := &change{op: 'r', lsn: uint64(at), seq: -1, resent: true, flags: make([]byte, len(vals)), vals: make([][]byte, len(vals))}
		for i, v := range vals {
			if v == nil {
				ch.flags[i] = 'n'
				continue
			}
			ch.flags[i], ch.vals[i] = 't', []byte(*v)
		}
		out = append(out, ch)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the rows chunk %d of %s published before: %w", p.chunk, p.table.name, err)
	}
	if len(out) > 0 {
		s.log.Info("a resent snapshot chunk sends the rows it published before and the fresh snapshot no longer holds to its partition", "table", p.table.key, "chunk", p.chunk, "rows", len(out))
	}
	return out, nil
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sealChunk seals a read chunk's partition and records its verdict. A
// chunk that sent nothing (no rows in its range) has no partition.
func (s *Source) sealChunk(ctx context.Context, t *table, chunk int, partition string, started bool) error {
	verdict := ""
	if started {
		st, err := s.sealPartition(ctx, t, partition)
		if err != nil {
			return err
		}
		verdict = st.GetVerdict().String()
		if blocking(st) {
			s.log.Warn("snapshot chunk sealed BLOCKED", "table", t.key, "partition", partition, "notice", st.GetNotice())
		}
	}
	if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.chunks SET sealed = true, verdict = $4 WHERE connector = $1 AND source_table = $2 AND chunk = $3",
		s.cfg.Name, t.key, chunk, verdict); err != nil {
		return fmt.Errorf("record the seal of chunk %d of %s: %w", chunk, t.name, err)
	}
	return nil
}

// keyText names a resumption point in a batch id: a short hash of the key.
func keyText(k []string) string {
	if k == nil {
		return "start"
	}
	sum := sha256.Sum256([]byte(strings.Join(k, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// applySnapshotPart sends one batch of snapshot rows through the gate and
// writes what it accepted to the replica and the outbox, with the chunk's
// progress, in one transaction. A batch that replaces the chunk's
// partition takes the chunk's earlier quarantine count back from the
// table's, as the gate does with its counters. The rows counted done are
// the rows the snapshot published (or quarantined) once each: a resent
// row the replica already holds was counted by the run that published
// it, and stays counted even when the fresh snapshot no longer has it. It
// returns the partition's state.
func (s *Source) applySnapshotPart(ctx context.Context, p pendingChunk, b *batchBuilder, batchID string, version int32, replace, advance bool, lastKey []string) (*gatev1.PartitionState, error) {
	t := p.table
	rep, err := s.replicaFor(ctx, t, version)
	if err != nil {
		return nil, err
	}
	ans, err := s.ingest(ctx, t, rep, p.partition, batchID, version, replace, b)
	if err != nil {
		return nil, err
	}
	tx, err := s.target.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	apply := ans.accepted
	done, found := int64(b.count), int64(0)
	if b.changes[0].resent {
		var fresh, resent []canonicalRow
		for _, r := range ans.accepted {
			if r.resent {
				resent = append(resent, r)
			} else {
				fresh = append(fresh, r)
			}
		}
		// A resent row the replica lacks was quarantined in the earlier
		// sending (which the replacement superseded): it lands now.
		lacking, err := rep.missing(ctx, tx, resent)
		if err != nil {
			return nil, err
		}
		apply = append(lacking, fresh...)
		for _, ch := range b.changes {
			if ch.resent {
				done--
			}
		}
		// The lacking rows were not in the resumed total, which counted
		// the chunk's rows up to its applied key as the earlier runs
		// published them.
		found = int64(len(lacking))
		done += found
	}
	if err := rep.apply(ctx, tx, apply); err != nil {
		return nil, err
	}
	if err := s.publishChunk(ctx, tx, t, version, apply, &p.chunk); err != nil {
		return nil, err
	}
	if replace {
		if _, err := tx.Exec(ctx, `UPDATE seam_cdc.tables t SET bytes_done = t.bytes_done - c.bytes_done, quarantined = t.quarantined - c.quarantined
  FROM seam_cdc.chunks c WHERE t.connector = $1 AND t.source_table = $2 AND c.connector = t.connector AND c.source_table = t.source_table AND c.chunk = $3`,
			s.cfg.Name, t.key, p.chunk); err != nil {
			return nil, fmt.Errorf("take back the earlier sending of chunk %d of %s: %w", p.chunk, t.name, err)
		}
		if _, err := tx.Exec(ctx, "UPDATE seam_cdc.chunks SET bytes_done = 0, quarantined = 0 WHERE connector = $1 AND source_table = $2 AND chunk = $3",
			s.cfg.Name, t.key, p.chunk); err != nil {
			return nil, fmt.Errorf("take back the earlier sending of chunk %d of %s: %w", p.chunk, t.name, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE seam_cdc.chunks SET last = CASE WHEN $4 THEN $5 ELSE last END, rows_done = rows_done + $6, bytes_done = bytes_done + $7,
       quarantined = quarantined + $8 WHERE connector = $1 AND source_table = $2 AND chunk = $3`,
		s.cfg.Name, t.key, p.chunk, advance, lastKey, done, b.textBytes, ans.quarantined); err != nil {
		return nil, fmt.Errorf("record progress of chunk %d of %s: %w", p.chunk, t.name, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE seam_cdc.tables SET rows_done = rows_done + $3, rows_total = rows_total + $6, bytes_done = bytes_done + $4, quarantined = quarantined + $5, updated_at = now()
 WHERE connector = $1 AND source_table = $2`, s.cfg.Name, t.key, done, b.textBytes, ans.quarantined, found); err != nil {
		return nil, fmt.Errorf("record progress of %s: %w", t.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("write snapshot rows of %s: %w", t.name, err)
	}
	s.metrics.snapshotRows(ctx, t.key, int64(b.count), int64(b.textBytes))
	s.reportProgress(ctx)
	return ans.partition, nil
}

// finishTableSnapshot marks a table's snapshot done once every chunk's
// partition is sealed (a seal a stop cut short is made here): its staged
// changes may now be applied. When a chunk was sealed BLOCKED the table
// halts instead (PARTITION_BLOCKED), its changes held.
func (s *Source) finishTableSnapshot(ctx context.Context, t *table) error {
	conn, _, err := loadConnector(ctx, s.target, s.cfg.Name)
	if err != nil {
		return err
	}
	rows, err := s.target.Query(ctx, "SELECT chunk, started FROM seam_cdc.chunks WHERE connector = $1 AND source_table = $2 AND done AND NOT sealed ORDER BY chunk",
		s.cfg.Name, t.key)
	if err != nil {
		return fmt.Errorf("read the chunks of %s: %w", t.name, err)
	}
	type unsealed struct {
		chunk   int
		started bool
	}
	var todo []unsealed
	for rows.Next() {
		var u unsealed
		if err := rows.Scan(&u.chunk, &u.started); err != nil {
			rows.Close()
			return fmt.Errorf("read the chunks of %s: %w", t.name, err)
		}
		todo = append(todo, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the chunks of %s: %w", t.name, err)
	}
	for _, u := range todo {
		if err := s.sealChunk(ctx, t, u.chunk, chunkPartition(conn.ConsistentLSN, u.chunk), u.started); err != nil {
			return err
		}
	}
	var blocked []string
	res, err := s.target.Query(ctx, "SELECT chunk FROM seam_cdc.chunks WHERE connector = $1 AND source_table = $2 AND verdict = $3 ORDER BY chunk",
		s.cfg.Name, t.key, gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED.String())
	if err != nil {
		return fmt.Errorf("read the verdicts of the chunks of %s: %w", t.name, err)
	}
	for res.Next() {
		var c int
		if err := res.Scan(&c); err != nil {
			res.Close()
			return fmt.Errorf("read the verdicts of the chunks of %s: %w", t.name, err)
		}
		blocked = append(blocked, chunkPartition(conn.ConsistentLSN, c))
	}
	res.Close()
	if err := res.Err(); err != nil {
		return fmt.Errorf("read the verdicts of the chunks of %s: %w", t.name, err)
	}
	var halt []byte
	if len(blocked) > 0 {
		st, err := loadTable(ctx, s.target, s.cfg.Name, t.key)
		if err != nil {
			return err
		}
		h := &Halt{Reason: "PARTITION_BLOCKED", FromVersion: st.Version, Partitions: blocked,
			Message: fmt.Sprintf("table %s halted: the gate sealed snapshot partition(s) %s of %s BLOCKED; its changes are held in order until a replay or a replacement clears the verdict, or a newer version of %s is active",
				t.key, strings.Join(blocked, ", "), t.subject, t.subject)}
		halt, _ = json.Marshal(h)
		s.metrics.alert(ctx, t.key, h.Reason)
		s.log.Warn("table held", "table", t.key, "reason", h.Reason, "message", h.Message)
	}
	if _, err := s.target.Exec(ctx, `UPDATE seam_cdc.tables SET phase = CASE WHEN $3::jsonb IS NULL THEN 'stream' ELSE 'halted' END, halt = $3::jsonb, updated_at = now()
 WHERE connector = $1 AND source_table = $2 AND phase = 'snapshot'`,
		s.cfg.Name, t.key, halt); err != nil {
		return fmt.Errorf("record the end of the snapshot of %s: %w", t.name, err)
	}
	s.log.Info("snapshot of table done", "table", t.key)
	select {
	case <-t.snapshotDone:
	default:
		close(t.snapshotDone)
	}
	return nil
}

// reportProgress calls the Progress hook with the totals.
func (s *Source) reportProgress(ctx context.Context) {
	if s.cfg.Progress == nil {
		return
	}
	var p SnapshotProgress
	err := s.target.QueryRow(ctx, `SELECT coalesce(sum(rows_total), 0), coalesce(sum(rows_done), 0), coalesce(sum(bytes_done), 0),
       count(*) FILTER (WHERE phase <> 'snapshot'), count(*) FROM seam_cdc.tables WHERE connector = $1`, s.cfg.Name).
		Scan(&p.RowsTotal, &p.RowsDone, &p.BytesDone, &p.TablesDone, &p.Tables)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("read snapshot progress", "error", err)
		}
		return
	}
	s.cfg.Progress(p)
}
