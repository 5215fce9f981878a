package gate

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// maxAdaptRecords bounds the records of one adapter call, whatever their
// size, so one call's answer (each record with its provenance) stays small.
const maxAdaptRecords = 10000

// adaptTarget names what the adapter maps records as, and whether the
// canonical records are wanted or only which records fail.
type adaptTarget struct {
	cv                 *compiled
	partition, batchID string
	records            bool
}

// adaptedOK is the result of a record adapted when its canonical record
// was not asked for. It is shared: never modify it.
var adaptedOK = &adapterv1.AdaptResult{}

// adaptRecords asks the adapter to map recs (records that passed the
// checks), in calls whose requests stay under a quarter of the message
// limit: any batch the gate accepts is mapped, however much larger the
// canonical records are than the source ones. Records travel as the
// values the gate decoded (adapterv1.DecodedRecords), so the adapter does
// not parse them again and numbers keep their literals; to an adapter
// that predates decoded records they travel as raw bytes (CSV rows under
// their header, everything else as NDJSON lines). The answer holds
// canonical JSON, packed (one buffer for the batch, not a message per
// record; an adapter that predates packing answers per record). Without
// t.records the adapter encodes no canonical record and an adapted
// record's result is adaptedOK. A call the adapter cannot answer within the limit is
// split in two until it can; a single record whose answer cannot fit is
// refused with ResourceExhausted naming the limit. Results are by the
// records' indices in their batch of n records (nil for a record not in
// recs), with their provenance set to the batch's.
func (s *Server) adaptRecords(ctx context.Context, t adaptTarget, format recordv1.Format, header []byte, recs []*record.Record, n int) ([]*adapterv1.AdaptResult, error) {
	out := make([]*adapterv1.AdaptResult, n)
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

func (s *Server) adaptSpan(ctx context.Context, t adaptTarget, format recordv1.Format, header []byte, recs []*record.Record, out []*adapterv1.AdaptResult) error {
	answer := adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES
	if t.records {
		answer = adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED
	}
	req := &adapterv1.AdaptRequest{Subject: t.cv.subject, Version: t.cv.version, Partition: t.partition, BatchId: t.batchID, Answer: answer}
	buf := adaptBuffers.Get().(*[]byte)
	data := (*buf)[:0]
	raw := s.rawToAdapter.Load()
	if !raw {
		for _, r := range recs {
			data = record.AppendPacked(data, r.Values)
		}
		req.Decoded = &adapterv1.DecodedRecords{Fields: t.cv.paths, Count: int64(len(recs)), Values: data}
	} else {
		var wire recordv1.Format
		var err error
		if data, wire, err = encodeForAdapter(data, format, header, recs); err != nil {
			adaptBuffers.Put(buf)
			return err
		}
		req.Batch = &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: wire, Data: data}}}
	}
	resp, err := s.adapter.Adapt(ctx, req)
	// The request was marshalled before the call returned: its bytes are
	// free again. Calls near the message limit keep theirs to the collector.
	if cap(data) <= maxPooledAdaptBytes {
		*buf = data
		adaptBuffers.Put(buf)
	}
	if !raw && predatesDecoded(err) {
		// An adapter that predates decoded records finds no batch in the
		// call; from now on records go to it as raw bytes.
		s.cfg.Logger.WarnContext(ctx, "the adapter refused decoded records; sending records to it as raw bytes from now on", "error", err)
		s.rawToAdapter.Store(true)
		return s.adaptSpan(ctx, t, format, header, recs, out)
	}
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
	if resp.GetPacked() != nil {
		return unpack(t, resp, recs, out)
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

// predatesDecoded says whether err is an adapter's refusal of a call
// without a batch, as an adapter that predates decoded records answers
// one carrying them: InvalidArgument naming the field batch. A refusal of
// the decoded records themselves names decoded, and is the adapter's
// error to report.
func predatesDecoded(err error) bool {
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		return false
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == "batch" {
					return true
				}
			}
		}
	}
	return false
}

