package record

import "sync"

// DecoderPool keeps decoders of one schema for batch after batch, as a
// service decoding many concurrent batches of one contract needs: a
// Decoder is not safe for concurrent use, and a reused one allocates
// nothing per record. Its methods are safe for concurrent use.
type DecoderPool struct {
	schema *Schema
	opts   Options
	pool   sync.Pool
}

// NewDecoderPool returns a pool of decoders of schema with opts.
func NewDecoderPool(schema *Schema, opts Options) *DecoderPool {
	return &DecoderPool{schema: schema, opts: opts}
}

// Get returns a decoder from the pool, or a new one when none is free.
// Give it back with Put once its batches are no longer used.
func (p *DecoderPool) Get() *Decoder {
	if d, ok := p.pool.Get().(*Decoder); ok {
		return d
	}
	d := NewDecoder(p.schema, p.opts)
	d.Recycle() // every decoder comes back (Put): its first batch's memory is reused too
	return d
}

// Put takes back a decoder from Get once nothing of the batches it
// decoded is used any more: it recycles their records' memory for the
// next batch, so those records must not be read after Put.
func (p *DecoderPool) Put(d *Decoder) {
	d.Recycle()
	p.pool.Put(d)
}
