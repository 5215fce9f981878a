package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/backoff"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// change is one row change in source form: the values in PostgreSQL's
// text output, one per column of its shape.
type change struct {
	op         byte // r (snapshot read), i, u, d, t (truncate)
	lsn        uint64
	seq        int64
	commitTime time.Time
	shapeID    int
	// flags has one letter per column: t value, n null, u not sent.
	flags []byte
	vals  [][]byte
	// resent marks a snapshot row at or before the key its chunk had
	// applied when a restart resends the chunk whole: it goes to the gate
	// (so the chunk's partition holds every row once) but not again to the
	// replica and the stream, unless the replica lacks its key.
	resent bool
}

// batchBuilder writes changes as NDJSON records for the gate: the columns
// typed by their contract types, then the change fields.
type batchBuilder struct {
	names     [][]byte // `"name":` per column
	types     []contractv1.FieldType
	buf       []byte
	changes   []*change
	count     int
	textBytes int
}

func newBatchBuilder(s Shape) *batchBuilder {
	b := &batchBuilder{}
	for _, c := range s {
		name := appendString(nil, []byte(c.Name))
		b.names = append(b.names, append(name, ':'))
		b.types = append(b.types, fieldType(c.Type))
	}
	return b
}

func (b *batchBuilder) reset() {
	b.buf = b.buf[:0]
	b.changes = b.changes[:0]
	b.count = 0
	b.textBytes = 0
}

func (b *batchBuilder) size() int { return len(b.buf) }

func (b *batchBuilder) add(ch *change) {
	b.buf = append(b.buf, '{')
	first := true
	for i, f := range ch.flags {
		if f == 'u' {
			continue
		}
		if !first {
			b.buf = append(b.buf, ',')
		}
		first = false
		b.buf = append(b.buf, b.names[i]...)
		if f == 'n' {
			b.buf = append(b.buf, "null"...)
			continue
		}
		b.buf = appendJSON(b.buf, b.types[i], ch.vals[i])
		b.textBytes += len(ch.vals[i])
	}
	if !first {
		b.buf = append(b.buf, ',')
	}
	b.buf = append(b.buf, `"`+FieldOp+`":"`...)
	b.buf = append(b.buf, ch.op, '"')
	b.buf = append(b.buf, `,"`+FieldLSN+`":`...)
	b.buf = strconv.AppendUint(b.buf, ch.lsn, 10)
	b.buf = append(b.buf, `,"`+FieldSeq+`":`...)
	b.buf = strconv.AppendInt(b.buf, ch.seq, 10)
	if !ch.commitTime.IsZero() {
		b.buf = append(b.buf, `,"`+FieldCommitTime+`":"`...)
		b.buf = ch.commitTime.UTC().AppendFormat(b.buf, time.RFC3339Nano)
		b.buf = append(b.buf, '"')
	}
	b.buf = append(b.buf, '}', '\n')
	b.changes = append(b.changes, ch)
	b.count++
}

// blockedError is a batch the gate refused whole (a BLOCK check failed).
type blockedError struct{ msg string }

func (e *blockedError) Error() string { return e.msg }

// transient reports whether a failed gate call may succeed when repeated
// with the same batch identity.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// gateAnswer is what the gate said of a batch: the accepted changes in
// canonical form, how many it quarantined, and the state of the partition
// after the batch.
type gateAnswer struct {
	accepted    []canonicalRow
	quarantined int64
	partition   *gatev1.PartitionState
}

