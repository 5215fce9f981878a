package record_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Decoders of a pool, taken and given back by concurrent callers, decode
// every batch as a fresh decoder would, within the pool's limits.
func TestDecoderPool(t *testing.T) {
	t.Parallel()
	s := recordtest.OrderSchema()
	data := recordtest.OrdersNDJSON(300)
	want := encodeAll(s, mustDecode(t, record.NewDecoder(s, record.Options{}), data))

	pool := record.NewDecoderPool(s, record.Options{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 5 {
				d := pool.Get()
				b, err := d.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
				if err != nil {
					t.Error(err)
				} else if got := encodeAll(s, b); !bytes.Equal(got, want) {
					t.Errorf("round %d: a pooled decoder decoded the batch differently", round)
				}
				pool.Put(d)
			}
		}()
	}
	wg.Wait()

	// The pool's options hold for every decoder it makes.
	small := record.NewDecoderPool(s, record.Options{MaxRecordBytes: 16})
	d := small.Get()
	defer small.Put(d)
	b := mustDecode(t, d, data)
	if len(b.Records) == 0 || b.Records[0].Err == nil {
		t.Fatal("a decoder of a pool with MaxRecordBytes 16 accepted a longer record")
	}
}
