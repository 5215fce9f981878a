package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/storage/storagetest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// tripProxy forwards TCP connections to a PostgreSQL server and counts
// round trips: the times a client sends after the server answered (or
// first), each a wait for the server. A pgx ping (sent by database/sql
// when it hands out a connection idle for over a second) is not counted:
// it is the pool's, not the commit's.
//
// With a latency, each round trip waits that long first: a PostgreSQL
// server across a network rather than on this machine.
type tripProxy struct {
	ln      net.Listener
	trips   atomic.Int64
	latency time.Duration
}

func startTripProxy(t testing.TB, target string, latency time.Duration) *tripProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tripProxy{ln: ln, latency: latency}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			var mu sync.Mutex
			answered := true
			conns.Add(2)
			go pump(&conns, s, c, func(chunk []byte) { // client to server
				mu.Lock()
				turn := answered
				answered = false
				mu.Unlock()
				if turn && !bytes.Contains(chunk, []byte("-- ping")) {
					p.trips.Add(1)
				}
				if turn && p.latency > 0 {
					time.Sleep(p.latency)
				}
			})
			go pump(&conns, c, s, func([]byte) { // server to client
				mu.Lock()
				answered = true
				mu.Unlock()
			})
		}
	}()
	return p
}

// pump copies src to dst until either fails, showing each chunk to seen
// before it is written, then closes dst and marks conns done.
func pump(conns *sync.WaitGroup, dst, src net.Conn, seen func(chunk []byte)) {
	defer conns.Done()
	defer dst.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			seen(buf[:n])
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// through returns url with its host replaced by the proxy's.
func (p *tripProxy) through(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// storeCommit commits a batch as commitBatch does, through the store
// alone: claim, lock, unit, keys, quarantine, watermark, unit, partition,
// verdicts, answer. It returns which keys were new.
func storeCommit(ctx context.Context, s *sqlStore, part, batchID string, keys [][]byte, at time.Time) ([]bool, error) {
	var fresh []bool
	err := s.InPartitionTx(ctx, "shop.orders", part, func(tx storeTx) error {
		k := batchKey{"shop.orders", part, batchID}
		p, err := claimBatch(ctx, tx, k, []byte("digest"), at)
		if err != nil {
			return err
		}
		u, ok, err := tx.Unit(ctx, p.pid, p.amendment)
		if err != nil {
			return err
		}
		if !ok {
			u = unitRow{pid: p.pid, amendment: p.amendment, status: gatev1.PartitionStatus_PARTITION_STATUS_OPEN, version: 1, openedAt: at}
		}
		if fresh, err = tx.InsertKeys(ctx, p.pid, keys); err != nil {
			return err
		}
		var rows []quarantineRow
		for i, f := range fresh {
			if !f {
				rows = append(rows, quarantineRow{id: fmt.Sprintf("%s-%d", batchID, i), subject: k.subject, part: k.part, batchID: batchID, index: int64(i),
					version: 1, raw: []byte(`{"order_id":1}`), rawSize: 14, rawSHA256: fmt.Sprintf("%064d", i), at: at,
					reasons: []*recordv1.RecordError{{Code: recordv1.ErrorCode_ERROR_CODE_DUPLICATE_KEY, Check: "order_key", Message: "duplicate"}}})
			}
		}
		if err := tx.InsertQuarantine(ctx, rows); err != nil {
			return err
		}
		if err := tx.AdvanceWatermark(ctx, k.subject, at); err != nil {
			return err
		}
		u.counts.received += int64(len(keys))
		u.counts.duplicates += int64(len(rows))
		u.counts.accepted += int64(len(keys) - len(rows))
		u.counts.batches++
		u.figures.Stats.Rows += int64(len(keys))
		u.updatedAt = at
		if err := tx.PutUnit(ctx, u); err != nil {
			return err
		}
		if err := tx.SetPartition(ctx, p, at); err != nil {
			return err
		}
		if err := tx.FinishBatch(ctx, k, batchRow{status: gatev1.BatchStatus_BATCH_STATUS_ACCEPTED, version: 1, received: int64(len(keys)),
			accepted: int64(len(keys) - len(rows)), duplicates: int64(len(rows)), verdicts: []byte{1}}); err != nil {
			return err
		}
		return tx.PutAnswer(ctx, k, answerPacked, []byte("records"), at.Add(time.Hour))
	})
	return fresh, err
}

// A batch's commit on PostgreSQL is one round trip once the gate has
// committed the partition's batch before (and each connection has its
// statements prepared); through database/sql it was a dozen. What it
// writes is what the transaction writes: the same keys new, the same
// counts, with another replica's batches in between, a rolled-back
// pipeline leaving nothing, a duplicate batch found.
func TestPipelinedCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := storagetest.PostgresURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startTripProxy(t, u.Host, 0)
	a := openTestStore(t, proxy.through(t, base))
	at := start

	// The first commit reads the partition, as a transaction; then each
	// of the pool's connections prepares the pipeline's statements once.
	for i := 0; i <= 6; i++ {
		at = at.Add(time.Second)
		if _, err := storeCommit(ctx, a, "2025-02-01", fmt.Sprint("b", i), keyHashes(50*i, 100), at); err != nil {
			t.Fatal(err)
		}
	}
	for i := 7; i < 12; i++ {
		at = at.Add(time.Second)
		before := proxy.trips.Load()
		// Half the keys are the batch before's, held as duplicates.
		fresh, err := storeCommit(ctx, a, "2025-02-01", fmt.Sprint("b", i), keyHashes(50*i, 100), at)
		if err != nil {
			t.Fatal(err)
		}
		if n := proxy.trips.Load() - before; n != 1 {
			t.Errorf("commit %d took %d round trips, want 1", i, n)
		}
		if want := slices.Repeat([]bool{false}, 50); !slices.Equal(fresh[:50], want) || slices.Contains(fresh[50:], false) {
			t.Errorf("commit %d: fresh = %v, want the first 50 seen", i, fresh)
		}
	}
	// The same commit as a transaction (the partition not cached), on
	// another partition, its statements prepared by the first.
	asTx := int64(1 << 30)
	for i := range 3 {
		a.parts.drop(partKey{"shop.orders", "2025-02-02"})
		before := proxy.trips.Load()
		if _, err := storeCommit(ctx, a, "2025-02-02", fmt.Sprint("tx", i), keyHashes(100*i, 100), at); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			asTx = min(asTx, proxy.trips.Load()-before)
		}
	}
	t.Logf("a commit as a transaction: %d round trips; pipelined: 1", asTx)
	if asTx < 8 {
		t.Errorf("the commit as a transaction took %d round trips: is it pipelined too?", asTx)
	}
	if got := a.parts.fellBack.Load(); got != 0 {
		t.Errorf("%d pipelined commits fell back to a transaction, want 0", got)
	}

	// Another replica commits to the partition: the guards see it, the
	// commit runs as a transaction and counts that batch's keys.
	b := openTestStore(t, base)
	if fresh, err := storeCommit(ctx, b, "2025-02-01", "other", keyHashes(5000, 10), at); err != nil || slices.Contains(fresh, false) {
		t.Fatalf("replica's commit: fresh = %v, %v", fresh, err)
	}
	fresh, err := storeCommit(ctx, a, "2025-02-01", "after-other", keyHashes(5005, 10), at)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, false, false, false, false, true, true, true, true, true}; !slices.Equal(fresh, want) {
		t.Errorf("after the replica's batch: fresh = %v, want %v", fresh, want)
	}
	if got := a.parts.fellBack.Load(); got != 1 {
		t.Errorf("fell back %d times after the replica's batch, want 1", got)
	}
	// The transaction cached the partition again: the next is pipelined.
	pipelined := a.parts.pipelined.Load()
	if _, err := storeCommit(ctx, a, "2025-02-01", "next", keyHashes(9000, 10), at); err != nil {
		t.Fatal(err)
	}
	if a.parts.pipelined.Load() != pipelined+1 {
		t.Errorf("the commit after the fallback was not pipelined")
	}
	// A batch id taken: the pipeline's claim fails, nothing of it stays,
	// and the transaction after it finds the batch.
	if _, err := storeCommit(ctx, a, "2025-02-01", "b3", keyHashes(20000, 10), at); !errors.Is(err, errDuplicateBatch) {
		t.Fatalf("a batch id taken: %v, want errDuplicateBatch", err)
	}
	if fresh, err := storeCommit(ctx, a, "2025-02-01", "last", keyHashes(20000, 10), at); err != nil || slices.Contains(fresh, false) {
		t.Errorf("the keys of the duplicate batch: fresh = %v (%v), want all new: it wrote none", fresh, err)
	}

	_, unit, ok, err := a.Head(ctx, "shop.orders", "2025-02-01", nil)
	if err != nil || !ok {
		t.Fatalf("Head: %v %v", ok, err)
	}
	// 12 batches of 100 keys (all but the first half seen), 4 of 10:
	// "other", "after-other" (half seen), "next" and "last".
	c := unit.counts
	if c.batches != 16 || c.received != 1240 || c.duplicates != 11*50+5 || c.accepted != c.received-c.duplicates || unit.figures.Stats.Rows != 1240 {
		t.Errorf("unit counts = %+v, rows %d: want 16 batches, 1240 received, 555 duplicates", c, unit.figures.Stats.Rows)
	}
	var held int
	if err := a.db.SQL.QueryRowContext(ctx, `SELECT count(*) FROM gate_quarantine WHERE part = '2025-02-01'`).Scan(&held); err != nil || held != 555 {
		t.Errorf("quarantined rows = %d (%v), want 555", held, err)
	}
	w, ok, err := a.Watermark(ctx, "shop.orders")
	if err != nil || !ok || !w.Equal(at) {
		t.Errorf("watermark = %v %v %v, want %v", w, ok, err, at)
	}
}

