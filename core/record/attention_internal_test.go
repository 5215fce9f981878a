package record

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestAttentionFindsFirstByte holds the word-at-a-time string scan to the
// byte table it stands in for: the lowest byte attention marks is the
// first byte that is not plain, and a word of plain bytes has no mark.
func TestAttentionFindsFirstByte(t *testing.T) {
	// Bytes near every boundary the marks depend on, so random words hit
	// them often.
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', '\\', 'a', 0x7e, 0x7f, 0x80, 0x81, 0xc3, 0xfe, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	var w [8]byte
	for range 200000 {
		for i := range w {
			if rng.IntN(3) == 0 {
				w[i] = edges[rng.IntN(len(edges))]
			} else {
				w[i] = byte(rng.IntN(256))
			}
		}
		want := 8
		for i, c := range w {
			if !plain[c] {
				want = i
				break
			}
		}
		m := attention(binary.LittleEndian.Uint64(w[:]))
		got := bits.TrailingZeros64(m) >> 3
		if m == 0 {
			got = 8
		}
		if got != want {
			t.Fatalf("word % x: attention points at byte %d, the first byte needing attention is %d", w, got, want)
		}
	}
	for c := range 256 {
		for i := range w {
			w[i] = 'a'
		}
		w[5] = byte(c)
		m := attention(binary.LittleEndian.Uint64(w[:]))
		if (m != 0) == plain[c] {
			t.Errorf("byte 0x%02x among plain bytes: mark %x, plain %v", c, m, plain[c])
		}
	}
}
