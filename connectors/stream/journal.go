package stream

import (
	"encoding/json"
	"fmt"
	"time"
)

// Journal entry kinds. The journal is read back in order at start and
// folded into the engine's state; see recover.
const (
	// kindPlan is written before a batch goes to the gate: the exact
	// positions it covers, so a restart re-sends the same batch under the
	// same identity.
	kindPlan = "plan"
	// kindStage carries accepted canonical records of one batch and
	// partition, staged until the partition is published.
	kindStage = "stage"
	// kindBlocked records a batch the gate BLOCKED: its records are held,
	// and its partition will not be published.
	kindBlocked = "blocked"
	// kindDone closes a batch: its stage entries count, the source may
	// move to next.
	kindDone = "done"
	// kindPublished says the output holds a partition's staged records up
	// to a journal offset, through output sequence seq.
	kindPublished = "published"
	// kindSealed records a partition's verdict when it is not published
	// (BLOCKED): its records stay held.
	kindSealed = "sealed"
	// kindReplayed closes the records of one replay (staged under the
	// pseudo-partition "replay/<id>") and moves the event cursor.
	kindReplayed = "replayed"
	// kindSnapshot repeats the scalar state so older entries can be trimmed.
	kindSnapshot = "snapshot"
)

// entry is one journal entry.
type entry struct {
	Kind string `json:"kind"`
	// From, To and Count bound a batch (plan, stage, blocked, done).
	From  int64 `json:"from,omitempty"`
	To    int64 `json:"to,omitempty"`
	Count int   `json:"count,omitempty"`
	// Next is the first source position not yet done (done, snapshot).
	Next int64 `json:"next,omitempty"`
	// Watermark is the engine's maximum event time, Unix nanoseconds; At
	// is when the batch was read (wall clock), so idleness outlives a
	// restart.
	Watermark int64 `json:"watermark,omitempty"`
	At        int64 `json:"at,omitempty"`
	// Part is the gate partition (stage, blocked, published, sealed).
	Part    string   `json:"part,omitempty"`
	Records []staged `json:"records,omitempty"`
	// Through is the last journal offset a published entry covers.
	Through int64 `json:"through,omitempty"`
	// Seq is the last output sequence used (published, snapshot).
	Seq     int64  `json:"seq,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Events is the registry event sequence handled (replayed, snapshot).
	Events int64  `json:"events,omitempty"`
	Replay string `json:"replay,omitempty"`
}

// staged is one accepted canonical record waiting for its partition, or
// (in a blocked entry) one held source record.
type staged struct {
	// ID is the delivery id: unique per source record.
	ID string `json:"id"`
	// RecordID is the gate's deterministic record id.
	RecordID string `json:"record_id,omitempty"`
	Position int64  `json:"position"`
	BatchID  string `json:"batch_id,omitempty"`
	Version  int32  `json:"version,omitempty"`
	// JSON is the canonical record (stage entries).
	JSON json.RawMessage `json:"json,omitempty"`
	// Raw is the source record as read (blocked entries).
	Raw []byte `json:"raw,omitempty"`
}

func encodeEntry(e entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s journal entry: %w", e.Kind, err)
	}
	return b, nil
}

// encodeRecords encodes one logical entry carrying records as one or more
// entries under max bytes each.
func encodeRecords(e entry, max int) ([][]byte, []entry, error) {
	all := e.Records
	var out [][]byte
	var pieces []entry
	for len(all) > 0 || out == nil {
		n := len(all)
		for {
			e.Records = all[:n]
			b, err := encodeEntry(e)
			if err != nil {
				return nil, nil, err
			}
			if len(b) <= max || n <= 1 {
				if len(b) > max {
					return nil, nil, fmt.Errorf("record %s at position %d is %d bytes in the journal, over the broker's %d-byte message limit; raise the limit (max_payload, max.message.bytes)",
						all[0].ID, all[0].Position, len(b), max)
				}
				out = append(out, b)
				pieces = append(pieces, e)
				break
			}
			n /= 2
		}
		all = all[n:]
	}
	return out, pieces, nil
}

func decodeEntry(offset int64, b []byte) (entry, error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("journal entry at offset %d is not a journal entry (%v); is the journal topic or stream shared with something else?", offset, err)
	}
	return e, nil
}

// stagedPart is what the engine holds for one partition.
type stagedPart struct {
	name string
	// chunks are stage entries in journal order.
	chunks []stagedChunk
	// blocked is true once a batch of the partition was BLOCKED (or its
	// sealed verdict was): nothing of it is published.
	blocked bool
	reason  string
	// held are the source records of blocked batches, heldOffsets their
	// journal entries (kept until an operator resolves the partition).
	held        []staged
	heldOffsets []int64
	// replay is set for the pseudo-partition of one replay's records.
	replay string
	// ready is true for a replay whose records are all staged.
	ready bool
}

type stagedChunk struct {
	offset  int64
	records []staged
}

func (p *stagedPart) count() int {
	n := 0
	for _, c := range p.chunks {
		n += len(c.records)
	}
	return n
}

// state is an engine's state, rebuilt from the journal at start.
type state struct {
	next      int64
	watermark time.Time
	readAt    time.Time
	seq       int64
	events    int64
	// plan is a batch planned but not done.
	plan *entry
	// pending holds stage and blocked entries of the planned batch until
	// its done entry.
	pending []pendingEntry
	parts   map[string]*stagedPart
	// lastOffset is the offset of the last entry read or written.
	lastOffset int64
}

type pendingEntry struct {
	offset int64
	e      entry
}

func newState() *state { return &state{parts: map[string]*stagedPart{}, lastOffset: -1} }

func (s *state) part(name string) *stagedPart {
	p := s.parts[name]
	if p == nil {
		p = &stagedPart{name: name}
		s.parts[name] = p
	}
	return p
}

// apply folds one journal entry into the state.
func (s *state) apply(offset int64, e entry) {
	s.lastOffset = offset
	switch e.Kind {
	case kindPlan:
		plan := e
		s.plan, s.pending = &plan, nil
	case kindStage, kindBlocked:
		if e.Replay != "" {
			p := s.part(replayPart(e.Replay))
			p.replay = e.Replay
			p.chunks = append(p.chunks, stagedChunk{offset: offset, records: e.Records})
			return
		}
		s.pending = append(s.pending, pendingEntry{offset, e})
	case kindDone:
		for _, pe := range s.pending {
			p := s.part(pe.e.Part)
			if pe.e.Kind == kindBlocked {
				p.blocked, p.reason = true, pe.e.Reason
				p.held = append(p.held, pe.e.Records...)
				p.heldOffsets = append(p.heldOffsets, pe.offset)
				continue
			}
			p.chunks = append(p.chunks, stagedChunk{offset: pe.offset, records: pe.e.Records})
		}
		s.plan, s.pending = nil, nil
		s.next = e.Next
		s.observe(e.Watermark)
		if e.At != 0 {
			s.readAt = time.Unix(0, e.At)
		}
	case kindPublished:
		if p := s.parts[e.Part]; p != nil {
			keep := p.chunks[:0]
			for _, c := range p.chunks {
				if c.offset > e.Through {
					keep = append(keep, c)
				}
			}
			p.chunks = keep
			if len(p.chunks) == 0 && !p.blocked && (p.replay == "" || p.ready) {
				delete(s.parts, e.Part)
			}
		}
		s.seq = max(s.seq, e.Seq)
	case kindSealed:
		p := s.part(e.Part)
		p.blocked, p.reason = true, e.Reason
	case kindReplayed:
		p := s.part(replayPart(e.Replay))
		p.replay, p.ready = e.Replay, true
		if len(p.chunks) == 0 {
			delete(s.parts, p.name)
		}
		s.events = max(s.events, e.Events)
	case kindSnapshot:
		s.next = max(s.next, e.Next)
		s.seq = max(s.seq, e.Seq)
		s.events = max(s.events, e.Events)
		s.observe(e.Watermark)
		if e.At != 0 && time.Unix(0, e.At).After(s.readAt) {
			s.readAt = time.Unix(0, e.At)
		}
	}
}

func (s *state) observe(nanos int64) {
	if nanos == 0 {
		return
	}
	if t := time.Unix(0, nanos).UTC(); t.After(s.watermark) {
		s.watermark = t
	}
}

// replayPart is the pseudo-partition that stages one replay's records.
func replayPart(id string) string { return "replay/" + id }

// trimPoint is the oldest journal offset still needed: the first stage
// or held entry not yet published, or the last entry (a snapshot) when
// nothing is.
func (s *state) trimPoint() int64 {
	out := s.lastOffset
	for _, p := range s.parts {
		for _, c := range p.chunks {
			out = min(out, c.offset)
		}
		for _, o := range p.heldOffsets {
			out = min(out, o)
		}
	}
	for _, pe := range s.pending {
		out = min(out, pe.offset)
	}
	return out
}
