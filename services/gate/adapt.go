package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// maxAdaptRecords bounds the records of one adapter call, whatever their
// size, so one call's answer (each record with its provenance) stays small.
const maxAdaptRecords = 10000

// adaptTarget names what the adapter maps records as.
type adaptTarget struct {
	subject, partition, batchID string
	version                     int32
}

// adaptRecords asks the adapter to map recs (records that passed the
// checks), in calls whose requests stay under a quarter of the message
// limit: any batch the gate accepts is mapped, however much larger the
// canonical records are than the source ones. Records travel as raw
// bytes (CSV rows under their header, everything else as NDJSON lines),
// so numbers keep their literals, objects included, and the answer holds
// canonical JSON. A call the adapter cannot answer within the limit is
// split in two until it can; a single record whose answer cannot fit is
// refused with ResourceExhausted naming the limit. Results are keyed by
// the records' indices, with their provenance set to the batch's.
func (s *Server) adaptRecords(ctx context.Context, t adaptTarget, format recordv1.Format, header []byte, recs []*record.Record) (map[int64]*adapterv1.AdaptResult, error) {
	out := make(map[int64]*adapterv1.AdaptResult, len(recs))
	limit := s.cfg.MaxMessageBytes / 4
	for start := 0; start < len(recs); {
		end, size := start, len(header)+1
		for end < len(recs) && end-start < maxAdaptRecords && (end == start || size+len(recs[end].Raw)+1 <= limit) {
			size += len(recs[end].Raw) + 1
			end++
		}
		if err := s.adaptSpan(ctx, t, format, header, recs[start:end], out); err != nil {
			return nil, err
		}
		start = end
	}
	return out, nil
}

func (s *Server) adaptSpan(ctx context.Context, t adaptTarget, format recordv1.Format, header []byte, recs []*record.Record, out map[int64]*adapterv1.AdaptResult) error {
	data, wire, err := encodeForAdapter(format, header, recs)
	if err != nil {
		return err
	}
	resp, err := s.adapter.Adapt(ctx, &adapterv1.AdaptRequest{Subject: t.subject, Version: t.version, Partition: t.partition, BatchId: t.batchID,
		Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: wire, Data: data}}}})
	if status.Code(err) == codes.ResourceExhausted {
		if len(recs) > 1 {
			half := len(recs) / 2
			if err := s.adaptSpan(ctx, t, format, header, recs[:half], out); err != nil {
				return err
			}
			return s.adaptSpan(ctx, t, format, header, recs[half:], out)
		}
		r := recs[0]
		return rpcerr.WithReason(codes.ResourceExhausted, "ANSWER_TOO_LARGE",
			fmt.Sprintf("the canonical form of the record at position %d (index %d) of batch %s does not fit in one message of %d bytes; send it smaller, or raise --max-message-bytes on the gate and the adapter",
				r.Position, r.Index, t.batchID, s.cfg.MaxMessageBytes),
			map[string]string{"limit_bytes": fmt.Sprint(s.cfg.MaxMessageBytes), "position": fmt.Sprint(r.Position)})
	}
	if err != nil {
		return peerError("adapter", err)
	}
	if len(resp.GetResults()) != len(recs) {
		return peerError("adapter", fmt.Errorf("the adapter answered %d results for %d records", len(resp.GetResults()), len(recs)))
	}
	for _, ar := range resp.GetResults() {
		i := ar.GetIndex()
		if i < 0 || i >= int64(len(recs)) || out[recs[i].Index] != nil {
			return peerError("adapter", fmt.Errorf("the adapter answered for record %d of a call of %d records, twice or out of range", i, len(recs)))
		}
		r := recs[i]
		ar.Index, ar.Position = r.Index, r.Position
		if p := ar.GetRecord().GetProvenance(); p != nil {
			p.Index, p.Position = r.Index, r.Position
		}
		out[r.Index] = ar
	}
	return nil
}

// encodeForAdapter writes records as one raw batch: CSV rows under their
// header, JSON records (from JSON, NDJSON or Struct objects) one object
// per line. A record without a line feed (every NDJSON line) is already a
// line as it was sent; only the others are compacted.
func encodeForAdapter(format recordv1.Format, header []byte, recs []*record.Record) ([]byte, recordv1.Format, error) {
	size := len(header) + 1
	for _, r := range recs {
		size += len(r.Raw) + 1
	}
	b := bytes.NewBuffer(make([]byte, 0, size))
	if format == recordv1.Format_FORMAT_CSV {
		b.Write(header)
		b.WriteByte('\n')
		for _, r := range recs {
			b.Write(r.Raw)
			b.WriteByte('\n')
		}
		return b.Bytes(), recordv1.Format_FORMAT_CSV, nil
	}
	for _, r := range recs {
		if bytes.IndexByte(r.Raw, '\n') < 0 {
			b.Write(r.Raw)
			b.WriteByte('\n')
			continue
		}
		if err := json.Compact(b, r.Raw); err != nil {
			return nil, 0, fmt.Errorf("re-encode the record at position %d for the adapter: %w", r.Position, err)
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), recordv1.Format_FORMAT_NDJSON, nil
}
