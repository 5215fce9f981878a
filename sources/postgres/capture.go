package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/seamdata/seam/platform/backoff"
)

// Capture stages the slot's stream in the target's log, in commit order:
// every change of the replicated tables with its transaction's commit LSN
// and its order in the transaction. A flush writes the staged rows and,
// once a transaction is staged whole, moves capture_lsn to its end, in one
// transaction of the target; only then is the position reported to the
// server as flushed, so the slot keeps everything not yet durable here. A
// restart streams again from capture_lsn and first removes the rows of
// transactions that were staged only in part.

// capture limits.
const (
	flushRows     = 5000
	flushInterval = 200 * time.Millisecond
	// positionInterval bounds how often a position learnt from keepalives
	// alone (no change pending) is recorded and confirmed.
	positionInterval = time.Second
)

// relation is what the stream told about one table.
type relation struct {
	table   *table
	shapeID int
	shape   Shape
}

// capturer is the state of one streaming session.
type capturer struct {
	s         *Source
	conn      *pgconn.PgConn
	relations map[uint32]*relation
	// shapes are the known shapes per table, by id.
	shapes map[string]map[int]Shape
	// the transaction being received
	inTx       bool
	skipTx     bool
	txLSN      uint64
	txTime     time.Time
	txSeq      int64
	pending    []*change
	pendingTbl []*table
	newShapes  []shapeRow
	// captured is the end of the last transaction received whole;
	// durable is the end of the last one staged in the target.
	captured, durable uint64
	firstPending      time.Time
	// advancedAt is when a keepalive moved captured past durable with
	// nothing pending (see keepalive); such a move is staged within a
	// second.
	advancedAt time.Time
	touched    map[*table]bool
}

type shapeRow struct {
	table string
	id    int
	shape Shape
	lsn   uint64
}

func (s *Source) capture(ctx context.Context) error {
	var heldSince time.Time
	held := backoff.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for {
		err := s.captureOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" {
			// The slot is held by a walsender: this source's previous
			// run's, stopped or killed a moment ago, until the server
			// sees its connection gone (as drop waits for too); or
			// another process's running this source, which still holds
			// it after slotReleaseWait. Each try is a connection to the
			// source, so they back off.
			if heldSince.IsZero() {
				heldSince = time.Now()
				s.log.Info("replication slot still held by a walsender; waiting for it", "slot", s.cfg.slotName(), "error", err)
			}
			if time.Since(heldSince) >= slotReleaseWait {
				return fmt.Errorf("stream of slot %s: %w (still held after %s: is another seam source postgres run --name %s running?)", s.cfg.slotName(), err, slotReleaseWait, s.cfg.Name)
			}
			if held.Wait(ctx) != nil {
				return nil
			}
			continue
		}
		heldSince = time.Time{}
		held.Reset()
		if errors.As(err, &pgErr) && pgErr.Code != "" && pgErr.Code[:2] != "08" && pgErr.Code != "57P01" {
			return fmt.Errorf("stream of slot %s: %w", s.cfg.slotName(), err)
		}
		if err != nil && !isConnectionError(err) {
			return err
		}
		s.log.Warn("stream interrupted; resuming from the last staged position", "error", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return nil
		}
	}
}

// isConnectionError reports a lost connection (worth reconnecting).
func isConnectionError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false
	}
	var netErr net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, errConnLost) || pgconn.Timeout(err) || errors.As(err, &netErr) || errors.Is(err, io.EOF)
}

var errConnLost = errors.New("replication connection lost")

