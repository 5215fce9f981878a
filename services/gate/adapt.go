package gate

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/verdict"
	"github.com/seamdata/seam/platform/rpcerr"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// maxAdaptRecords bounds the records of one adapter call, whatever their
// size, so one call's answer (each record with its provenance) stays small.
const maxAdaptRecords = 10000

// adaptTarget names what the adapter maps records as, and whether the
// canonical records are wanted or only which records fail. With direct,
// the canonical records are wanted for a packed answer: they stay slices
// of the adapter's packed answers (adapted.canon) rather than becoming a
// message each.
type adaptTarget struct {
	cv                 *compiled
	partition, batchID string
	records            bool
	direct             bool
}

// adaptedOK is the result of a record adapted when its canonical record
// was not asked for, or is in adapted.canon. It is shared: never modify
// it.
var adaptedOK = &adapterv1.AdaptResult{}

// adapted is the adapter's answer for a batch's records, by their indices
// in the batch: a result each (nil for a record not sent), and, when the
// target is direct and every call was answered packed, each adapted
// record's canonical JSON and id in the packed answers (canon, with
// direct set).
type adapted struct {
	results []*adapterv1.AdaptResult
	canon   []canonical
	calls   []packedCall
	direct  bool
}

// canonical places an adapted record's canonical JSON, json[start:end],
// and its id, the k-th, in the packed answer of calls[call].
type canonical struct {
	call       int32
	start, end uint32
	k          int
}

// packedCall is one adapter call's packed answer, as the canonical
// records it holds share it.
type packedCall struct {
	json, ids []byte
	prov      *recordv1.Provenance // the batch's; index and position unset
}

func (c canonical) json(a *adapted) []byte {
	return a.calls[c.call].json[c.start:c.end:c.end]
}

func (c canonical) id(a *adapted) []byte {
	const idSize = len(mapping.RecordID{})
	return a.calls[c.call].ids[idSize*c.k : idSize*(c.k+1) : idSize*(c.k+1)]
}

// adaptRecords asks the adapter to map recs (records that passed the
// checks), in calls whose requests stay under a quarter of the message
// limit: any batch the gate accepts is mapped, however much larger the
// canonical records are than the source ones. Records travel as the
// values the gate decoded (adapterv1.DecodedRecords), so the adapter does
// not parse them again and numbers keep their literals. The answer holds
// canonical JSON, packed (one buffer for the batch, not a message per
// record; an adapter that predates packing answers per record). Without
// t.records the adapter encodes no canonical record and an adapted
// record's result is adaptedOK. A call the adapter cannot answer within the limit is
// split in two until it can; a single record whose answer cannot fit is
// refused with ResourceExhausted naming the limit. Results are by the
// records' indices in their batch of n records, with their provenance set
// to the batch's.
func (s *Server) adaptRecords(ctx context.Context, t adaptTarget, header []byte, recs []*record.Record, n int) (*adapted, error) {
	out := &adapted{results: make([]*adapterv1.AdaptResult, n)}
	if t.records {
		out.canon = make([]canonical, n)
	}
	limit := s.cfg.MaxMessageBytes / 4
	for start := 0; start < len(recs); {
		end, size := start, len(header)+1
		for end < len(recs) && end-start < maxAdaptRecords && (end == start || size+len(recs[end].Raw)+1 <= limit) {
			size += len(recs[end].Raw) + 1
			end++
		}
		if err := s.adaptSpan(ctx, t, recs[start:end], out); err != nil {
			return nil, err
		}
		start = end
	}
	// Canonical records become a message each unless they are wanted
	// packed and every call answered packed (an adapter that predates
	// packing answers a message a record).
	out.direct = t.direct && !slices.ContainsFunc(recs, func(r *record.Record) bool {
		ar := out.results[r.Index]
		return ar != adaptedOK && len(ar.GetErrors()) == 0
	})
	if t.records && !out.direct {
		out.messages(t, recs)
	}
	return out, nil
}

// messages gives each adapted record of recs placed in a.canon its
// canonical record as a message. The messages are cut from one
// allocation each, and their ids from one string, rather than five
// allocations per record.
func (a *adapted) messages(t adaptTarget, recs []*record.Record) {
	n := 0
	for _, r := range recs {
		if a.results[r.Index] == adaptedOK {
			n++
		}
	}
	results, records := make([]adapterv1.AdaptResult, n), make([]recordv1.CanonicalRecord, n)
	bodies, provs := make([]recordv1.CanonicalRecord_Json, n), make([]recordv1.Provenance, n)
	ids := make([]byte, 0, 2*len(mapping.RecordID{})*n)
	for _, r := range recs {
		if a.results[r.Index] == adaptedOK {
			ids = hex.AppendEncode(ids, a.canon[r.Index].id(a))
		}
	}
	idText := string(ids)
	const idSize = 2 * len(mapping.RecordID{})
	k := 0
	for _, r := range recs {
		if a.results[r.Index] != adaptedOK {
			continue
		}
		c := a.canon[r.Index]
		prov := &provs[k]
		call := a.calls[c.call].prov
		prov.Subject, prov.ContractVersion, prov.Canonical, prov.CanonicalVersion = call.GetSubject(), call.GetContractVersion(), call.GetCanonical(), call.GetCanonicalVersion()
		prov.Index, prov.Position, prov.Partition, prov.BatchId = r.Index, r.Position, t.partition, t.batchID
		body := &bodies[k]
		body.Json = c.json(a)
		rec := &records[k]
		rec.RecordId, rec.Body, rec.Provenance = idText[idSize*k:idSize*(k+1)], body, prov
		ar := &results[k]
		ar.Index, ar.Position, ar.Record = r.Index, r.Position, rec
		a.results[r.Index] = ar
		k++
	}
}