// unpack keys a packed answer's results by the records' indices, checking
// that it answers each record once.
func unpack(t adaptTarget, resp *adapterv1.AdaptResponse, recs []*record.Record, out []*adapterv1.AdaptResult) error {
	p := resp.GetPacked()
	fails := p.GetFailures()
	adapted := len(recs) - len(fails)
	ids, data, ends := p.GetRecordIds(), p.GetJson(), p.GetJsonEnds()
	const idSize = len(mapping.RecordID{})
	if adapted < 0 || t.records && (len(ends) != adapted || len(ids) != idSize*adapted) {
		return peerError("adapter", fmt.Errorf("the adapter answered %d failures, %d canonical records and %d ids for %d records", len(fails), len(ends), len(ids)/idSize, len(recs)))
	}
	// The adapted records' messages are cut from one allocation each, and
	// their ids from one string, rather than five allocations per record.
	var (
		results []adapterv1.AdaptResult
		records []recordv1.CanonicalRecord
		bodies  []recordv1.CanonicalRecord_Json
		provs   []recordv1.Provenance
		idText  string
	)
	if t.records {
		results, records = make([]adapterv1.AdaptResult, adapted), make([]recordv1.CanonicalRecord, adapted)
		bodies, provs = make([]recordv1.CanonicalRecord_Json, adapted), make([]recordv1.Provenance, adapted)
		idText = hex.EncodeToString(ids)
	}
	f, k := 0, 0
	start := uint32(0)
	for i, r := range recs {
		if f < len(fails) && fails[f].GetIndex() == int64(i) {
			ar := fails[f]
			f++
			if len(ar.GetErrors()) == 0 {
				return peerError("adapter", fmt.Errorf("the adapter answered record %d as failed without an error", i))
			}
			ar.Index, ar.Position = r.Index, r.Position
			out[r.Index] = ar
			continue
		}
		if !t.records {
			out[r.Index] = adaptedOK
			continue
		}
		if k == len(ends) {
			// More records left unanswered as failures than announced.
			return peerError("adapter", fmt.Errorf("the adapter answered failures out of order or out of range (%d of %d placed) for a call of %d records", f, len(fails), len(recs)))
		}
		end := ends[k]
		if end < start || int(end) > len(data) {
			return peerError("adapter", fmt.Errorf("the adapter's canonical record %d ends at %d, outside %d..%d", k, end, start, len(data)))
		}
		prov := &provs[k]
		prov.Subject, prov.ContractVersion, prov.Canonical, prov.CanonicalVersion = t.cv.subject, resp.GetVersion(), p.GetCanonical(), p.GetCanonicalVersion()
		prov.Index, prov.Position, prov.Partition, prov.BatchId = r.Index, r.Position, t.partition, t.batchID
		body := &bodies[k]
		body.Json = data[start:end:end]
		rec := &records[k]
		rec.RecordId, rec.Body, rec.Provenance = idText[2*idSize*k:2*idSize*(k+1)], body, prov
		ar := &results[k]
		ar.Index, ar.Position, ar.Record = r.Index, r.Position, rec
		out[r.Index] = ar
		start = end
		k++
	}
	if f != len(fails) {
		return peerError("adapter", fmt.Errorf("the adapter answered failures out of order or out of range (%d of %d placed) for a call of %d records", f, len(fails), len(recs)))
	}
	return nil
}

// adaptBuffers keeps the buffers adapter requests are written into, so a
// batch's records are not copied into fresh memory on every call.
var adaptBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAdaptBytes bounds the buffers adaptBuffers keeps: a rare huge
// batch does not pin its memory.
const maxPooledAdaptBytes = 8 << 20

// encodeForAdapter writes records as one raw batch, reusing dst's memory:
// CSV rows under their header, JSON records (from JSON, NDJSON or Struct
// objects) one object per line. A record without a line feed (every NDJSON
// line) is already a line as it was sent; only the others are compacted.
func encodeForAdapter(dst []byte, format recordv1.Format, header []byte, recs []*record.Record) ([]byte, recordv1.Format, error) {
	size := len(header) + 1
	for _, r := range recs {
		size += len(r.Raw) + 1
	}
	b := bytes.NewBuffer(slices.Grow(dst[:0], size))
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