func (s *Source) captureOnce(ctx context.Context) error {
	state, _, err := loadConnector(ctx, s.target, s.cfg.Name)
	if err != nil {
		return err
	}
	// Rows of a transaction staged only in part before a crash go; the
	// stream sends the transaction again.
	if _, err := s.target.Exec(ctx, "DELETE FROM seam_cdc.log WHERE connector = $1 AND commit_lsn >= $2", s.cfg.Name, int64(state.CaptureLSN)); err != nil {
		return fmt.Errorf("clear partly staged transactions: %w", err)
	}
	c := &capturer{s: s, relations: map[uint32]*relation{}, shapes: map[string]map[int]Shape{},
		captured: state.CaptureLSN, durable: state.CaptureLSN, touched: map[*table]bool{}}
	if err := c.loadShapes(ctx); err != nil {
		return err
	}
	conn, err := s.replicationConn(ctx)
	if err != nil {
		return err
	}
	c.conn = conn
	defer conn.Close(context.Background())
	err = pglogrepl.StartReplication(ctx, conn, s.cfg.slotName(), pglogrepl.LSN(state.CaptureLSN), pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", fmt.Sprintf("publication_names '%s'", s.cfg.slotName())},
	})
	if err != nil {
		return fmt.Errorf("start streaming slot %s at %s: %w", s.cfg.slotName(), lsnText(state.CaptureLSN), err)
	}
	s.log.Info("streaming", "slot", s.cfg.slotName(), "from", lsnText(state.CaptureLSN))
	nextStatus := time.Now().Add(s.cfg.StatusInterval)
	for {
		if time.Now().After(nextStatus) {
			if err := c.sendStatus(ctx); err != nil {
				return err
			}
			nextStatus = time.Now().Add(s.cfg.StatusInterval)
		}
		wait := time.Until(nextStatus)
		if len(c.pending) > 0 || len(c.newShapes) > 0 {
			wait = min(wait, time.Until(c.firstPending.Add(flushInterval)))
		}
		if !c.advancedAt.IsZero() {
			wait = min(wait, time.Until(c.advancedAt.Add(positionInterval)))
		}
		rctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
		msg, err := conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				if err := c.maybeFlush(ctx, true); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("%w: %w", errConnLost, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := c.copyData(ctx, m.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return pgconn.ErrorResponseToPgError(m)
		default:
			return fmt.Errorf("%w: unexpected message %T", errConnLost, msg)
		}
		if err := c.maybeFlush(ctx, false); err != nil {
			return err
		}
	}
}

func (c *capturer) loadShapes(ctx context.Context) error {
	rows, err := c.s.target.Query(ctx, "SELECT source_table, shape_id, columns FROM seam_cdc.shapes WHERE connector = $1", c.s.cfg.Name)
	if err != nil {
		return fmt.Errorf("read the known shapes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var id int
		var raw []byte
		if err := rows.Scan(&name, &id, &raw); err != nil {
			return err
		}
		var sh Shape
		if err := json.Unmarshal(raw, &sh); err != nil {
			return fmt.Errorf("shape %d of %s: %w", id, name, err)
		}
		if c.shapes[name] == nil {
			c.shapes[name] = map[int]Shape{}
		}
		c.shapes[name][id] = sh
	}
	return rows.Err()
}

func (c *capturer) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("keepalive: %w", err)
		}
		c.s.metrics.serverPosition(uint64(ka.ServerWALEnd))
		c.keepalive(uint64(ka.ServerWALEnd))
		if ka.ReplyRequested {
			return c.sendStatus(ctx)
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("wal data: %w", err)
		}
		c.s.metrics.serverPosition(uint64(x.ServerWALEnd))
		return c.message(ctx, x.WALData)
	}
	return nil
}

// keepalive takes the server's WAL end as captured when nothing is
// pending: the server sends a transaction's changes when it has decoded
// its commit, in order on this connection, so every transaction of our
// tables committed before that position has been received here already.
// Without this the slot would advance only when a replicated table
// changes, and writes to other tables (or other databases) would pin WAL
// on the source until its disk fills. Inside a transaction it waits: the
// staged rows of a transaction cut by a crash are found by commit_lsn >=
// capture_lsn.
func (c *capturer) keepalive(end uint64) {
	if c.inTx || end <= c.captured {
		return
	}
	c.captured = end
	if c.advancedAt.IsZero() {
		c.advancedAt = time.Now()
	}
}

func (c *capturer) sendStatus(ctx context.Context) error {
	pos := pglogrepl.LSN(c.durable)
	err := pglogrepl.SendStandbyStatusUpdate(ctx, c.conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: pos, WALFlushPosition: pos, WALApplyPosition: pos})
	if err != nil {
		return fmt.Errorf("%w: status update: %w", errConnLost, err)
	}
	return nil
}