// The gate's own commits are pipelined on PostgreSQL: after a partition's
// first batch, every batch of it is, and the duplicates across batches
// are found as before.
func TestGateCommitsPipelined(t *testing.T) {
	t.Parallel()
	e := startGate(t, knownPeers(t), storagetest.PostgresURL(t), nil)
	ctx := context.Background()
	for i := range 5 {
		req := ingest("shop.orders", "2025-02-03", fmt.Sprint("batch-", i), orders{first: 1 + 50*i, n: 100, amount: 85})
		req.SummaryOnly = true
		resp, err := e.as("pipeline").Ingest(ctx, req)
		if err != nil {
			t.Fatalf("Ingest %d: %v", i, err)
		}
		if want := int64(min(i, 1) * 50); resp.GetSummary().GetDuplicates() != want {
			t.Errorf("batch %d: %d duplicates, want %d", i, resp.GetSummary().GetDuplicates(), want)
		}
	}
	s := e.srv.store.(*sqlStore)
	if got, fell := s.parts.pipelined.Load(), s.parts.fellBack.Load(); got != 4 || fell != 0 {
		t.Errorf("%d commits pipelined and %d fell back, want 4 and 0", got, fell)
	}
	m := monitorOf(t, e, "shop.orders", "2025-02-03")
	if m.GetReceived() != 500 || m.GetBatches() != 5 || m.GetAccepted() != 300 {
		t.Errorf("monitor = %v, want 5 batches, 500 received, 300 accepted", m)
	}

	// A stream's chunks (what `seam gate ingest` sends), each prepared
	// while the one before commits.
	stream, err := e.as("pipeline").IngestStream(ctx)
	if err != nil {
		t.Fatalf("IngestStream: %v", err)
	}
	if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: &gatev1.IngestHeader{
		Subject: "shop.orders", Partition: "2025-02-04", BatchId: "load", Format: recordv1.Format_FORMAT_NDJSON, SummaryOnly: true}}}); err != nil {
		t.Fatalf("send header: %v", err)
	}
	for i := range 6 {
		o := orders{first: 1 + 100*i, n: 100, amount: 85}
		if err := stream.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{Sequence: int64(i), Data: o.ndjson(), FirstOffset: int64(i * 100)}}}); err != nil {
			t.Fatalf("send chunk %d: %v", i, err)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatalf("CloseAndRecv: %v", err)
	}
	if s := resp.GetSummary(); s.GetAccepted() != 600 {
		t.Errorf("stream = %v, want 600 accepted", s)
	}
	if got, fell := s.parts.pipelined.Load(), s.parts.fellBack.Load(); got != 4+5 || fell != 0 {
		t.Errorf("after the stream: %d commits pipelined and %d fell back, want 9 and 0", got, fell)
	}
}

