package stream_test

import (
	"fmt"
	"testing"
	"time"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// Sequential payment ids crossing 10^4 ("TR-9999", then "TR-10000"), sent
// through the connector and judged by minute partitions as the watermark
// passes them: the minutes after the crossing are judged against the
// shapes the minutes before taught the gate, and raise no
// UNANNOUNCED_CHANGE. Every minute is sealed PASSED and published.
func TestJetStreamSequentialIDsAcrossAPowerOfTenRaiseNoChange(t *testing.T) {
	b, n := startMinuteConnector(t, "t-jsq", "testdata/bank_transfers.yaml", "bank.transfers", "10")

	// 30 transfers a minute: minutes 0 and 1 hold TR-9940…TR-9999, minutes
	// 2 and 3 TR-10000…TR-10059; one transfer an hour later moves the
	// watermark past them all.
	transfer := func(seq int, at time.Time) []byte {
		return fmt.Appendf(nil, `{"payment_id":"TR-%d","account_id":%d,"amount":%d.5,"booked_at":%q,"seq":%d}`,
			seq, seq%37+1, 10+seq%90, at.Format(time.RFC3339), seq)
	}
	var msgs [][]byte
	want := map[string]bool{}
	for seq := 9940; seq < 10060; seq++ {
		msgs = append(msgs, transfer(seq, base.Add(time.Duration(seq-9940)*2*time.Second)))
		want[fmt.Sprintf("TR-%d", seq)] = true
	}
	for len(msgs) > 0 {
		k := min(20, len(msgs))
		b.produceRaw(t, msgs[:k])
		msgs = msgs[k:]
		time.Sleep(100 * time.Millisecond)
	}
	b.produceRaw(t, [][]byte{transfer(99999, base.Add(time.Hour))})

	gc, ctx := n.gate(t)
	minutes := []string{}
	for m := range 4 {
		minutes = append(minutes, base.Add(time.Duration(m)*time.Minute).Format("2006-01-02T15:04"))
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, part := range minutes {
		var st *gatev1.PartitionState
		for {
			resp, err := gc.GetPartition(ctx, &gatev1.GetPartitionRequest{Subject: "bank.transfers", Partition: part})
			if err == nil && resp.GetPartition().GetStatus() == gatev1.PartitionStatus_PARTITION_STATUS_SEALED {
				st = resp.GetPartition()
				break
			}
			if time.Now().After(deadline) {
				mon, _ := gc.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: "bank.transfers"})
				t.Fatalf("partition %s not sealed within 90s (%v); the gate holds %v", part, err, mon.GetPartitions())
			}
			time.Sleep(300 * time.Millisecond)
		}
		if st.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || len(st.GetAlerts()) > 0 || st.GetCounts().GetAccepted() != 30 {
			t.Errorf("minute %s: %s, %d accepted, alerts %v; want PASSED with its 30 transfers and no alert", part, st.GetVerdict(), st.GetCounts().GetAccepted(), st.GetAlerts())
		}
	}
	resp, err := gc.ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: "bank.transfers"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range resp.GetAlerts() {
		t.Errorf("alert %s on %s: %s", a.GetKind(), a.GetPartition(), a.GetMessage())
	}
	var out []outRecord
	for end := time.Now().Add(60 * time.Second); len(out) < len(want) && time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		out = b.output(t)
	}
	checkOutput(t, out, want)
}
