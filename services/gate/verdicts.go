package gate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/verdict"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// An idempotency row keeps a batch's per-record verdicts compactly, about
// two bytes per accepted record: for each record its position (as the
// difference to the previous one, usually 1), its status, the ALERT checks
// it failed (by their index in the contract's checks) and, when
// quarantined, its error codes. The reasons' messages are the quarantine's
// (read back from it); canonical records are kept apart, only when the
// caller asked for them, for Config.AnswerTTL.

const (
	verdictAccepted    = 1
	verdictQuarantined = 2
	verdictAlerts      = 0x10
)

// encodeVerdicts encodes a batch's verdicts.
func encodeVerdicts(plan *check.Plan, recs []*gatev1.RecordVerdict) ([]byte, error) {
	checkIndex := make(map[string]int, len(plan.Checks()))
	for i, ch := range plan.Checks() {
		checkIndex[ch.Name] = i
	}
	out := binary.AppendUvarint(make([]byte, 0, 2*len(recs)+8), uint64(len(recs)))
	prev := int64(0)
	for i, v := range recs {
		if v.GetIndex() != int64(i) {
			return nil, fmt.Errorf("verdict %d has index %d", i, v.GetIndex())
		}
		out = binary.AppendVarint(out, v.GetPosition()-prev)
		prev = v.GetPosition()
		flags := byte(verdictAccepted)
		if v.GetStatus() == gatev1.RecordStatus_RECORD_STATUS_QUARANTINED {
			flags = verdictQuarantined
		}
		if len(v.GetAlerts()) > 0 {
			flags |= verdictAlerts
		}
		out = append(out, flags)
		if flags&verdictAlerts != 0 {
			out = binary.AppendUvarint(out, uint64(len(v.GetAlerts())))
			for _, name := range v.GetAlerts() {
				idx, ok := checkIndex[name]
				if !ok {
					return nil, fmt.Errorf("record %d failed ALERT check %q, which version %s does not have", i, name, "of its contract")
				}
				out = binary.AppendUvarint(out, uint64(idx))
			}
		}
		if flags&verdictQuarantined != 0 {
			out = binary.AppendUvarint(out, uint64(len(v.GetReasons())))
			for _, r := range v.GetReasons() {
				out = binary.AppendUvarint(out, uint64(r.GetCode()))
			}
		}
	}
	return out, nil
}

var errVerdicts = errors.New("stored verdicts are corrupt")

// decodeVerdicts rebuilds a batch's verdicts. reasons holds the quarantine's
// reasons by record index; a record whose quarantine row retention removed
// gets its error codes only.
func decodeVerdicts(plan *check.Plan, b []byte, reasons map[int64][]*recordv1.RecordError) ([]*gatev1.RecordVerdict, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errVerdicts
	}
	b = b[k:]
	out := make([]*gatev1.RecordVerdict, n)
	pos := int64(0)
	checks := plan.Checks()
	for i := range out {
		d, k := binary.Varint(b)
		if k <= 0 || len(b) <= k {
			return nil, errVerdicts
		}
		pos += d
		flags := b[k]
		b = b[k+1:]
		v := &gatev1.RecordVerdict{Index: int64(i), Position: pos, Status: gatev1.RecordStatus_RECORD_STATUS_ACCEPTED}
		if flags&verdictAlerts != 0 {
			m, k := binary.Uvarint(b)
			if k <= 0 || m > uint64(len(b)) {
				return nil, errVerdicts
			}
			b = b[k:]
			for range m {
				idx, k := binary.Uvarint(b)
				if k <= 0 || idx >= uint64(len(checks)) {
					return nil, errVerdicts
				}
				b = b[k:]
				v.Alerts = append(v.Alerts, checks[idx].Name)
			}
		}
		if flags&verdictQuarantined != 0 {
			v.Status = gatev1.RecordStatus_RECORD_STATUS_QUARANTINED
			m, k := binary.Uvarint(b)
			if k <= 0 || m > uint64(len(b)) {
				return nil, errVerdicts
			}
			b = b[k:]
			var codes []recordv1.ErrorCode
			for range m {
				c, k := binary.Uvarint(b)
				if k <= 0 {
					return nil, errVerdicts
				}
				b = b[k:]
				codes = append(codes, recordv1.ErrorCode(c))
			}
			if kept, ok := reasons[int64(i)]; ok {
				v.Reasons = kept
			} else {
				for _, c := range codes {
					v.Reasons = append(v.Reasons, &recordv1.RecordError{Code: c,
						Message: "the quarantined record was removed by retention after it was settled; only its error code is kept"})
				}
			}
		}
		out[i] = v
	}
	if len(b) != 0 {
		return nil, errVerdicts
	}
	return out, nil
}

// answerForm is how a batch's kept canonical records are encoded.
type answerForm int

const (
	// answerPerRecord is encodeRecords: each canonical record a message.
	answerPerRecord answerForm = 1
	// answerPacked is the batch's verdicts as one verdict.Pack message:
	// the canonical JSON side by side, the ids as bytes, the provenance
	// once. Verdicts the packed form cannot say are kept per record.
	answerPacked answerForm = 2
	// answerPackedS2 is answerPacked compressed with S2: canonical JSON
	// repeats its field names in every record, and a batch's kept answer
	// is most of what a batch with records writes.
	answerPackedS2 answerForm = 3
)

