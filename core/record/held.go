package record

import (
	"bytes"
	"encoding/json"
	"fmt"

	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Held is a record the gate holds in quarantine, as it keeps it: a JSON
// record as its object, a CSV record as its header line and its row.
type Held struct {
	ID       string
	Position int64
	Format   recordv1.Format
	Raw      []byte
}

// HeldBatch is held records of one shape re-encoded as one batch: JSON
// records as NDJSON lines, CSV rows under their header.
type HeldBatch struct {
	Format recordv1.Format
	// Header is a CSV batch's header line (without its line break).
	Header []byte
	Data   []byte
	// Rows are the numbers the records of the batch were added with, in
	// order.
	Rows []int
}

// HeldBatches regroups held records into the batches that decode them
// again: one per format, and per header for CSV, in the order of their
// first record. The gate's replay and a contract's dry run both read held
// records through it, so the dry run judges the batches the replay would.
// The zero value is ready to use.
type HeldBatches struct {
	Batches []*HeldBatch
	byKey   map[string]*HeldBatch
}

// Add puts held record h, numbered row (its index in the caller's list),
// into its batch. A record whose bytes are not what its format says (a
// CSV record without its header line, a JSON record that is not an
// object) goes in none: the error says why.
func (g *HeldBatches) Add(row int, h Held) error {
	var (
		format       = recordv1.Format_FORMAT_NDJSON
		key          = "json"
		header, line []byte
	)
	if h.Format == recordv1.Format_FORMAT_CSV {
		var ok bool
		if header, line, ok = bytes.Cut(h.Raw, []byte("\n")); !ok {
			return fmt.Errorf("held CSV record %s has no header line", h.ID)
		}
		format, key, line = recordv1.Format_FORMAT_CSV, "csv:"+string(header), bytes.TrimRight(line, "\r\n")
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, h.Raw); err != nil {
			return fmt.Errorf("held record %s at position %d is not a JSON object: %v", h.ID, h.Position, err)
		}
		line = buf.Bytes()
	}
	b := g.byKey[key]
	if b == nil {
		b = &HeldBatch{Format: format}
		if format == recordv1.Format_FORMAT_CSV {
			b.Header = header
			b.Data = append(append(b.Data, header...), '\n')
		}
		if g.byKey == nil {
			g.byKey = map[string]*HeldBatch{}
		}
		g.byKey[key] = b
		g.Batches = append(g.Batches, b)
	}
	b.Data = append(append(b.Data, line...), '\n')
	b.Rows = append(b.Rows, row)
	return nil
}
