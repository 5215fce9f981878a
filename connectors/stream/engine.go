package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// engine runs one source partition: batch, gate, stage, publish, commit.
// Its state is touched by its own goroutine only; Stats reads atomics.
type engine struct {
	c    *Connector
	p    Partition
	name string
	st   *state
	// carry holds messages fetched past the end of a batch.
	carry []Message
	// resume is the output's mark when a restart found the output ahead
	// of the journal: that chunk is finished first.
	resume *Mark
	// appended counts journal entries since the last trim.
	appended  int
	lastPoll  time.Time
	next      atomic.Int64
	held      atomic.Int64
	lastEnd   atomic.Int64
	endReadAt atomic.Int64
}

func (e *engine) run(ctx context.Context) error {
	if err := e.recover(ctx); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	if err := e.p.Source.Start(ctx, e.st.next); err != nil {
		return fmt.Errorf("%s: start reading at %d: %w", e.name, e.st.next, err)
	}
	// The watermark and the time of the last read come from the journal,
	// so a restart neither rewinds the watermark nor makes an idle
	// partition look busy again.
	e.c.marks.Observe(e.name, e.st.watermark, e.st.readAt)
	e.c.log.Info("connector engine started", "source", e.name, "next", e.st.next, "output_seq", e.st.seq,
		"staged_partitions", len(e.st.parts), "watermark", e.st.watermark)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		msgs, err := e.nextBatch(ctx)
		if err != nil {
			return fmt.Errorf("%s: read: %w", e.name, err)
		}
		if len(msgs) > 0 {
			if err := e.process(ctx, msgs); err != nil {
				return fmt.Errorf("%s: %w", e.name, err)
			}
		}
		if err := e.publishReady(ctx); err != nil {
			return fmt.Errorf("%s: publish: %w", e.name, err)
		}
		if err := e.pollEvents(ctx); err != nil {
			return fmt.Errorf("%s: replay: %w", e.name, err)
		}
		if err := e.maybeTrim(ctx); err != nil {
			return fmt.Errorf("%s: trim the journal: %w", e.name, err)
		}
	}
}

// recover folds the journal into the state and compares the output with
// it.
func (e *engine) recover(ctx context.Context) error {
	if err := e.p.Journal.Read(ctx, func(off int64, b []byte) error {
		en, err := decodeEntry(off, b)
		if err != nil {
			return err
		}
		e.st.apply(off, en)
		return nil
	}); err != nil {
		return fmt.Errorf("read the journal: %w", err)
	}
	// Stage entries of a batch that was not done are orphans: the batch is
	// sent again (the gate answers it from its stored verdicts) and staged
	// again after a new plan entry.
	e.st.pending = nil
	mark, err := e.p.Output.Last(ctx)
	if err != nil {
		return fmt.Errorf("read the output's last message: %w", err)
	}
	switch {
	case mark.Seq > 0 && mark.Connector != e.c.cfg.Name:
		return fmt.Errorf("the output's last message was written by connector %q, not %q: give each connector an output subject or topic partition of its own", mark.Connector, e.c.cfg.Name)
	case mark.Seq < e.st.seq:
		return fmt.Errorf("the output's last message has sequence %d but the journal says %d were published: the output lost messages (purged or truncated); restore it, or start the connector under a new name", mark.Seq, e.st.seq)
	case mark.Seq > e.st.seq:
		e.resume = &mark
		e.c.log.Info("the output is ahead of the journal: finishing the chunk that was being published", "source", e.name,
			"output_seq", mark.Seq, "journal_seq", e.st.seq, "partition", mark.Part, "chunk", mark.Chunk, "index", mark.Index)
	}
	e.next.Store(e.st.next)
	e.updateHeld()
	return nil
}

