package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestNDJSONLinesAreSourcePositions(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Position: 5, Value: []byte(`{"a":1}`)},
		{Position: 6, Value: []byte("{\n  \"b\": 2\n}")},     // valid JSON over lines: compacted
		{Position: 9, Value: []byte("{\"c\":\n  oops")},      // invalid over lines: kept on one line
		{Position: 10, Value: []byte("  ")},                  // empty: null, which the gate quarantines
		{Position: 12, Value: []byte(`{"d":"x\ny"}` + "\n")}, // escaped newline stays escaped
	}
	data, first := ndjson(msgs)
	if first != 4 {
		t.Fatalf("first offset = %d, want 4", first)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	want := map[int64]string{5: `{"a":1}`, 6: `{"b":2}`, 9: `{"c":   oops`, 10: `null`, 12: `{"d":"x\ny"}`}
	for pos, w := range want {
		// The gate's position of a record is first_offset plus its 1-based line.
		if got := lines[pos-first-1]; got != w {
			t.Errorf("line of position %d = %q, want %q", pos, got, w)
		}
	}
	for _, pos := range []int64{7, 8, 11} {
		if got := lines[pos-first-1]; got != "" {
			t.Errorf("line of missing position %d = %q, want a blank line", pos, got)
		}
	}
}

func TestSplitByPartitionAndGap(t *testing.T) {
	t.Parallel()
	var msgs []Message
	for _, p := range []int64{10, 11, 12, 13, 13 + maxGapLines + 5, 13 + maxGapLines + 6} {
		msgs = append(msgs, Message{Position: p})
	}
	partOf := func(m Message) (string, int32) {
		if m.Position%2 == 0 {
			return "even", 0
		}
		return "odd", 0
	}
	got := split("src/0", 10, msgs[len(msgs)-1].Position, msgs, partOf)
	var desc []string
	for _, sb := range got {
		var ps []string
		for _, m := range sb.msgs {
			ps = append(ps, fmt.Sprint(m.Position))
		}
		desc = append(desc, sb.part+" "+sb.batchID+" "+strings.Join(ps, ","))
	}
	last := 13 + maxGapLines + 6
	want := []string{
		fmt.Sprintf("even src:0@10-%d 10,12", last),
		fmt.Sprintf("even src:0@10-%d+%d %d", last, last-1, last-1),
		fmt.Sprintf("odd src:0@10-%d 11,13", last),
		fmt.Sprintf("odd src:0@10-%d+%d %d", last, last, last),
	}
	if strings.Join(desc, "\n") != strings.Join(want, "\n") {
		t.Fatalf("split =\n%s\nwant\n%s", strings.Join(desc, "\n"), strings.Join(want, "\n"))
	}
}

func rec(id string) staged { return staged{ID: id, RecordID: id, JSON: json.RawMessage(`{}`)} }

func TestJournalFold(t *testing.T) {
	t.Parallel()
	s := newState()
	entries := []entry{
		{Kind: kindPlan, From: 0, To: 9},                                                     // 0
		{Kind: kindStage, Part: "P1", Records: []staged{rec("a"), rec("b")}},                 // 1
		{Kind: kindDone, Next: 10, Watermark: time.Unix(100, 0).UnixNano()},                  // 2
		{Kind: kindPlan, From: 10, To: 19},                                                   // 3
		{Kind: kindStage, Part: "P2", Records: []staged{rec("orphan")}},                      // 4: the process died here
		{Kind: kindPlan, From: 10, To: 19},                                                   // 5: the same batch, sent again
		{Kind: kindStage, Part: "P2", Records: []staged{rec("c")}},                           // 6
		{Kind: kindBlocked, Part: "P3", Records: []staged{{ID: "x", Raw: []byte("r")}}},      // 7
		{Kind: kindDone, Next: 20, Watermark: time.Unix(50, 0).UnixNano()},                   // 8
		{Kind: kindPublished, Part: "P1", Through: 1, Seq: 2},                                // 9
		{Kind: kindStage, Part: replayPart("r1"), Replay: "r1", Records: []staged{rec("d")}}, // 10
		{Kind: kindPlan, From: 20, To: 29},                                                   // 11: in flight
	}
	for i, e := range entries {
		s.apply(int64(i), e)
	}
	if s.next != 20 || s.seq != 2 || !s.watermark.Equal(time.Unix(100, 0).UTC()) {
		t.Fatalf("next %d seq %d watermark %v, want 20, 2 and the highest watermark seen", s.next, s.seq, s.watermark)
	}
	if s.plan == nil || s.plan.From != 20 {
		t.Fatalf("plan = %+v, want the batch from 20 in flight", s.plan)
	}
	if _, ok := s.parts["P1"]; ok {
		t.Fatal("P1 is still staged after it was published")
	}
	p2 := s.parts["P2"]
	if p2 == nil || p2.count() != 1 || p2.chunks[0].records[0].ID != "c" {
		t.Fatalf("P2 = %+v, want only record c (the orphan of the first attempt is dropped)", p2)
	}
	if p3 := s.parts["P3"]; p3 == nil || !p3.blocked || len(p3.held) != 1 {
		t.Fatalf("P3 = %+v, want blocked with one held record", p3)
	}
	if r := s.parts[replayPart("r1")]; r == nil || r.ready {
		t.Fatalf("replay r1 = %+v, want staged and not ready", r)
	}
	s.apply(12, entry{Kind: kindReplayed, Replay: "r1", Events: 7})
	if !s.parts[replayPart("r1")].ready || s.events != 7 {
		t.Fatal("replayed entry did not make the replay ready or move the event cursor")
	}
	if got := s.trimPoint(); got != 6 {
		t.Fatalf("trim point = %d, want 6 (the first unpublished stage entry)", got)
	}
}

