// Package verdict converts a batch's record verdicts between the gate's two
// answer forms: one RecordVerdict per record, and PackedVerdicts, where
// the accepted records' canonical JSON lies side by side in one buffer.
// Pack and Expand are inverse: Expand(Pack(vs)) equals vs.
package verdict

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// IDSize is the size of a packed record id: a SHA-256.
const IDSize = 32

// Pack packs a batch's verdicts, in index order (verdict i has index i).
// A summary-only answer's verdicts (no accepted record carries a canonical
// record) pack to the summary form: positions and the records not
// accepted, nothing else. Pack refuses verdicts the packed form cannot say
// exactly: some accepted records with a canonical record and some
// without, a canonical record without a JSON body, a record id that is not
// the hex of IDSize bytes, provenance that differs between accepted
// records other than by index and position (or names other ones than its
// verdict's), or verdicts of several stream chunks.
func Pack(vs []*gatev1.RecordVerdict) (*gatev1.PackedVerdicts, error) {
	p := &gatev1.PackedVerdicts{}
	size, accepted, alerted, withRecords := 0, 0, 0, 0
	for _, v := range vs {
		if v.GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			size += len(v.GetRecord().GetJson())
			accepted++
			if v.GetRecord() != nil {
				withRecords++
			}
			if len(v.GetAlerts()) > 0 {
				alerted++
			}
		}
	}
	if size > math.MaxUint32 {
		return nil, fmt.Errorf("the accepted records' canonical JSON is %d bytes, over the 4 GiB a packed answer addresses", size)
	}
	if withRecords > 0 && withRecords < accepted {
		return nil, fmt.Errorf("%d of %d accepted records carry a canonical record; pack all with one or all without (a summary-only answer)", withRecords, accepted)
	}
	if accepted > 0 {
		p.Positions = make([]int64, 0, accepted)
	}
	if withRecords > 0 {
		p.Json = make([]byte, 0, size)
		p.JsonEnds = make([]uint32, 0, accepted)
		p.RecordIds = make([]byte, IDSize*accepted)
	}
	if accepted < len(vs) {
		p.Others = make([]*gatev1.RecordVerdict, 0, len(vs)-accepted)
	}
	if alerted > 0 {
		p.AcceptedAlerts = make([]*gatev1.RecordAlerts, 0, alerted)
	}
	// The accepted records' alerts are cut from one allocation.
	alerts := make([]gatev1.RecordAlerts, alerted)
	for i, v := range vs {
		if v.GetIndex() != int64(i) {
			return nil, fmt.Errorf("verdict %d has index %d; pack a batch's verdicts in index order", i, v.GetIndex())
		}
		if i == 0 {
			p.Sequence = v.GetSequence()
		} else if v.GetSequence() != p.Sequence {
			return nil, fmt.Errorf("verdict %d is of stream chunk %d, verdict 0 of chunk %d; pack one chunk at a time", i, v.GetSequence(), p.Sequence)
		}
		if v.GetStatus() != gatev1.RecordStatus_RECORD_STATUS_ACCEPTED {
			if v.GetRecord() != nil {
				return nil, fmt.Errorf("record %d is %s but carries a canonical record", i, v.GetStatus())
			}
			p.Others = append(p.Others, v)
			continue
		}
		if err := add(p, v, &alerts); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	return p, nil
}

// add appends accepted verdict v to p, its alerts taken from alerts.
func add(p *gatev1.PackedVerdicts, v *gatev1.RecordVerdict, alerts *[]gatev1.RecordAlerts) error {
	if len(v.GetAlerts()) > 0 {
		a := &(*alerts)[0]
		*alerts = (*alerts)[1:]
		a.Index, a.Checks = v.GetIndex(), v.GetAlerts()
		p.AcceptedAlerts = append(p.AcceptedAlerts, a)
	}
	p.Positions = append(p.Positions, v.GetPosition())
	r := v.GetRecord()
	if r == nil {
		return nil // the summary form
	}
	body, ok := r.GetBody().(*recordv1.CanonicalRecord_Json)
	if !ok {
		return errors.New("its canonical record is not JSON bytes; ask for the answer one record at a time")
	}
	k := len(p.GetJsonEnds())
	if !decodeID(p.RecordIds[IDSize*k:IDSize*(k+1)], r.GetRecordId()) {
		return fmt.Errorf("record id %q is not the lower-case hex of %d bytes", r.GetRecordId(), IDSize)
	}
	prov := r.GetProvenance()
	if prov.GetIndex() != v.GetIndex() || prov.GetPosition() != v.GetPosition() {
		return fmt.Errorf("its provenance names index %d, position %d; its verdict index %d, position %d", prov.GetIndex(), prov.GetPosition(), v.GetIndex(), v.GetPosition())
	}
	if k == 0 {
		p.Provenance = &recordv1.Provenance{Subject: prov.GetSubject(), ContractVersion: prov.GetContractVersion(), Canonical: prov.GetCanonical(),
			CanonicalVersion: prov.GetCanonicalVersion(), Partition: prov.GetPartition(), BatchId: prov.GetBatchId()}
	} else if !SameBatch(p.GetProvenance(), prov) {
		return fmt.Errorf("its provenance %v differs from the batch's %v other than by index and position", prov, p.GetProvenance())
	}
	p.Json = append(p.Json, body.Json...)
	p.JsonEnds = append(p.JsonEnds, uint32(len(p.Json)))
	return nil
}