// nextBatch returns the next batch: exactly the planned one after a
// restart, otherwise what arrives within BatchWait up to the size limits.
func (e *engine) nextBatch(ctx context.Context) ([]Message, error) {
	cfg := e.c.cfg
	if plan := e.st.plan; plan != nil {
		return e.collectPlanned(ctx, plan)
	}
	var out []Message
	bytes := 0
	take := func(ms []Message) {
		for i, m := range ms {
			if len(out) >= cfg.BatchRecords || (len(out) > 0 && bytes+len(m.Value) > cfg.BatchBytes) {
				e.carry = append(e.carry, ms[i:]...)
				return
			}
			out = append(out, m)
			bytes += len(m.Value)
		}
	}
	carry := e.carry
	e.carry = nil
	take(carry)
	deadline := time.Now().Add(cfg.BatchWait)
	for len(e.carry) == 0 && len(out) < cfg.BatchRecords && bytes < cfg.BatchBytes {
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		ms, err := e.p.Source.Fetch(ctx, cfg.BatchRecords-len(out), wait)
		if err != nil {
			return nil, err
		}
		take(ms)
	}
	return out, nil
}

// collectPlanned gathers the messages of a batch planned before a
// restart: every position from plan.From through plan.To.
func (e *engine) collectPlanned(ctx context.Context, plan *entry) ([]Message, error) {
	var out []Message
	pending := e.carry
	e.carry = nil
	for {
		for i, m := range pending {
			if m.Position < plan.From {
				continue
			}
			if m.Position > plan.To {
				e.carry = append(e.carry, pending[i:]...)
				return out, nil
			}
			out = append(out, m)
			if m.Position == plan.To {
				e.carry = append(e.carry, pending[i+1:]...)
				return out, nil
			}
		}
		ms, err := e.p.Source.Fetch(ctx, e.c.cfg.BatchRecords, e.c.cfg.BatchWait)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			end, err := e.p.Source.End(ctx)
			if err != nil {
				return nil, err
			}
			if end <= plan.To && len(out) > 0 {
				e.c.log.Warn("the planned batch's last messages are gone from the source (retention?); sending what remains",
					"source", e.name, "from", plan.From, "to", plan.To, "planned", plan.Count, "found", len(out))
				return out, nil
			}
		}
		pending = ms
	}
}

// process sends one batch through the gate and journals what it staged.
func (e *engine) process(ctx context.Context, msgs []Message) error {
	cfg := e.c.cfg
	from, to := msgs[0].Position, msgs[len(msgs)-1].Position
	if plan := e.st.plan; plan != nil {
		from, to = plan.From, plan.To
	}
	if err := e.append(ctx, entry{Kind: kindPlan, From: from, To: to, Count: len(msgs)}); err != nil {
		return err
	}
	e.c.crash("planned")
	e.c.stats.read.Add(int64(len(msgs)))
	e.c.met.add(ctx, "read", int64(len(msgs)))
	// In Confluent's wire format each message is decoded first; the
	// decoded record is what the gate judges and what event time is read
	// from, and its schema's contract version judges it.
	versions := map[int64]int32{}
	if cfg.Confluent {
		dec, err := e.c.unframe(ctx, msgs)
		if err != nil {
			return err
		}
		decoded := make([]Message, len(msgs))
		for i, m := range msgs {
			m.Value = dec[i].value
			decoded[i] = m
			versions[m.Position] = dec[i].version
		}
		msgs = decoded
	}
	parts := make(map[int64]string, len(msgs))
	maxTime := e.st.watermark
	for _, m := range msgs {
		t, ok := m.Time.UTC(), true
		if cfg.EventTimeField != "" {
			t, ok = eventTime(m.Value, cfg.EventTimeField)
		}
		if !ok {
			// A record without a readable event time (malformed, or the
			// field missing) goes to the partition the stream is at, and
			// moves no watermark: the broker's clock is not event time.
			t = maxTime
			if t.IsZero() {
				t = m.Time.UTC()
			}
			parts[m.Position] = cfg.Granularity.Name(t)
			continue
		}
		parts[m.Position] = cfg.Granularity.Name(t)
		if t.After(maxTime) {
			maxTime = t
		}
	}
	var out []entry
	var accepted, quarantined, blocked int64
	for _, sb := range split(e.name, from, to, msgs, func(m Message) (string, int32) { return parts[m.Position], versions[m.Position] }) {
		res, err := e.c.ingest(ctx, sb)
		if err != nil {
			return err
		}
		if res.blocked != "" {
			held := make([]staged, len(sb.msgs))
			for i, m := range sb.msgs {
				held[i] = staged{ID: deliveryID("", sb.batchID, m.Position), Position: m.Position, BatchID: sb.batchID, Raw: m.Value}
			}
			out = append(out, entry{Kind: kindBlocked, From: from, To: to, Part: sb.part, Reason: res.blocked, Records: held})
			blocked += int64(len(held))
			e.c.log.Warn("the gate BLOCKED a batch: its partition is held, not published", "source", e.name, "partition", sb.part,
				"batch", sb.batchID, "records", len(held), "reason", res.blocked)
			continue
		}
		if res.contained && !res.retried {
			e.c.setContained(true)
		}
		accepted += int64(len(res.accepted))
		quarantined += int64(res.quarantined)
		if len(res.accepted) > 0 {
			out = append(out, entry{Kind: kindStage, From: from, To: to, Part: sb.part, Records: res.accepted})
		}
	}
	e.c.crash("ingested")
	readAt := e.c.cfg.Now()
	out = append(out, entry{Kind: kindDone, From: from, To: to, Next: to + 1, Watermark: maxTime.UnixNano(), At: readAt.UnixNano()})
	if err := e.append(ctx, out...); err != nil {
		return err
	}
	e.next.Store(e.st.next)
	e.c.stats.batches.Add(1)
	e.c.stats.accepted.Add(accepted)
	e.c.stats.quarantined.Add(quarantined)
	e.c.stats.blockedRecs.Add(blocked)
	e.c.met.batches.Add(ctx, 1)
	e.c.met.add(ctx, "accepted", accepted)
	e.c.met.add(ctx, "quarantined", quarantined)
	e.c.met.add(ctx, "blocked", blocked)
	e.c.marks.Observe(e.name, maxTime, readAt)
	e.updateHeld()
	// The journal is the truth; the broker's own offset follows it for
	// retention and lag tools. A failure here loses nothing.
	if err := e.p.Source.Commit(ctx, e.st.next); err != nil && ctx.Err() == nil {
		e.c.log.Warn("could not commit the source position to the broker (the journal has it)", "source", e.name, "next", e.st.next, "error", err)
	}
	return nil
}