// encodeAnswer keeps the canonical records of a batch's verdicts vs (in
// index order): packed, the packing of vs, compressed, or a record at a
// time when vs could not be packed (packed is nil). The kept answer
// keeps of the records not accepted only their place: their reasons are
// the quarantine's. The bytes of a packed answer lie in pooled buffers:
// call free once they are written.
func encodeAnswer(vs []*gatev1.RecordVerdict, packed *gatev1.PackedVerdicts) (form answerForm, b []byte, free func(), err error) {
	if packed == nil {
		b, err := encodeRecords(vs)
		return answerPerRecord, b, func() {}, err
	}
	others := packed.GetOthers()
	places := make([]*gatev1.RecordVerdict, len(others))
	held := make([]gatev1.RecordVerdict, len(others)) // cut from one allocation
	for i, v := range others {
		h := &held[i]
		h.Index, h.Position, h.Status, h.Sequence = v.GetIndex(), v.GetPosition(), v.GetStatus(), v.GetSequence()
		places[i] = h
	}
	// The answer's own verdicts, with only the places of the others, are
	// encoded; packed is the answer too, so its others are put back.
	plain, squeezed := answerBuffers.Get().(*[]byte), answerBuffers.Get().(*[]byte)
	free = func() {
		for _, buf := range []*[]byte{plain, squeezed} {
			if cap(*buf) <= maxPooledAnswerBytes {
				answerBuffers.Put(buf)
			}
		}
	}
	packed.Others = places
	*plain, err = proto.MarshalOptions{}.MarshalAppend((*plain)[:0], packed)
	packed.Others = others
	if err != nil {
		free()
		return 0, nil, nil, fmt.Errorf("encode the batch's canonical records: %w", err)
	}
	if n := s2.MaxEncodedLen(len(*plain)); cap(*squeezed) < n {
		*squeezed = make([]byte, n)
	}
	*squeezed = s2.Encode((*squeezed)[:cap(*squeezed)], *plain)
	return answerPackedS2, *squeezed, free, nil
}

// answerBuffers keeps the buffers kept answers are encoded and
// compressed in; maxPooledAnswerBytes bounds those it keeps, so a rare
// huge answer does not pin its memory.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledAnswerBytes = 8 << 20

// decodeAnswer puts kept canonical records back into their verdicts.
func decodeAnswer(form answerForm, b []byte, recs []*gatev1.RecordVerdict) error {
	switch form {
	case answerPerRecord:
		return decodeRecords(b, recs)
	case answerPackedS2:
		var err error
		if b, err = s2.Decode(nil, b); err != nil {
			return fmt.Errorf("decompress the kept canonical records: %w", err)
		}
		fallthrough
	case answerPacked:
		p := &gatev1.PackedVerdicts{}
		if err := proto.Unmarshal(b, p); err != nil {
			return fmt.Errorf("decode the kept canonical records: %w", err)
		}
		kept, err := verdict.Expand(p)
		if err != nil {
			return fmt.Errorf("decode the kept canonical records: %w", err)
		}
		if len(kept) != len(recs) {
			return fmt.Errorf("decode the kept canonical records: %d verdicts kept for %d records", len(kept), len(recs))
		}
		for i, v := range kept {
			if (v.GetRecord() != nil) != (recs[i].GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED) {
				return fmt.Errorf("decode the kept canonical records: record %d is %s, its kept verdict %s", i, recs[i].GetStatus(), v.GetStatus())
			}
			recs[i].Record = v.GetRecord()
		}
		return nil
	}
	return fmt.Errorf("kept canonical records in form %d, which this gate does not know; is a newer gate writing to this store?", form)
}

// encodeRecords keeps the canonical records of a batch's accepted records,
// in record order, each length-prefixed. They are measured first and
// encoded into one buffer, not a buffer each.
func encodeRecords(recs []*gatev1.RecordVerdict) ([]byte, error) {
	sizes := make([]int, len(recs))
	total := 0
	for i, v := range recs {
		if v.GetRecord() != nil {
			sizes[i] = proto.Size(v.GetRecord())
			total += 2*binary.MaxVarintLen64 + sizes[i]
		}
	}
	out := make([]byte, 0, total)
	for i, v := range recs {
		if v.GetRecord() == nil {
			continue
		}
		out = binary.AppendUvarint(out, uint64(v.GetIndex()))
		out = binary.AppendUvarint(out, uint64(sizes[i]))
		at := len(out)
		var err error
		if out, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(out, v.GetRecord()); err != nil {
			return nil, fmt.Errorf("encode the canonical record of record %d: %w", v.GetIndex(), err)
		}
		if len(out)-at != sizes[i] {
			return nil, fmt.Errorf("encode the canonical record of record %d: %d bytes, measured %d (changed while encoded)", v.GetIndex(), len(out)-at, sizes[i])
		}
	}
	return out, nil
}

// decodeRecords puts kept canonical records back into their verdicts.
func decodeRecords(b []byte, recs []*gatev1.RecordVerdict) error {
	for len(b) > 0 {
		idx, k := binary.Uvarint(b)
		if k <= 0 || idx >= uint64(len(recs)) {
			return errVerdicts
		}
		b = b[k:]
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return errVerdicts
		}
		rec := &recordv1.CanonicalRecord{}
		if err := proto.Unmarshal(b[k:k+int(n)], rec); err != nil {
			return fmt.Errorf("decode the kept canonical record %d: %w", idx, err)
		}
		recs[idx].Record = rec
		b = b[k+int(n):]
	}
	return nil
}