// decodeID decodes the hex id s into dst, which it must fill exactly. It
// reads the string in place (converting it to bytes for hex.Decode would
// allocate once per record), a table lookup per digit: ids are random, so
// branching on a digit's range mispredicts about every other digit.
func decodeID(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	bad := byte(0)
	for i := range dst {
		hi, lo := nibbles[s[2*i]], nibbles[s[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo&0x0f
	}
	return bad&0xf0 == 0
}

// nibbles maps each byte to its lower-case hex digit's value, or 0xff for
// a byte that is not one: an id in upper case would not come back as it
// was sent (Expand writes lower case).
var nibbles = func() (t [256]byte) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()

// SameBatch says whether provenance a and b agree but for index and
// position: whether a packed answer can say them once.
func SameBatch(a, b *recordv1.Provenance) bool {
	return a.GetSubject() == b.GetSubject() && a.GetContractVersion() == b.GetContractVersion() && a.GetCanonical() == b.GetCanonical() &&
		a.GetCanonicalVersion() == b.GetCanonicalVersion() && a.GetPartition() == b.GetPartition() && a.GetBatchId() == b.GetBatchId()
}

// Expand rebuilds the verdicts p packs, in index order: what the
// per-record answer says, each accepted record with its canonical record.
// The canonical records' JSON shares p's buffer. A packed answer that does
// not account for each record once is refused, saying where.
func Expand(p *gatev1.PackedVerdicts) ([]*gatev1.RecordVerdict, error) {
	ends, others := p.GetJsonEnds(), p.GetOthers()
	accepted := len(p.GetPositions())
	// The summary form: positions alone, no accepted record's canonical
	// record.
	summary := len(ends) == 0 && len(p.GetRecordIds()) == 0 && len(p.GetJson()) == 0
	if !summary && (len(ends) != accepted || len(p.GetRecordIds()) != IDSize*accepted) {
		return nil, fmt.Errorf("packed verdicts: %d canonical records, %d record ids and %d positions; want as many of each, or positions alone", len(ends), len(p.GetRecordIds())/IDSize, accepted)
	}
	if !summary && accepted > 0 && p.GetProvenance() == nil {
		return nil, fmt.Errorf("packed verdicts: %d canonical records without a provenance", accepted)
	}
	n := accepted + len(others)
	out := make([]*gatev1.RecordVerdict, n)
	// The accepted records' messages are cut from one allocation each.
	verdicts := make([]gatev1.RecordVerdict, accepted)
	if summary {
		ends = nil
	}
	records := make([]recordv1.CanonicalRecord, len(ends))
	bodies := make([]recordv1.CanonicalRecord_Json, len(ends))
	provs := make([]recordv1.Provenance, len(ends))
	ids := make([]byte, 2*IDSize*len(ends))
	hex.Encode(ids, p.GetRecordIds())
	idText := string(ids)
	alerts := p.GetAcceptedAlerts()
	data, seq := p.GetJson(), p.GetSequence()
	o, k, start := 0, 0, uint32(0)
	for i := range out {
		if o < len(others) && others[o].GetIndex() == int64(i) {
			if others[o].GetStatus() == gatev1.RecordStatus_RECORD_STATUS_ACCEPTED || others[o].GetRecord() != nil {
				return nil, fmt.Errorf("packed verdicts: record %d is among the records not accepted, but is accepted or carries a canonical record", i)
			}
			out[i] = others[o]
			o++
			continue
		}
		if k == accepted {
			return nil, fmt.Errorf("packed verdicts: the records not accepted are out of order or out of range (%d of %d placed) for %d records", o, len(others), n)
		}
		v := &verdicts[k]
		v.Index, v.Position, v.Status, v.Sequence = int64(i), p.GetPositions()[k], gatev1.RecordStatus_RECORD_STATUS_ACCEPTED, seq
		if len(alerts) > 0 && alerts[0].GetIndex() == int64(i) {
			v.Alerts = alerts[0].GetChecks()
			alerts = alerts[1:]
		}
		out[i] = v
		if !summary {
			end := ends[k]
			if end < start || int(end) > len(data) {
				return nil, fmt.Errorf("packed verdicts: canonical record %d (record %d) ends at %d, outside %d..%d", k, i, end, start, len(data))
			}
			prov := &provs[k]
			prov.Subject, prov.ContractVersion, prov.Canonical, prov.CanonicalVersion = p.Provenance.GetSubject(), p.Provenance.GetContractVersion(), p.Provenance.GetCanonical(), p.Provenance.GetCanonicalVersion()
			prov.Partition, prov.BatchId, prov.Index, prov.Position = p.Provenance.GetPartition(), p.Provenance.GetBatchId(), int64(i), v.Position
			body := &bodies[k]
			body.Json = data[start:end:end]
			rec := &records[k]
			rec.RecordId, rec.Body, rec.Provenance = idText[2*IDSize*k:2*IDSize*(k+1)], body, prov
			v.Record = rec
			start = end
		}
		k++
	}
	if o != len(others) {
		return nil, fmt.Errorf("packed verdicts: the records not accepted are out of order or out of range (%d of %d placed) for %d records", o, len(others), n)
	}
	if len(alerts) > 0 {
		return nil, fmt.Errorf("packed verdicts: alerts for record %d, which is not an accepted record, or out of order", alerts[0].GetIndex())
	}
	return out, nil
}