// append journals entries (split to the broker's message size) and folds
// them into the state.
func (e *engine) append(ctx context.Context, entries ...entry) error {
	var raw [][]byte
	var pieces []entry
	for _, en := range entries {
		if len(en.Records) == 0 {
			b, err := encodeEntry(en)
			if err != nil {
				return err
			}
			raw, pieces = append(raw, b), append(pieces, en)
			continue
		}
		bs, ps, err := encodeRecords(en, e.p.Journal.MaxEntryBytes())
		if err != nil {
			return err
		}
		raw, pieces = append(raw, bs...), append(pieces, ps...)
	}
	offsets, err := e.p.Journal.Append(ctx, raw)
	if err != nil {
		return fmt.Errorf("append to the journal: %w", err)
	}
	if len(offsets) != len(raw) {
		return fmt.Errorf("the journal took %d of %d entries", len(offsets), len(raw))
	}
	for i, en := range pieces {
		e.st.apply(offsets[i], en)
	}
	e.appended += len(raw)
	return nil
}

// publishReady publishes every partition that is sealed, not blocked, in
// partition order, then every replay that is complete; containment stops
// it between two chunks.
func (e *engine) publishReady(ctx context.Context) error {
	if len(e.st.parts) == 0 {
		return nil
	}
	if contained, err := e.c.isContained(ctx); err != nil || contained {
		return err
	}
	if m := e.resume; m != nil {
		p := e.st.parts[m.Part]
		if p == nil || len(p.chunks) == 0 || p.chunks[0].offset != m.Chunk || m.Index >= len(p.chunks[0].records) {
			return fmt.Errorf("the output's last message (sequence %d) is record %d of journal entry %d of partition %q, which the journal does not stage: the journal and the output disagree",
				m.Seq, m.Index, m.Chunk, m.Part)
		}
		e.st.seq = m.Seq
		if err := e.publishChunk(ctx, p, m.Index+1); err != nil {
			return err
		}
		e.resume = nil
	}
	wm := e.c.marks.Current()
	for _, p := range e.publishOrder() {
		if p.blocked || (p.replay != "" && !p.ready) {
			continue
		}
		if p.replay == "" {
			if end, err := e.c.cfg.Granularity.End(p.name); err == nil && wm.Before(end.Add(e.c.cfg.Lateness)) {
				continue
			}
			v, reason, err := e.c.cfg.Sealer.Seal(ctx, e.c.cfg.Subject, p.name)
			if err != nil {
				return fmt.Errorf("seal partition %s: %w", p.name, err)
			}
			if v == Blocked {
				e.c.log.Warn("partition sealed BLOCKED: its records stay held", "source", e.name, "partition", p.name, "reason", reason)
				if err := e.append(ctx, entry{Kind: kindSealed, Part: p.name, Verdict: string(v), Reason: reason}); err != nil {
					return err
				}
				e.updateHeld()
				continue
			}
		}
		for len(p.chunks) > 0 {
			if contained, err := e.c.isContained(ctx); err != nil || contained {
				return err
			}
			if err := e.publishChunk(ctx, p, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishOrder lists staged partitions: event-time partitions by name,
// then replays in the order they were journaled.
func (e *engine) publishOrder() []*stagedPart {
	out := make([]*stagedPart, 0, len(e.st.parts))
	for _, p := range e.st.parts {
		out = append(out, p)
	}
	first := func(p *stagedPart) int64 {
		if len(p.chunks) == 0 {
			return -1
		}
		return p.chunks[0].offset
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.replay == "") != (b.replay == "") {
			return a.replay == ""
		}
		if a.replay == "" {
			return a.name < b.name
		}
		return first(a) < first(b)
	})
	return out
}

// publishChunk publishes a partition's first staged chunk from record
// index from on, then journals that it is out.
func (e *engine) publishChunk(ctx context.Context, p *stagedPart, from int) error {
	c := p.chunks[0]
	msgs := make([]OutMessage, 0, len(c.records)-from)
	seq := e.st.seq
	chunk := strconv.FormatInt(c.offset, 10)
	for i := from; i < len(c.records); i++ {
		r := c.records[i]
		seq++
		part := p.name
		msgs = append(msgs, OutMessage{Seq: seq, ID: r.ID, Key: r.RecordID, Value: r.JSON, Headers: map[string]string{
			HeaderConnector: e.c.cfg.Name, HeaderSubject: e.c.cfg.Subject, HeaderRecordID: r.RecordID, HeaderPartition: part,
			HeaderBatch: r.BatchID, HeaderPosition: strconv.FormatInt(r.Position, 10), HeaderSeq: strconv.FormatInt(seq, 10),
			HeaderChunk: chunk, HeaderIndex: strconv.Itoa(i)}})
	}
	if len(msgs) > 0 {
		backoff := firstBackoff
		for {
			err := e.p.Output.Publish(ctx, msgs)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Publishing again is safe: message ids and the idempotent
			// producer drop what the failed attempt wrote.
			e.c.log.Warn("publishing failed; retrying the same messages", "source", e.name, "partition", p.name, "records", len(msgs), "error", err, "backoff", backoff)
			if backoff, err = pause(ctx, backoff); err != nil {
				return err
			}
		}
		e.c.crash("published")
	}
	if err := e.append(ctx, entry{Kind: kindPublished, Part: p.name, Through: c.offset, Seq: seq}); err != nil {
		return err
	}
	e.c.stats.published.Add(int64(len(msgs)))
	e.c.met.add(ctx, "published", int64(len(msgs)))
	e.updateHeld()
	return nil
}

// pollEvents asks the registry for backfills of the subject, and
// publishes what each released.
func (e *engine) pollEvents(ctx context.Context) error {
	if e.c.cfg.IgnoreReplays || time.Since(e.lastPoll) < e.c.cfg.EventPoll {
		return nil
	}
	e.lastPoll = time.Now()
	var resp *registryv1.ListEventsResponse
	if err := e.c.retry(ctx, "list backfill events", func(ctx context.Context) error {
		var err error
		resp, err = e.c.registry.ListEvents(ctx, &registryv1.ListEventsRequest{AfterSequence: e.st.events, Subjects: []string{e.c.cfg.Subject},
			Types: []registryv1.EventType{registryv1.EventType_EVENT_TYPE_BACKFILL_COMPLETED}, Limit: 20})
		return err
	}); err != nil {
		return err
	}
	for _, ev := range resp.GetEvents() {
		if err := e.handleReplay(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// handleReplay runs a finished replay again under its own id, which makes
// the gate send every record it released (and release nothing twice),
// stages this source's share of them and marks the event handled.
func (e *engine) handleReplay(ctx context.Context, ev *registryv1.Event) error {
	id := ev.GetAttributes()["replay_id"]
	if id == "" {
		return e.append(ctx, entry{Kind: kindReplayed, Replay: "event-" + strconv.FormatInt(ev.GetSequence(), 10), Events: ev.GetSequence()})
	}
	part := replayPart(id)
	seen := map[string]bool{}
	if p := e.st.parts[part]; p != nil {
		for _, c := range p.chunks {
			for _, r := range c.records {
				seen[r.ID] = true
			}
		}
	}
	e.c.replayMu.Lock()
	var recs []staged
	err := e.c.retry(ctx, "replay "+id, func(ctx context.Context) error {
		recs = recs[:0]
		stream, err := e.c.gate.Replay(ctx, &gatev1.ReplayRequest{ReplayId: id, Window: &gatev1.ReplayWindow{Subject: e.c.cfg.Subject,
			PartitionFrom: ev.GetPartitionFrom(), PartitionTo: ev.GetPartitionTo(), ContractVersion: ev.GetVersion()}})
		if err != nil {
			return err
		}
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			rec := msg.GetRecord()
			if rec == nil {
				continue
			}
			prov := rec.GetProvenance()
			if !strings.HasPrefix(prov.GetBatchId(), batchName(e.name)+"@") {
				continue // another source partition's record, or another pipeline's
			}
			did := deliveryID(rec.GetRecordId(), prov.GetBatchId(), prov.GetPosition())
			if seen[did] || rec.GetJson() == nil {
				continue
			}
			seen[did] = true
			recs = append(recs, staged{ID: did, RecordID: rec.GetRecordId(), Position: prov.GetPosition(), BatchID: prov.GetBatchId(),
				Version: prov.GetContractVersion(), JSON: rec.GetJson()})
		}
	})
	e.c.replayMu.Unlock()
	if err != nil {
		if strings.Contains(err.Error(), "("+codes.PermissionDenied.String()+")") {
			return fmt.Errorf("%w; publishing what replays release needs a token with the operator role (or turn it off with --ignore-replays)", err)
		}
		return err
	}
	e.c.crash("replayed")
	var entries []entry
	if len(recs) > 0 {
		entries = append(entries, entry{Kind: kindStage, Part: part, Replay: id, Records: recs})
	}
	entries = append(entries, entry{Kind: kindReplayed, Replay: id, Events: ev.GetSequence()})
	if err := e.append(ctx, entries...); err != nil {
		return err
	}
	e.c.stats.replayed.Add(int64(len(recs)))
	e.c.met.add(ctx, "replayed", int64(len(recs)))
	e.c.log.Info("staged the records a replay released", "source", e.name, "replay", id, "records", len(recs),
		"from", ev.GetPartitionFrom(), "to", ev.GetPartitionTo())
	e.updateHeld()
	return nil
}

// maybeTrim snapshots the scalar state and drops journal entries no
// longer needed.
func (e *engine) maybeTrim(ctx context.Context) error {
	if e.appended < e.c.cfg.TrimEvery || e.st.plan != nil {
		return nil
	}
	snap := entry{Kind: kindSnapshot, Next: e.st.next, Seq: e.st.seq, Events: e.st.events}
	if !e.st.watermark.IsZero() {
		snap.Watermark, snap.At = e.st.watermark.UnixNano(), e.st.readAt.UnixNano()
	}
	if err := e.append(ctx, snap); err != nil {
		return err
	}
	e.appended = 0
	return e.p.Journal.Trim(ctx, e.st.trimPoint())
}

func (e *engine) updateHeld() {
	n := int64(0)
	for _, p := range e.st.parts {
		n += int64(p.count() + len(p.held))
	}
	e.held.Store(n)
}

// lag is how many source messages are not yet done; the broker's end is
// read at most once a second.
func (e *engine) lag(ctx context.Context) (int64, error) {
	if time.Since(time.Unix(0, e.endReadAt.Load())) > time.Second {
		end, err := e.p.Source.End(ctx)
		if err != nil {
			return 0, err
		}
		e.lastEnd.Store(end)
		e.endReadAt.Store(time.Now().UnixNano())
	}
	return max(0, e.lastEnd.Load()-e.next.Load()), nil
}
