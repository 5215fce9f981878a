package verdict

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// batch is the verdicts of a batch of n records of stream chunk seq:
// every third quarantined, every fourth accepted one with alerts.
func batch(n int, seq int64) []*gatev1.RecordVerdict {
	out := make([]*gatev1.RecordVerdict, n)
	for i := range out {
		pos := int64(10 + 2*i)
		v := &gatev1.RecordVerdict{Index: int64(i), Position: pos, Sequence: seq}
		if i%3 == 1 {
			v.Status = gatev1.RecordStatus_RECORD_STATUS_QUARANTINED
			v.Reasons = []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_MISSING_REQUIRED, Field: "customer_id", Message: "missing", Check: "customer_present"}}
			if i%2 == 0 {
				v.Alerts = []string{"email_shape"}
			}
			out[i] = v
			continue
		}
		v.Status = gatev1.RecordStatus_RECORD_STATUS_ACCEPTED
		v.Record = &recordv1.CanonicalRecord{RecordId: fmt.Sprintf("%064x", i+1),
			Body: &recordv1.CanonicalRecord_Json{Json: fmt.Appendf(nil, `{"order_id":"ORD-%010d"}`, i)},
			Provenance: &recordv1.Provenance{Subject: "shop.orders", ContractVersion: 2, Canonical: "commerce.order", CanonicalVersion: 1,
				Index: int64(i), Position: pos, Partition: "2025-03-01", BatchId: "b1"}}
		if i%4 == 0 {
			v.Alerts = []string{"email_shape", "coupon_known"}
		}
		out[i] = v
	}
	return out
}

// summaryOf is vs as a summary-only answer says them: without canonical
// records.
func summaryOf(vs []*gatev1.RecordVerdict) []*gatev1.RecordVerdict {
	for _, v := range vs {
		v.Record = nil
	}
	return vs
}

func TestExpandRebuildsWhatPackPacks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		vs   []*gatev1.RecordVerdict
	}{
		{"mixed", batch(20, 0)},
		{"summary only", summaryOf(batch(20, 0))},
		{"a summary-only stream chunk", summaryOf(batch(7, 4))},
		{"a stream chunk", batch(7, 4)},
		{"one accepted", batch(1, 0)},
		{"none accepted", []*gatev1.RecordVerdict{{Index: 0, Position: 3, Status: gatev1.RecordStatus_RECORD_STATUS_QUARANTINED,
			Reasons: []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY, Check: "order_id_unique"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Pack(tc.vs)
			if err != nil {
				t.Fatalf("Pack: %v", err)
			}
			// What a caller receives: the packed answer off the wire.
			wire, err := proto.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			got := &gatev1.PackedVerdicts{}
			if err := proto.Unmarshal(wire, got); err != nil {
				t.Fatal(err)
			}
			vs, err := Expand(got)
			if err != nil {
				t.Fatalf("Expand: %v", err)
			}
			if len(vs) != len(tc.vs) {
				t.Fatalf("Expand gave %d verdicts, want %d", len(vs), len(tc.vs))
			}
			for i := range vs {
				if !proto.Equal(vs[i], tc.vs[i]) {
					t.Errorf("verdict %d: got %v, want %v", i, vs[i], tc.vs[i])
				}
			}
		})
	}
}

func TestPackRefusesWhatItCannotSayExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(vs []*gatev1.RecordVerdict)
		want string
	}{
		{"out of index order", func(vs []*gatev1.RecordVerdict) { vs[1].Index = 5 }, "index order"},
		{"several chunks", func(vs []*gatev1.RecordVerdict) { vs[2].Sequence = 1 }, "one chunk at a time"},
		{"some accepted without a record", func(vs []*gatev1.RecordVerdict) { vs[2].Record = nil }, "3 of 4 accepted records carry a canonical record"},
		{"an object body", func(vs []*gatev1.RecordVerdict) {
			vs[2].Record.Body = &recordv1.CanonicalRecord_Object{}
		}, "not JSON bytes"},
		{"a short id", func(vs []*gatev1.RecordVerdict) { vs[2].Record.RecordId = "abc" }, "not the lower-case hex"},
		{"an id not hex", func(vs []*gatev1.RecordVerdict) { vs[2].Record.RecordId = strings.Repeat("0", 63) + "g" }, "not the lower-case hex"},
		{"an id in upper case", func(vs []*gatev1.RecordVerdict) { vs[2].Record.RecordId = strings.Repeat("A", 64) }, "not the lower-case hex"},
		{"another batch's provenance", func(vs []*gatev1.RecordVerdict) { vs[3].Record.Provenance.BatchId = "b2" }, "differs"},
		{"provenance of another record", func(vs []*gatev1.RecordVerdict) { vs[3].Record.Provenance.Position = 1 }, "provenance names"},
		{"quarantined with a record", func(vs []*gatev1.RecordVerdict) { vs[1].Record = vs[0].Record }, "carries a canonical record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vs := batch(6, 0)
			tc.edit(vs)
			if _, err := Pack(vs); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Pack error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestExpandRefusesInconsistentPacks(t *testing.T) {
	t.Parallel()
	ok, err := Pack(batch(6, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(p *gatev1.PackedVerdicts)
		want string
	}{
		{"an id short", func(p *gatev1.PackedVerdicts) { p.RecordIds = p.RecordIds[:IDSize] }, "record ids"},
		{"a position short", func(p *gatev1.PackedVerdicts) { p.Positions = p.Positions[1:] }, "positions"},
		{"no provenance", func(p *gatev1.PackedVerdicts) { p.Provenance = nil }, "without a provenance"},
		{"an end past the buffer", func(p *gatev1.PackedVerdicts) { p.JsonEnds[1] = 9999 }, "outside"},
		{"ends going back", func(p *gatev1.PackedVerdicts) { p.JsonEnds[1] = 1 }, "outside"},
		{"a held record out of range", func(p *gatev1.PackedVerdicts) { p.Others[0].Index = 40 }, "out of order or out of range"},
		{"an accepted record among the others", func(p *gatev1.PackedVerdicts) {
			p.Others[0].Status = gatev1.RecordStatus_RECORD_STATUS_ACCEPTED
		}, "is accepted"},
		{"alerts of a held record", func(p *gatev1.PackedVerdicts) { p.AcceptedAlerts[0].Index = 1 }, "not an accepted record"},
		{"ids without canonical records", func(p *gatev1.PackedVerdicts) { p.Json, p.JsonEnds = nil, nil }, "or positions alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := proto.CloneOf(ok)
			tc.edit(p)
			if _, err := Expand(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expand error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// Packing and expanding a batch allocate a few times per batch, not per
// record, beyond each accepted record's id as text.
func TestPackAndExpandAllocatePerBatch(t *testing.T) {
	vs := batch(300, 0)
	if n := testing.AllocsPerRun(20, func() {
		if _, err := Pack(vs); err != nil {
			t.Fatal(err)
		}
	}); n > 10 {
		t.Errorf("Pack of 300 verdicts allocates %v times, want at most 10", n)
	}
	p, err := Pack(vs)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if _, err := Expand(p); err != nil {
			t.Fatal(err)
		}
	}); n > 10 {
		t.Errorf("Expand of 300 verdicts allocates %v times, want at most 10", n)
	}
}
