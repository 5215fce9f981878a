package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// streamHeldVerdicts is how many verdicts of records not accepted a
// summary_only stream answer carries.
const streamHeldVerdicts = 1000

// heldVerdicts keeps the verdicts of records not accepted, at most room
// of them, and counts the rest of those in omitted.
func heldVerdicts(vs []*gatev1.RecordVerdict, room int, omitted *int64) []*gatev1.RecordVerdict {
	var out []*gatev1.RecordVerdict
	for _, v := range vs {
		if v.GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			continue
		}
		if len(out) < room {
			out = append(out, v)
		} else {
			*omitted++
		}
	}
	return out
}

// IngestStream ingests a large load of one partition: each chunk is a
// batch of its own, keyed by the header's batch id and the chunk's
// sequence, so a load resent after a failure writes each chunk once.
// Sequences must increase by one from chunk to chunk: a repeated or
// skipped one is refused, naming it, so no chunk is silently stored under
// another's key. The answer adds up the chunks as stored and carries
// their verdicts with canonical records (asked packed, each chunk's
// packed in its chunk result, as Ingest answers the chunk), or, when the
// header asked for a summary only, the counts and the first verdicts of
// records not accepted. A CSV chunk is decoded on its own, so every chunk
// of a CSV load starts with the header row.
func (s *Server) IngestStream(stream gatev1.GateService_IngestStreamServer) error {
	ctx := stream.Context()
	h, err := rpcerr.RecvHeader(stream.Recv, (*gatev1.IngestStreamRequest).GetHeader, "ingest",
		"send the header (subject, partition, batch id, format) before any chunk")
	if err != nil {
		return err
	}
	base := batchInput{subject: strings.TrimSpace(h.GetSubject()), partition: strings.TrimSpace(h.GetPartition()),
		batchID: strings.TrimSpace(h.GetBatchId()), version: h.GetContractVersion(), withRecords: !h.GetSummaryOnly(), replace: h.GetReplace(),
		batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: h.GetFormat()}}}}
	base.replaceKey = "stream:" + base.batchID
	if base.packed, err = packedAnswer(h.GetAnswer(), h.GetSummaryOnly(), "header.answer"); err != nil {
		return err
	}
	if err := validateInput(base, "header.batch_id"); err != nil {
		return err
	}
	resp := &gatev1.IngestStreamResponse{Summary: &gatev1.BatchSummary{}}
	limit := s.cfg.MaxMessageBytes - s.cfg.MaxMessageBytes/16
	size := 0
	allRetried := true
	ctx, cancel := context.WithCancel(ctx)
	jobs := s.receiveChunks(ctx, stream, base, h.GetFormat())
	defer func() {
		// What was prepared ahead and not committed is dropped, once the
		// receiver has stopped (the stream ends with this handler).
		cancel()
		go func() {
			for j := range jobs {
				<-j.ready
				if j.p != nil {
					j.p.drop()
				}
			}
		}()
	}()
	for j := range jobs {
		<-j.ready
		if j.err != nil {
			return j.err
		}
		seq := j.p.in.sequence
		r, err := s.finish(j.p)
		if err != nil {
			return chunkError(resp.GetChunks()+1, seq, err)
		}
		resp.Chunks++
		rs := r.GetSummary()
		resp.ChunkResults = append(resp.ChunkResults, &gatev1.ChunkResult{Sequence: seq, Summary: rs, Packed: r.GetPacked()})
		sum := resp.Summary
		sum.Received += rs.GetReceived()
		sum.Accepted += rs.GetAccepted()
		sum.Quarantined += rs.GetQuarantined()
		sum.Duplicates += rs.GetDuplicates()
		sum.ContractVersion = rs.GetContractVersion()
		allRetried = allRetried && rs.GetRetried()
		resp.Alerts = append(resp.Alerts, r.GetAlerts()...)
		resp.Partition = r.GetPartition()
		records := r.GetRecords()
		if h.GetSummaryOnly() {
			records = heldVerdicts(records, streamHeldVerdicts-len(resp.Records), &resp.VerdictsOmitted)
		}
		for _, v := range records {
			size += proto.Size(v)
		}
		if r.GetPacked() != nil {
			size += proto.Size(r.GetPacked())
		}
		if size > limit {
			return rpcerr.WithReason(codes.ResourceExhausted, "ANSWER_TOO_LARGE",
				fmt.Sprintf("the answer to stream %s would be over the gate's message limit of %d bytes after chunk %d (sequence %d); chunks up to it are stored — send the stream again with summary_only in its header (stored chunks are recognised, not written twice)",
					base.batchID, s.cfg.MaxMessageBytes, resp.GetChunks(), seq),
				map[string]string{"limit_bytes": fmt.Sprint(s.cfg.MaxMessageBytes), "batch_id": base.batchID, "sequence": fmt.Sprint(seq)})
		}
		resp.Records = append(resp.Records, records...)
	}
	sum := resp.Summary
	sum.Retried = allRetried && resp.GetChunks() > 0
	switch {
	case sum.GetQuarantined() > 0 && sum.GetAccepted() > 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_PARTIAL
	case sum.GetQuarantined() > 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_QUARANTINED
	default:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_ACCEPTED
	}
	if h.GetSeal() {
		state, err := s.seal(ctx, base.subject, base.partition, gatev1.SealCause_SEAL_CAUSE_REQUEST, auth.NameFromContext(ctx))
		if err != nil {
			return err
		}
		resp.Partition = state
		resp.Alerts = append(resp.Alerts, state.GetAlerts()...)
	}
	return stream.SendAndClose(resp)
}