func (c *capturer) message(ctx context.Context, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("decode a pgoutput message: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		return c.relation(ctx, m)
	case *pglogrepl.BeginMessage:
		c.inTx, c.txLSN, c.txTime, c.txSeq = true, uint64(m.FinalLSN), m.CommitTime, 0
		// A transaction already staged (the server resends from the slot's
		// confirmed position, which may be behind ours) is skipped whole.
		c.skipTx = uint64(m.FinalLSN) < c.captured
	case *pglogrepl.CommitMessage:
		c.inTx = false
		if !c.skipTx {
			c.captured = uint64(m.TransactionEndLSN)
		}
		c.skipTx = false
	case *pglogrepl.InsertMessage:
		return c.row(m.RelationID, 'i', nil, m.Tuple, 0)
	case *pglogrepl.UpdateMessage:
		return c.update(m)
	case *pglogrepl.DeleteMessage:
		return c.row(m.RelationID, 'd', m.OldTuple, nil, m.OldTupleType)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if err := c.truncate(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// relation records the shape a table has from here on in the stream.
func (c *capturer) relation(ctx context.Context, m *pglogrepl.RelationMessage) error {
	key := m.Namespace + "." + m.RelationName
	t := c.s.tables[key]
	if t == nil {
		return nil
	}
	var sh Shape
	for _, col := range m.Columns {
		sh = append(sh, Column{Name: col.Name, Type: col.DataType, TypMod: col.TypeModifier, Key: col.Flags&1 == 1})
	}
	known := c.shapes[key]
	for id, k := range known {
		if k.sameAs(sh) {
			c.relations[m.RelationID] = &relation{table: t, shapeID: id, shape: k}
			return nil
		}
	}
	// A new shape: what the stream does not say (nullability, type names)
	// comes from the catalog as it is now, for the columns that still
	// match by name and type.
	if err := c.describe(ctx, t, sh); err != nil {
		return err
	}
	id := 0
	for k := range known {
		id = max(id, k)
	}
	id++
	if known == nil {
		known = map[int]Shape{}
		c.shapes[key] = known
	}
	known[id] = sh
	c.newShapes = append(c.newShapes, shapeRow{table: key, id: id, shape: sh, lsn: c.txLSN})
	c.relations[m.RelationID] = &relation{table: t, shapeID: id, shape: sh}
	if c.firstPending.IsZero() {
		c.firstPending = time.Now()
	}
	c.s.log.Info("table has a new shape in the stream", "table", key, "shape", id, "columns", len(sh))
	return nil
}

// describe fills nullability and type names of a shape from the catalog.
func (c *capturer) describe(ctx context.Context, t *table, sh Shape) error {
	now, err := readShape(ctx, c.s.source, t.name)
	if err != nil && !errors.Is(err, errNoKey) {
		return err
	}
	for i := range sh {
		j := now.index(sh[i].Name)
		if j >= 0 && now[j].Type == sh[i].Type {
			sh[i].NotNull = now[j].NotNull
			sh[i].TypeName = now[j].TypeName
		}
		if sh[i].TypeName == "" {
			if err := c.s.source.QueryRow(ctx, "SELECT format_type($1, $2)", sh[i].Type, sh[i].TypMod).Scan(&sh[i].TypeName); err != nil {
				return fmt.Errorf("name type %d of %s.%s: %w", sh[i].Type, t.name, sh[i].Name, err)
			}
		}
	}
	return nil
}

func (c *capturer) stage(t *table, ch *change) {
	if c.skipTx {
		return
	}
	ch.lsn, ch.commitTime, ch.seq = c.txLSN, c.txTime, c.txSeq
	c.txSeq++
	c.pending = append(c.pending, ch)
	c.pendingTbl = append(c.pendingTbl, t)
	c.touched[t] = true
	if c.firstPending.IsZero() {
		c.firstPending = time.Now()
	}
}

func tupleChange(op byte, rel *relation, tup *pglogrepl.TupleData, keyOnly bool) (*change, error) {
	if tup == nil {
		return nil, fmt.Errorf("%c of %s without a tuple", op, rel.table.key)
	}
	if len(tup.Columns) != len(rel.shape) {
		return nil, fmt.Errorf("%c of %s has %d columns, its relation %d", op, rel.table.key, len(tup.Columns), len(rel.shape))
	}
	ch := &change{op: op, shapeID: rel.shapeID, flags: make([]byte, len(rel.shape)), vals: make([][]byte, len(rel.shape))}
	for i, col := range tup.Columns {
		switch {
		case keyOnly && !rel.shape[i].Key:
			ch.flags[i] = 'u'
		case col.DataType == pglogrepl.TupleDataTypeText:
			ch.flags[i] = 't'
			ch.vals[i] = col.Data
		case col.DataType == pglogrepl.TupleDataTypeNull:
			ch.flags[i] = 'n'
		case col.DataType == pglogrepl.TupleDataTypeToast:
			ch.flags[i] = 'u'
		default:
			return nil, fmt.Errorf("%s column %s: tuple data type %q; only text is asked for", rel.table.key, rel.shape[i].Name, col.DataType)
		}
	}
	return ch, nil
}

func (c *capturer) rel(id uint32) (*relation, bool, error) {
	rel, ok := c.relations[id]
	if !ok {
		// A table outside the replicated set (the publication names only
		// ours, so this is a protocol surprise): ignore it loudly.
		return nil, false, nil
	}
	return rel, true, nil
}

func (c *capturer) row(id uint32, op byte, old, tup *pglogrepl.TupleData, oldType uint8) error {
	rel, ok, err := c.rel(id)
	if err != nil || !ok {
		return err
	}
	var ch *change
	if op == 'd' {
		// A key tuple ('K') carries the key columns and nulls for the rest;
		// REPLICA IDENTITY FULL ('O') carries the whole old row.
		ch, err = tupleChange('d', rel, old, oldType != pglogrepl.DeleteMessageTupleTypeOld)
	} else {
		ch, err = tupleChange(op, rel, tup, false)
	}
	if err != nil {
		return err
	}
	c.stage(rel.table, ch)
	return nil
}

// update stages an update; one that changed the primary key is a delete
// of the old key followed by the new row.
func (c *capturer) update(m *pglogrepl.UpdateMessage) error {
	rel, ok, err := c.rel(m.RelationID)
	if err != nil || !ok {
		return err
	}
	if m.OldTuple != nil {
		oldKey, err := tupleChange('d', rel, m.OldTuple, m.OldTupleType != pglogrepl.UpdateMessageTupleTypeOld)
		if err != nil {
			return err
		}
		newRow, err := tupleChange('u', rel, m.NewTuple, false)
		if err != nil {
			return err
		}
		changed := false
		for i, col := range rel.shape {
			if col.Key && string(oldKey.vals[i]) != string(newRow.vals[i]) {
				changed = true
			}
		}
		if changed {
			c.stage(rel.table, oldKey)
		}
		c.stage(rel.table, newRow)
		return nil
	}
	ch, err := tupleChange('u', rel, m.NewTuple, false)
	if err != nil {
		return err
	}
	c.stage(rel.table, ch)
	return nil
}

func (c *capturer) truncate(id uint32) error {
	rel, ok, err := c.rel(id)
	if err != nil || !ok {
		return err
	}
	c.stage(rel.table, &change{op: 't', shapeID: rel.shapeID})
	return nil
}

// maybeFlush stages what was received when there is enough of it, it has
// waited long enough, or the stream is idle.
func (c *capturer) maybeFlush(ctx context.Context, idle bool) error {
	n := len(c.pending)
	due := n >= flushRows || (!c.firstPending.IsZero() && time.Since(c.firstPending) >= flushInterval) || idle ||
		(!c.advancedAt.IsZero() && time.Since(c.advancedAt) >= positionInterval)
	if !due || (n == 0 && len(c.newShapes) == 0 && c.captured == c.durable) {
		return nil
	}
	if c.inTx && n < flushRows && !idle {
		// Wait for the commit unless the transaction is large.
		if time.Since(c.firstPending) < 5*flushInterval {
			return nil
		}
	}
	return c.flush(ctx)
}

// flush writes the staged rows, the new shapes and, at a transaction
// boundary, the capture position, in one transaction of the target.
func (c *capturer) flush(ctx context.Context) error {
	s := c.s
	tx, err := s.target.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	for _, sr := range c.newShapes {
		cols, _ := json.Marshal(sr.shape)
		if _, err := tx.Exec(ctx, `INSERT INTO seam_cdc.shapes (connector, source_table, shape_id, columns, first_lsn) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING`, s.cfg.Name, sr.table, sr.id, cols, int64(sr.lsn)); err != nil {
			return fmt.Errorf("stage shape %d of %s: %w", sr.id, sr.table, err)
		}
	}
	if len(c.pending) > 0 {
		rows := make([][]any, len(c.pending))
		for i, ch := range c.pending {
			vals := make([]*string, len(ch.vals))
			size := 0
			for j, v := range ch.vals {
				if ch.flags[j] == 't' {
					sv := string(v)
					vals[j] = &sv
					size += len(v)
				}
			}
			rows[i] = []any{s.cfg.Name, c.pendingTbl[i].key, int64(ch.lsn), ch.seq, string(ch.op), ch.shapeID, ch.commitTime, string(ch.flags), vals, size}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"seam_cdc", "log"},
			[]string{"connector", "source_table", "commit_lsn", "seq", "op", "shape_id", "commit_time", "flags", "vals", "bytes"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("stage %d changes: %w", len(rows), err)
		}
	}
	if c.captured != c.durable {
		if _, err := tx.Exec(ctx, "UPDATE seam_cdc.connectors SET capture_lsn = $2, updated_at = now() WHERE name = $1", s.cfg.Name, int64(c.captured)); err != nil {
			return fmt.Errorf("record the capture position: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("stage changes: %w", err)
	}
	s.metrics.staged(ctx, int64(len(c.pending)))
	c.pending, c.pendingTbl, c.newShapes = c.pending[:0], c.pendingTbl[:0], c.newShapes[:0]
	c.firstPending, c.advancedAt = time.Time{}, time.Time{}
	if c.captured != c.durable {
		c.durable = c.captured
		s.metrics.capturePosition(c.durable)
		for t := range c.touched {
			t.signal()
		}
		clear(c.touched)
		return c.sendStatus(ctx)
	}
	return nil
}
