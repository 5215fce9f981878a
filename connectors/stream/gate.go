package stream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// maxGapLines is the largest run of missing positions padded with blank
// NDJSON lines inside one gate batch; a larger gap starts another batch.
const maxGapLines = 4096

// subBatch is the part of a source batch that falls in one gate
// partition, one contract version (Confluent's wire format names one per
// message; 0 is the connector's) and one run of near-contiguous positions.
type subBatch struct {
	part    string
	version int32
	batchID string
	msgs    []Message
}

// batchName is a source's name as its batch ids begin: a path separator
// (Kafka's topic/partition) written as ":", which the gate's naming rule
// allows.
func batchName(source string) string {
	return strings.NewReplacer("/", ":", "\\", ":").Replace(source)
}

// split cuts a source batch by gate partition and contract version, in
// position order within each. The batch id is the source name and the
// batch's position range, so a redelivered batch carries the same
// identity; runs after a large position gap get the run's first position
// as a suffix, and a run judged with a version named by its messages
// (Confluent's wire format) gets "~v" and the version. A batch id may not
// hold a path separator (the gate's naming rule): a Kafka source's
// topic/partition is written topic:partition in it.
func split(source string, from, to int64, msgs []Message, partOf func(Message) (string, int32)) []subBatch {
	base := fmt.Sprintf("%s@%d-%d", batchName(source), from, to)
	type key struct {
		part    string
		version int32
	}
	byKey := map[key][]Message{}
	var order []key
	for _, m := range msgs {
		p, v := partOf(m)
		k := key{p, v}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], m)
	}
	var out []subBatch
	for _, k := range order {
		ms := byKey[k]
		start := 0
		for i := 1; i <= len(ms); i++ {
			if i < len(ms) && ms[i].Position-ms[i-1].Position-1 <= maxGapLines {
				continue
			}
			id := base
			if start > 0 {
				id = fmt.Sprintf("%s+%d", base, ms[start].Position)
			}
			if k.version != 0 {
				id = fmt.Sprintf("%s~v%d", id, k.version)
			}
			out = append(out, subBatch{part: k.part, version: k.version, batchID: id, msgs: ms[start:i]})
			start = i
		}
	}
	return out
}

