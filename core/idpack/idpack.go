// Package idpack packs lists of identifiers into one buffer
// (idmapv1.PackedIds) and cuts them out again: a batch's ids cross gRPC as
// one bytes field and a list of ends rather than a protobuf string each,
// which every receiver would allocate one by one.
package idpack

import (
	"fmt"

	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// Pack puts ids side by side in one buffer: id i is
// Data[Ends[i-1]:Ends[i]].
func Pack[S ~string | ~[]byte](ids []S) *idmapv1.PackedIds {
	size := 0
	for _, id := range ids {
		size += len(id)
	}
	p := &idmapv1.PackedIds{Data: make([]byte, 0, size), Ends: make([]uint32, len(ids))}
	for i, id := range ids {
		p.Data = append(p.Data, id...)
		p.Ends[i] = uint32(len(p.Data))
	}
	return p
}

// Strings cuts p's ids out as strings of one allocation, refusing ends
// that run backwards or past the data (naming the first such id).
func Strings(p *idmapv1.PackedIds) ([]string, error) {
	text := string(p.GetData())
	out := make([]string, len(p.GetEnds()))
	start := uint32(0)
	for i, end := range p.GetEnds() {
		if end < start || int(end) > len(text) {
			return nil, fmt.Errorf("packed id %d ends at %d, outside %d..%d", i, end, start, len(text))
		}
		out[i] = text[start:end]
		start = end
	}
	return out, nil
}
