package dial

import (
	"sync"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// Buffers is the pool gRPC reads messages into and marshals them into, for
// Seam's clients and servers alike (UseBuffers). gRPC's default pool jumps
// from 32 KiB buffers to 1 MiB ones and zeroes a buffer's whole capacity
// on every use: each hop of a 250 KB batch cleared 1 MiB, 5% of the ingest
// path's CPU. A tier at every power of two up to 64 MiB keeps a buffer at
// most twice its message.
var Buffers = func() mem.BufferPool {
	exps := []uint8{8, 12, 14, 15}
	for e := uint8(16); e <= 26; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		panic("dial: buffer pool: " + err.Error()) // the exponents are constants
	}
	return p
}()

var useBuffers sync.Once

// UseBuffers makes Buffers the process's gRPC buffer pool. The codec
// marshals into and unmarshals from the process-wide pool whatever a
// connection is configured with, so the pool is set for the process;
// Conn and platform/server call it before they open anything.
func UseBuffers() {
	useBuffers.Do(func() { experimental.SetDefaultBufferPool(Buffers) })
}