func TestEncodeRecordsSplitsUnderTheLimit(t *testing.T) {
	t.Parallel()
	var recs []staged
	for i := range 100 {
		r := rec(fmt.Sprintf("r%03d", i))
		r.JSON = json.RawMessage(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 200)))
		recs = append(recs, r)
	}
	raw, pieces, err := encodeRecords(entry{Kind: kindStage, Part: "P", Records: recs}, 4000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, b := range raw {
		if len(b) > 4000 {
			t.Fatalf("entry %d is %d bytes, over 4000", i, len(b))
		}
		n += len(pieces[i].Records)
	}
	if n != 100 || len(raw) < 2 {
		t.Fatalf("%d records in %d entries, want 100 in several", n, len(raw))
	}
	big := rec("huge")
	big.JSON = json.RawMessage(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 5000)))
	if _, _, err := encodeRecords(entry{Kind: kindStage, Records: []staged{big}}, 4000); err == nil || !strings.Contains(err.Error(), "huge") {
		t.Fatalf("oversized record: error %v, want one naming the record", err)
	}
}

func TestWatermarks(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	w := NewWatermarks(10*time.Second, func() time.Time { return now })
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	w.Observe("a", at(500), now)
	w.Observe("b", at(300), now)
	if got := w.Current(); !got.Equal(at(300)) {
		t.Fatalf("watermark = %v, want the lowest of the active engines (300)", got)
	}
	now = now.Add(5 * time.Second)
	w.Observe("a", at(600), now)
	now = now.Add(6 * time.Second) // b idle for 11s, a for 6s
	if got := w.Current(); !got.Equal(at(600)) {
		t.Fatalf("watermark = %v, want 600 with b idle", got)
	}
	now = now.Add(time.Minute) // both idle
	if got := w.Current(); !got.Equal(at(600)) {
		t.Fatalf("watermark = %v, want the furthest time seen (600) with every engine idle", got)
	}
	w.Observe("b", at(400), now) // b wakes up behind: the watermark never goes back
	if got := w.Current(); !got.Equal(at(600)) {
		t.Fatalf("watermark = %v, want it to stay at 600", got)
	}
}

func TestEventTime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value string
		want  string // RFC 3339, or "" for not found
	}{
		{`{"t":"2026-03-01T10:20:30Z"}`, "2026-03-01T10:20:30Z"},
		{`{"t":"2026-03-01T10:20:30+02:00"}`, "2026-03-01T08:20:30Z"},
		{`{"t":"2026-03-01"}`, "2026-03-01T00:00:00Z"},
		{`{"t":1772360430}`, "2026-03-01T10:20:30Z"},
		{`{"t":1772360430000}`, "2026-03-01T10:20:30Z"},
		{`{"t":"yesterday"}`, ""},
		{`{"u":"2026-03-01"}`, ""},
		{`not json`, ""},
		{`[1,2]`, ""},
	} {
		got, ok := eventTime([]byte(c.value), "t")
		s := ""
		if ok {
			s = got.UTC().Format(time.RFC3339)
		}
		if s != c.want {
			t.Errorf("eventTime(%s) = %q, want %q", c.value, s, c.want)
		}
	}
}

func TestGranularity(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 3, 1, 10, 20, 30, 0, time.UTC)
	for _, c := range []struct {
		g         Granularity
		name, end string
	}{
		{Day, "2026-03-01", "2026-03-02T00:00:00Z"},
		{Hour, "2026-03-01T10", "2026-03-01T11:00:00Z"},
		{Minute, "2026-03-01T10:20", "2026-03-01T10:21:00Z"},
	} {
		name := c.g.Name(ts)
		end, err := c.g.End(name)
		if name != c.name || err != nil || end.Format(time.RFC3339) != c.end {
			t.Errorf("%s: name %q end %v (%v), want %q and %s", c.g, name, end, err, c.name, c.end)
		}
	}
	if _, err := ParseGranularity("week"); err == nil {
		t.Error("ParseGranularity(week) accepted")
	}
}

func TestDeliveryIDs(t *testing.T) {
	t.Parallel()
	a := deliveryID("rec1", "src/0@1-10", 3)
	if a != deliveryID("rec1", "src/0@1-10", 3) {
		t.Fatal("the same source record got two delivery ids")
	}
	if a == deliveryID("rec1", "src/0@11-20", 12) {
		t.Fatal("an update of the same key got the delivery id of the first record: it would be dropped as a duplicate")
	}
	if !strings.HasPrefix(a, "rec1.") {
		t.Fatalf("delivery id %q does not start with the record id", a)
	}
}

func TestMarkFromHeaders(t *testing.T) {
	t.Parallel()
	h := map[string]string{HeaderSeq: "42", HeaderChunk: "7", HeaderIndex: "3", HeaderPartition: "P", HeaderConnector: "c"}
	m, err := MarkFromHeaders(func(k string) string { return h[k] })
	if err != nil || m != (Mark{Seq: 42, Chunk: 7, Index: 3, Part: "P", Connector: "c"}) {
		t.Fatalf("mark = %+v (%v)", m, err)
	}
	if _, err := MarkFromHeaders(func(string) string { return "" }); err == nil || !bytes.Contains([]byte(err.Error()), []byte("alone")) {
		t.Fatalf("a message without Seam-Seq: error %v, want one saying the output must be the connector's alone", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := Config{Name: "a.b", Granularity: "week", BatchRecords: -1, BatchBytes: 10, Lateness: -time.Second}
	err := c.Validate()
	if err == nil {
		t.Fatal("a bad config was accepted")
	}
	for _, want := range []string{"name", "subject", "granularity", "lateness", "batch records", "batch bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