// BenchmarkPartitionCommit commits batches of 1,000 new keys to one
// partition, as commitBatch does (storeCommit): on SQLite, and on
// PostgreSQL as a transaction (the partition dropped from the cache
// before each) and pipelined, on this machine and 1 ms away (each round
// trip delayed 1 ms, as a server across a network). trips/op counts the
// round trips. On a local server a commit's time is mostly the WAL's
// fsync; the round trips are what a network adds.
func BenchmarkPartitionCommit(b *testing.B) {
	run := func(b *testing.B, s *sqlStore, proxy *tripProxy, asTx bool) {
		ctx := context.Background()
		if _, err := storeCommit(ctx, s, "2025-02-01", "first", keyHashes(0, 1000), start); err != nil {
			b.Fatal(err)
		}
		var trips int64
		b.ResetTimer()
		for i := range b.N {
			if asTx {
				s.parts.drop(partKey{"shop.orders", "2025-02-01"})
			}
			before := int64(0)
			if proxy != nil {
				before = proxy.trips.Load()
			}
			if _, err := storeCommit(ctx, s, "2025-02-01", fmt.Sprint("b", i), keyHashes(1000*(i+1), 1000), start); err != nil {
				b.Fatal(err)
			}
			if proxy != nil {
				trips += proxy.trips.Load() - before
			}
		}
		b.ReportMetric(float64(trips)/float64(b.N), "trips/op")
	}
	b.Run("sqlite", func(b *testing.B) {
		s, err := openStore(context.Background(), storagetest.SQLiteURL(b), DefaultKeyCacheKeys)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() }) // a benchmark's store; its data is thrown away
		run(b, s, nil, false)
	})
	for _, c := range []struct {
		mode    string
		latency time.Duration
	}{{"transaction", 0}, {"pipelined", 0}, {"transaction", time.Millisecond}, {"pipelined", time.Millisecond}} {
		b.Run(fmt.Sprintf("postgres/%s/rtt=%v", c.mode, c.latency), func(b *testing.B) {
			base := storagetest.PostgresURL(b)
			u, err := url.Parse(base)
			if err != nil {
				b.Fatal(err)
			}
			proxy := startTripProxy(b, u.Host, c.latency)
			s, err := openStore(context.Background(), proxy.through(b, base), DefaultKeyCacheKeys)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() }) // a benchmark's store; its data is thrown away
			run(b, s, proxy, c.mode == "transaction")
		})
	}
}