// ingest sends a batch through the gate under its identity, repeating it
// while the gate is unreachable (the identity makes a repeat write
// nothing twice). With replace the batch starts a new sending of its
// partition.
func (s *Source) ingest(ctx context.Context, t *table, rep *replica, partition, batchID string, version int32, replace bool, b *batchBuilder) (gateAnswer, error) {
	req := &gatev1.IngestRequest{
		Subject: t.subject, Partition: partition, Identity: &gatev1.IngestRequest_BatchId{BatchId: batchID}, ContractVersion: version, Replace: replace,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: b.buf}}},
	}
	var none gateAnswer
	var resp *gatev1.IngestResponse
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	start := time.Now()
	for {
		var err error
		resp, err = s.cfg.Gate.Ingest(ctx, req)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return none, errStopped
		}
		if rpcerr.Reason(err) == "BATCH_BLOCKED" {
			return none, &blockedError{msg: status.Convert(err).Message()}
		}
		if !transient(err) {
			return none, fmt.Errorf("gate refused batch %s of %s: %w", batchID, t.subject, err)
		}
		s.log.Warn("gate unreachable; sending the batch again", "table", t.key, "batch", batchID, "error", err)
		if retry.Wait(ctx) != nil {
			return none, errStopped
		}
	}
	s.metrics.gateCall(ctx, t.key, time.Since(start))
	var out []canonicalRow
	var quarantined int64
	recs := resp.GetRecords()
	if int64(len(recs)) != int64(b.count) {
		return none, fmt.Errorf("gate answered %d verdicts for %d records of batch %s", len(recs), b.count, batchID)
	}
	for i, v := range recs {
		if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			quarantined++
			continue
		}
		ch := b.changes[i]
		data := v.GetRecord().GetJson()
		vals, err := rep.decodeCanonical(data)
		if err != nil {
			return none, fmt.Errorf("batch %s record %d: %w", batchID, i, err)
		}
		out = append(out, canonicalRow{op: ch.op, lsn: ch.lsn, seq: ch.seq, recordID: v.GetRecord().GetRecordId(), json: data, vals: vals, resent: ch.resent})
	}
	if quarantined > 0 {
		s.log.Warn("the gate quarantined changes; they are not applied to the replica", "table", t.key, "batch", batchID, "quarantined", quarantined)
	}
	return gateAnswer{accepted: out, quarantined: quarantined, partition: resp.GetPartition()}, nil
}

// blocking reports whether a partition state dooms the partition: sealed
// BLOCKED, or open with a BLOCK check over a count threshold (will_block).
func blocking(p *gatev1.PartitionState) bool {
	return p.GetWillBlock() || p.GetVerdict() == gatev1.PartitionVerdict_PARTITION_VERDICT_BLOCKED
}

// sealPartition seals one of the table's partitions, repeating the call
// while the gate is unreachable (sealing a sealed partition returns its
// verdict, so a repeat is harmless).
func (s *Source) sealPartition(ctx context.Context, t *table, partition string) (*gatev1.PartitionState, error) {
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		resp, err := s.cfg.Gate.SealPartition(ctx, &gatev1.SealPartitionRequest{Subject: t.subject, Partition: partition})
		if err == nil {
			s.log.Info("partition sealed", "table", t.key, "partition", partition, "verdict", resp.GetPartition().GetVerdict().String())
			return resp.GetPartition(), nil
		}
		if ctx.Err() != nil {
			return nil, errStopped
		}
		if !transient(err) {
			return nil, fmt.Errorf("seal partition %s of %s: %w", partition, t.subject, err)
		}
		s.log.Warn("gate unreachable; sealing the partition again", "table", t.key, "partition", partition, "error", err)
		if retry.Wait(ctx) != nil {
			return nil, errStopped
		}
	}
}

// publish appends accepted changes to the outbox pipelines read.
func (s *Source) publish(ctx context.Context, tx pgx.Tx, t *table, version int32, rows []canonicalRow) error {
	return s.publishChunk(ctx, tx, t, version, rows, nil)
}

// publishChunk is publish for the snapshot reads of a chunk, which the
// outbox marks with the chunk's number (nil: stream changes).
func (s *Source) publishChunk(ctx context.Context, tx pgx.Tx, t *table, version int32, rows []canonicalRow, chunk *int) error {
	if len(rows) == 0 {
		return nil
	}
	src := make([][]any, len(rows))
	for i, r := range rows {
		src[i] = []any{s.cfg.Name, t.key, t.subject, string(r.op), int64(r.lsn), r.seq, version, r.recordID, string(r.json), chunk}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"seam_cdc", "outbox"},
		[]string{"connector", "source_table", "subject", "op", "lsn", "seq", "contract_version", "record_id", "record", "chunk"}, pgx.CopyFromRows(src))
	if err != nil {
		return fmt.Errorf("publish %d changes of %s: %w", len(rows), t.name, err)
	}
	return nil
}

// replicaFor returns the replica plan of a contract version.
func (s *Source) replicaFor(ctx context.Context, t *table, version int32) (*replica, error) {
	s.mu.Lock()
	rep := t.replicas[version]
	s.mu.Unlock()
	if rep != nil {
		return rep, nil
	}
	cv, err := s.contractVersion(ctx, t.subject, version)
	if err != nil {
		return nil, err
	}
	model, err := s.canonicalOf(ctx, cv.GetContract())
	if err != nil {
		return nil, err
	}
	rep, err = newReplica(s.cfg.TargetSchema, t.target, model, s.cfg.HardDeletes)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if t.replicas == nil {
		t.replicas = map[int32]*replica{}
	}
	t.replicas[version] = rep
	s.mu.Unlock()
	return rep, nil
}
