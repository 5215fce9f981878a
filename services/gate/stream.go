package gate

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/rpcerr"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// IngestStream ingests a large load: each chunk is a batch of its own,
// keyed by the header's batch id and the chunk's sequence, so a load
// resent after a failure writes each chunk once. A blocked chunk does not
// end the stream: it is counted in blocked_chunks, explained in blocked
// (check, counts, first positions), and nothing of it propagates. A CSV chunk is decoded on its own, so every chunk of a CSV
// load starts with the header row.
func (s *Server) IngestStream(stream gatev1.GateService_IngestStreamServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return rpcerr.InvalidArgument("the ingest stream is empty", rpcerr.FieldViolation{Field: "header", Description: "open the stream with a header"})
		}
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return rpcerr.InvalidArgument("the ingest stream must open with a header", rpcerr.FieldViolation{Field: "header", Description: "send the header (subject, partition, batch id, format) before any chunk"})
	}
	base := batchInput{subject: strings.TrimSpace(h.GetSubject()), partition: strings.TrimSpace(h.GetPartition()),
		batchID: strings.TrimSpace(h.GetBatchId()), version: h.GetContractVersion(),
		batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: h.GetFormat()}}}}
	if err := validateInput(base, "header.batch_id"); err != nil {
		return err
	}
	resp := &gatev1.IngestStreamResponse{Summary: &gatev1.BatchSummary{}}
	allRetried := true
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		c := msg.GetChunk()
		if c == nil {
			return rpcerr.InvalidArgument(fmt.Sprintf("message %d of the stream is a second header", resp.GetChunks()+2),
				rpcerr.FieldViolation{Field: "chunk", Description: "send one header, then chunks"})
		}
		in := base
		in.batchID = fmt.Sprintf("%s#%d", base.batchID, c.GetSequence())
		in.batch = &recordv1.RecordBatch{FirstOffset: c.GetFirstOffset(),
			Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: h.GetFormat(), Data: c.GetData()}}}
		r, err := s.ingest(ctx, in)
		resp.Chunks++
		sum := resp.Summary
		if err != nil {
			if st, ok := status.FromError(err); ok && st.Code() == codes.FailedPrecondition && rpcerr.Reason(err) == "BATCH_BLOCKED" {
				resp.BlockedChunks++
				for _, d := range st.Details() {
					if bd, ok := d.(*gatev1.BlockedDetail); ok {
						sum.Received += bd.GetReceived()
						resp.Blocked = append(resp.Blocked, &gatev1.BlockedChunk{Sequence: c.GetSequence(), FirstOffset: c.GetFirstOffset(), Detail: bd})
						if sum.ContractVersion == 0 {
							sum.ContractVersion = bd.GetContractVersion()
						}
					}
				}
				allRetried = false
				continue
			}
			return status.Errorf(status.Code(err), "chunk %d (sequence %d): %s", resp.GetChunks(), c.GetSequence(), status.Convert(err).Message())
		}
		rs := r.GetSummary()
		sum.Received += rs.GetReceived()
		sum.Accepted += rs.GetAccepted()
		sum.Quarantined += rs.GetQuarantined()
		sum.ContractVersion = rs.GetContractVersion()
		allRetried = allRetried && rs.GetRetried()
		resp.Alerts = append(resp.Alerts, r.GetAlerts()...)
	}
	sum := resp.Summary
	sum.Retried = allRetried && resp.GetChunks() > 0
	switch {
	case resp.GetBlockedChunks() > 0 && resp.GetBlockedChunks() == resp.GetChunks():
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_BLOCKED
	case resp.GetBlockedChunks() > 0 || (sum.GetQuarantined() > 0 && sum.GetAccepted() > 0):
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_PARTIAL
	case sum.GetQuarantined() > 0:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_QUARANTINED
	default:
		sum.Status = gatev1.BatchStatus_BATCH_STATUS_ACCEPTED
	}
	return stream.SendAndClose(resp)
}