func (s *Server) adaptSpan(ctx context.Context, t adaptTarget, recs []*record.Record, out *adapted) error {
	answer := adapterv1.AdaptAnswer_ADAPT_ANSWER_FAILURES
	if t.records {
		answer = adapterv1.AdaptAnswer_ADAPT_ANSWER_PACKED
	}
	req := &adapterv1.AdaptRequest{Subject: t.cv.subject, Version: t.cv.version, Partition: t.partition, BatchId: t.batchID, Answer: answer}
	buf := adaptBuffers.Get().(*[]byte)
	data := (*buf)[:0]
	for _, r := range recs {
		data = record.AppendPacked(data, r.Values)
	}
	req.Decoded = &adapterv1.DecodedRecords{Fields: t.cv.paths, Count: int64(len(recs)), Values: data}
	resp, err := s.adapter.Adapt(ctx, req)
	// The request was marshalled before the call returned: its bytes are
	// free again. Calls near the message limit keep theirs to the collector.
	if cap(data) <= maxPooledAdaptBytes {
		*buf = data
		adaptBuffers.Put(buf)
	}
	if status.Code(err) == codes.ResourceExhausted {
		if len(recs) > 1 {
			half := len(recs) / 2
			if err := s.adaptSpan(ctx, t, recs[:half], out); err != nil {
				return err
			}
			return s.adaptSpan(ctx, t, recs[half:], out)
		}
		r := recs[0]
		return rpcerr.WithReason(codes.ResourceExhausted, "ANSWER_TOO_LARGE",
			fmt.Sprintf("the canonical form of the record at position %d (index %d) of batch %s does not fit in one message of %d bytes; send it smaller, or raise --max-message-bytes on the gate and the adapter",
				r.Position, r.Index, t.batchID, s.cfg.MaxMessageBytes),
			map[string]string{"limit_bytes": fmt.Sprint(s.cfg.MaxMessageBytes), "position": fmt.Sprint(r.Position)})
	}
	if err != nil {
		return peerError(ctx, "adapter", err)
	}
	if resp.GetPacked() != nil {
		return unpack(t, resp, recs, out)
	}
	if len(resp.GetResults()) != len(recs) {
		return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter answered %d results for %d records", len(resp.GetResults()), len(recs)))
	}
	for _, ar := range resp.GetResults() {
		i := ar.GetIndex()
		if i < 0 || i >= int64(len(recs)) || out.results[recs[i].Index] != nil {
			return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter answered for record %d of a call of %d records, twice or out of range", i, len(recs)))
		}
		r := recs[i]
		ar.Index, ar.Position = r.Index, r.Position
		if p := ar.GetRecord().GetProvenance(); p != nil {
			p.Index, p.Position = r.Index, r.Position
		}
		out.results[r.Index] = ar
	}
	return nil
}

// unpack places a packed answer's results by the records' indices,
// checking that it answers each record once: a failure's result, or
// adaptedOK with, when canonical records were asked for, where the
// record's canonical JSON and id lie in the answer (out.canon).
func unpack(t adaptTarget, resp *adapterv1.AdaptResponse, recs []*record.Record, out *adapted) error {
	p := resp.GetPacked()
	fails := p.GetFailures()
	adapted := len(recs) - len(fails)
	ids, data, ends := p.GetRecordIds(), p.GetJson(), p.GetJsonEnds()
	const idSize = len(mapping.RecordID{})
	if adapted < 0 || t.records && (len(ends) != adapted || len(ids) != idSize*adapted) {
		return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter answered %d failures, %d canonical records and %d ids for %d records", len(fails), len(ends), len(ids)/idSize, len(recs)))
	}
	call := int32(len(out.calls))
	if t.records {
		out.calls = append(out.calls, packedCall{json: data, ids: ids, prov: &recordv1.Provenance{Subject: t.cv.subject, ContractVersion: resp.GetVersion(),
			Canonical: p.GetCanonical(), CanonicalVersion: p.GetCanonicalVersion(), Partition: t.partition, BatchId: t.batchID}})
	}
	f, k := 0, 0
	start := uint32(0)
	for i, r := range recs {
		if f < len(fails) && fails[f].GetIndex() == int64(i) {
			ar := fails[f]
			f++
			if len(ar.GetErrors()) == 0 {
				return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter answered record %d as failed without an error", i))
			}
			ar.Index, ar.Position = r.Index, r.Position
			out.results[r.Index] = ar
			continue
		}
		out.results[r.Index] = adaptedOK
		if !t.records {
			continue
		}
		if k == len(ends) {
			// More records left unanswered as failures than announced.
			return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter answered failures out of order or out of range (%d of %d placed) for a call of %d records", f, len(fails), len(recs)))
		}
		end := ends[k]
		if end < start || int(end) > len(data) {
			return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter's canonical record %d ends at %d, outside %d..%d", k, end, start, len(data)))
		}
		out.canon[r.Index] = canonical{call: call, start: start, end: end, k: k}
		start = end
		k++
	}
	if f != len(fails) {
		return rpcerr.Unavailable("adapter", fmt.Errorf("the adapter answered failures out of order or out of range (%d of %d placed) for a call of %d records", f, len(fails), len(recs)))
	}
	return nil
}