// ndjson encodes messages as NDJSON whose line numbers are their source
// positions: with first_offset one below the first position, the gate's
// position of each record (first_offset plus its line) is its broker
// position, and quarantined records name it. Gaps are blank lines, which
// the gate skips but counts. A value that is not one JSON line is made one:
// compacted when it is valid JSON, its line breaks blanked when it is not
// (the gate then quarantines it as MALFORMED, never drops it); an empty
// value is sent as null, which the gate quarantines too.
func ndjson(msgs []Message) (data []byte, firstOffset int64) {
	firstOffset = msgs[0].Position - 1
	prev := firstOffset
	var buf bytes.Buffer
	for _, m := range msgs {
		for gap := m.Position - prev - 1; gap > 0; gap-- {
			buf.WriteByte('\n')
		}
		prev = m.Position
		v := bytes.TrimSpace(m.Value)
		switch {
		case len(v) == 0:
			buf.WriteString("null")
		case !bytes.ContainsAny(v, "\r\n"):
			buf.Write(v)
		case json.Valid(v):
			_ = json.Compact(&buf, v) // cannot fail on valid JSON
		default:
			buf.Write(bytes.Map(func(r rune) rune {
				if r == '\n' || r == '\r' {
					return ' '
				}
				return r
			}, v))
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes(), firstOffset
}

// ingestResult is the gate's answer to one sub-batch.
type ingestResult struct {
	accepted    []staged
	quarantined int
	// contained is true when the gate held records because the source is
	// contained.
	contained bool
	// blocked is the gate's reason when it BLOCKED the batch.
	blocked string
	retried bool
}

// errFatal marks a gate answer that retrying cannot change.
var errFatal = errors.New("the gate refused the batch")

// ingest sends one sub-batch, retrying while the gate is unreachable or
// overloaded: the batch id makes every retry safe.
func (c *Connector) ingest(ctx context.Context, sb subBatch) (ingestResult, error) {
	data, first := ndjson(sb.msgs)
	version := c.cfg.ContractVersion
	if sb.version != 0 {
		version = sb.version
	}
	req := &gatev1.IngestRequest{Subject: c.cfg.Subject, Partition: sb.part, ContractVersion: version,
		Identity: &gatev1.IngestRequest_BatchId{BatchId: sb.batchID},
		Batch: &recordv1.RecordBatch{FirstOffset: first, Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{
			Format: recordv1.Format_FORMAT_NDJSON, Data: data}}}}
	var resp *gatev1.IngestResponse
	err := c.retry(ctx, "ingest batch "+sb.batchID+" of partition "+sb.part, func(ctx context.Context) error {
		var err error
		resp, err = c.gate.Ingest(ctx, req)
		return err
	})
	if err != nil {
		if reason, ok := blockedReason(err); ok {
			return ingestResult{blocked: reason}, nil
		}
		return ingestResult{}, err
	}
	out := ingestResult{retried: resp.GetSummary().GetRetried()}
	for _, v := range resp.GetRecords() {
		switch v.GetStatus() {
		case gatev1.RecordStatus_RECORD_STATUS_ACCEPTED:
			rec := v.GetRecord()
			body := rec.GetJson()
			if body == nil {
				return ingestResult{}, fmt.Errorf("%w: batch %s: the gate answered record %d without its canonical JSON", errFatal, sb.batchID, v.GetIndex())
			}
			out.accepted = append(out.accepted, staged{ID: deliveryID(rec.GetRecordId(), sb.batchID, v.GetPosition()), RecordID: rec.GetRecordId(),
				Position: v.GetPosition(), BatchID: sb.batchID, Version: rec.GetProvenance().GetContractVersion(), JSON: body})
		case gatev1.RecordStatus_RECORD_STATUS_QUARANTINED:
			out.quarantined++
			for _, r := range v.GetReasons() {
				if r.GetCode() == recordv1.ErrorCode_ERROR_CODE_SOURCE_CONTAINED {
					out.contained = true
				}
			}
		}
	}
	return out, nil
}

// deliveryID identifies one accepted source record on the output. It
// starts with the gate's record id (which names the entity, so it repeats
// when a key is updated) and adds a hash of the batch and position the
// record came from, so an update is never taken for a duplicate while a
// redelivery, a retry or a replay of the same source record always is.
func deliveryID(recordID, batchID string, position int64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d:%s%d", len(batchID), batchID, position))
	return recordID + "." + hex.EncodeToString(h[:8])
}

// blockedReason reports whether err is the gate's BLOCKED answer.
func blockedReason(err error) (string, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return "", false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "BATCH_BLOCKED" {
			return st.Message(), true
		}
	}
	return "", false
}

// transient reports whether a failed call may succeed when retried.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// retry runs call until it succeeds, fails for good, or ctx ends, with
// capped exponential backoff; each attempt gets the call timeout.
func (c *Connector) retry(ctx context.Context, what string, call func(context.Context) error) error {
	backoff := firstBackoff
	for {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		err := call(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !transient(err) {
			if _, ok := blockedReason(err); ok {
				return err
			}
			st := status.Convert(err)
			return fmt.Errorf("%w: %s: %s (%s)", errFatal, what, strings.TrimSpace(st.Message()), st.Code())
		}
		c.log.Warn("the gate did not answer; retrying the same call", "call", what, "error", status.Convert(err).Message(), "backoff", backoff)
		if backoff, err = pause(ctx, backoff); err != nil {
			return err
		}
	}
}

// The connector's backoff between attempts of a call that may succeed
// when repeated (a gate call, a publish): from firstBackoff, doubling up
// to maxBackoff.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// pause waits d, or until ctx ends, and returns the wait before the next
// attempt.
func pause(ctx context.Context, d time.Duration) (time.Duration, error) {
	select {
	case <-ctx.Done():
		return d, ctx.Err()
	case <-time.After(d):
	}
	return min(2*d, maxBackoff), nil
}