// chunkError is err, which ended the stream at its chunk'th chunk (of
// sequence seq), saying so. A status keeps its code and details; any
// other error stays wrapped, so a stream whose caller went away ends
// Canceled rather than as an internal error.
func chunkError(chunk, seq int64, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		p := st.Proto()
		p.Message = fmt.Sprintf("chunk %d (sequence %d): %s", chunk, seq, st.Message())
		return status.ErrorProto(p)
	}
	return fmt.Errorf("chunk %d (sequence %d): %w", chunk, seq, err)
}

// chunkJob is one message of an ingest stream in order: a chunk being
// prepared (p, once ready is closed) or what ends the stream (err).
type chunkJob struct {
	p     *prepared
	err   error
	ready chan struct{}
}

// receiveChunks reads the stream's chunks and starts preparing each as it
// arrives, so a chunk is decoded, validated and adapted while the one
// before it commits; the jobs come out in stream order, at most two ahead
// of the chunk committing. A message that is not the next chunk ends the
// jobs with its error, after the chunks before it.
func (s *Server) receiveChunks(ctx context.Context, stream gatev1.GateService_IngestStreamServer, base batchInput, format recordv1.Format) <-chan *chunkJob {
	jobs := make(chan *chunkJob, 1)
	go func() {
		defer close(jobs)
		prev := int64(-1)
		for n := 0; ; n++ {
			j := &chunkJob{ready: make(chan struct{})}
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err == nil {
				var in batchInput
				in, err = chunkInput(base, format, msg, n, prev)
				if err == nil {
					prev = in.sequence
					go func() {
						defer close(j.ready)
						j.p = s.prepare(ctx, in)
						j.p.ahead = true
					}()
				}
			}
			if err != nil {
				j.err = err
				close(j.ready)
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				<-j.ready
				if j.p != nil {
					j.p.drop()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return jobs
}

// chunkInput is the batch of the stream's message after n chunks, the
// last with sequence prev (-1 before the first): a chunk whose sequence
// is the previous plus one. Anything else is refused, naming it, so no
// chunk is silently stored under another's key.
func chunkInput(base batchInput, format recordv1.Format, msg *gatev1.IngestStreamRequest, n int, prev int64) (batchInput, error) {
	c := msg.GetChunk()
	if c == nil {
		return batchInput{}, rpcerr.InvalidArgument(fmt.Sprintf("message %d of the stream is a second header", n+2),
			rpcerr.FieldViolation{Field: "chunk", Description: "send one header, then chunks"})
	}
	seq := c.GetSequence()
	switch {
	case seq < 0:
		return batchInput{}, rpcerr.InvalidArgument(fmt.Sprintf("chunk %d has the negative sequence %d", n+1, seq),
			rpcerr.FieldViolation{Field: "chunk.sequence", Description: "number chunks from 0 (or from where a resent load resumes), each the previous plus one"})
	case prev >= 0 && seq != prev+1:
		what := "repeats"
		if seq > prev+1 {
			what = "skips"
		} else if seq < prev {
			what = "goes back to"
		}
		return batchInput{}, rpcerr.InvalidArgument(fmt.Sprintf("chunk %d has sequence %d, which %s a sequence: after sequence %d the next chunk is %d; chunks before it are stored, this one and later ones are not",
			n+1, seq, what, prev, prev+1),
			rpcerr.FieldViolation{Field: "chunk.sequence", Description: fmt.Sprintf("send sequence %d: each chunk's sequence is the previous plus one, so every chunk is stored under a key of its own", prev+1)})
	}
	in := base
	in.batchID = fmt.Sprintf("%s#%d", base.batchID, seq)
	in.sequence = seq
	in.replace = base.replace // applies once per stream: its replace key is the stream's
	in.batch = &recordv1.RecordBatch{FirstOffset: c.GetFirstOffset(),
		Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: format, Data: c.GetData()}}}
	return in, nil
}