// adaptBuffers keeps the buffers adapter requests are written into, so a
// batch's records are not copied into fresh memory on every call.
var adaptBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAdaptBytes bounds the buffers adaptBuffers keeps: a rare huge
// batch does not pin its memory.
const maxPooledAdaptBytes = 8 << 20

// packDirect packs a batch's verdicts vs (in index order) as verdict.Pack
// packs them with their canonical records, taking each accepted record's
// canonical JSON and id from the adapter's packed answers (a.canon)
// rather than from a message per record. When the accepted records lie
// side by side in one answer, as they do unless the adapter failed some
// or the batch took several calls, the packing shares the answer's bytes.
func packDirect(vs []*gatev1.RecordVerdict, a *adapted) (*gatev1.PackedVerdicts, error) {
	p := &gatev1.PackedVerdicts{}
	accepted, alerted, size := 0, 0, 0
	var first, last canonical
	side := true // the accepted records lie side by side in one answer
	for i, v := range vs {
		if v.GetIndex() != int64(i) {
			return nil, fmt.Errorf("verdict %d has index %d; pack a batch's verdicts in index order", i, v.GetIndex())
		}
		if v.GetSequence() != vs[0].GetSequence() {
			return nil, fmt.Errorf("verdict %d is of stream chunk %d, verdict 0 of chunk %d; pack one chunk at a time", i, v.GetSequence(), vs[0].GetSequence())
		}
		if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			continue
		}
		if a.results[i] != adaptedOK {
			return nil, fmt.Errorf("record %d is accepted without a canonical record from the adapter", i)
		}
		c := a.canon[i]
		if accepted == 0 {
			first = c
		} else if c.call != last.call || c.start != last.end || c.k != last.k+1 {
			side = false
		}
		if !verdict.SameBatch(a.calls[c.call].prov, a.calls[first.call].prov) {
			return nil, fmt.Errorf("record %d: the adapter's answers name different provenance: %v and %v", i, a.calls[c.call].prov, a.calls[first.call].prov)
		}
		last = c
		accepted++
		size += int(c.end - c.start)
		if len(v.GetAlerts()) > 0 {
			alerted++
		}
	}
	if size > math.MaxUint32 {
		return nil, fmt.Errorf("the accepted records' canonical JSON is %d bytes, over the 4 GiB a packed answer addresses", size)
	}
	if len(vs) > 0 {
		p.Sequence = vs[0].GetSequence()
	}
	const idSize = len(mapping.RecordID{})
	if accepted > 0 {
		prov := a.calls[first.call].prov
		p.Provenance = &recordv1.Provenance{Subject: prov.GetSubject(), ContractVersion: prov.GetContractVersion(), Canonical: prov.GetCanonical(),
			CanonicalVersion: prov.GetCanonicalVersion(), Partition: prov.GetPartition(), BatchId: prov.GetBatchId()}
		p.Positions, p.JsonEnds = make([]int64, 0, accepted), make([]uint32, 0, accepted)
		if side {
			call := a.calls[first.call]
			p.Json = call.json[first.start:last.end:last.end]
			p.RecordIds = call.ids[idSize*first.k : idSize*(last.k+1) : idSize*(last.k+1)]
		} else {
			p.Json, p.RecordIds = make([]byte, 0, size), make([]byte, 0, idSize*accepted)
		}
	}
	if accepted < len(vs) {
		p.Others = make([]*gatev1.RecordVerdict, 0, len(vs)-accepted)
	}
	if alerted > 0 {
		p.AcceptedAlerts = make([]*gatev1.RecordAlerts, 0, alerted)
	}
	alerts := make([]gatev1.RecordAlerts, alerted) // cut from one allocation
	end := uint32(0)
	for i, v := range vs {
		if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			p.Others = append(p.Others, v)
			continue
		}
		if len(v.GetAlerts()) > 0 {
			al := &alerts[0]
			alerts = alerts[1:]
			al.Index, al.Checks = v.GetIndex(), v.GetAlerts()
			p.AcceptedAlerts = append(p.AcceptedAlerts, al)
		}
		p.Positions = append(p.Positions, v.GetPosition())
		c := a.canon[i]
		end += c.end - c.start
		p.JsonEnds = append(p.JsonEnds, end)
		if !side {
			p.Json = append(p.Json, c.json(a)...)
			p.RecordIds = append(p.RecordIds, c.id(a)...)
		}
	}
	return p, nil
}
