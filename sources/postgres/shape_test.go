package postgres_test

import (
	"context"
	"testing"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// A table whose names are sequential ("name-9901" … "name-10200") is read
// in snapshot chunks of 100 rows, one gate partition each, sealed one after
// the other: the chunks after the names cross 10^4 are judged against the
// shapes the chunks before taught the gate, and raise no
// UNANNOUNCED_CHANGE (nor any alert): a run of digits that grows keeps its
// shape. Zero-padded codes and digit strings ride along.
func TestSnapshotChunksOfNamesAcrossAPowerOfTenRaiseNoChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, startSeam(t))
	e.exec(e.src, `CREATE TABLE vehicles (id bigint PRIMARY KEY, name text NOT NULL, code text NOT NULL, ref text NOT NULL)`)
	e.exec(e.src, `INSERT INTO vehicles SELECT i, 'name-' || i, 'VH-' || lpad((i % 1000)::text, 6, '0'), (i * 10)::text
  FROM generate_series(9901, 10200) i`)
	cfg := e.config("seqnames", "vehicles")
	cfg.SnapshotWorkers, cfg.ChunkRows, cfg.BatchRecords = 1, 100, 40
	e.startReady(cfg)

	subject := "pg." + dbName(e.source) + ".public.vehicles"
	parts := snapshotPartitions(t, e, subject)
	if len(parts) != 3 {
		t.Fatalf("%s has %d snapshot partitions, want one per chunk of 100 rows (3)", subject, len(parts))
	}
	var received int64
	for _, p := range parts {
		if p.GetStatus() != gatev1.PartitionStatus_PARTITION_STATUS_SEALED || p.GetVerdict() != gatev1.PartitionVerdict_PARTITION_VERDICT_PASSED || len(p.GetAlerts()) > 0 {
			t.Errorf("snapshot partition %s is %s %s with alerts %v, want sealed PASSED without alerts", p.GetPartition(), p.GetStatus(), p.GetVerdict(), p.GetAlerts())
		}
		received += p.GetCounts().GetReceived()
	}
	if received != 300 {
		t.Fatalf("the gate received %d snapshot rows, want 300", received)
	}
	resp, err := e.seam.gate.ListAlerts(context.Background(), &gatev1.ListAlertsRequest{Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range resp.GetAlerts() {
		t.Errorf("alert %s on %s: %s", a.GetKind(), a.GetPartition(), a.GetMessage())
	}
}
