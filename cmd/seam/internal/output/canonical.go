package output

import (
	"fmt"
	"io"
	"strconv"

	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Canonical writes one canonical record (released by a replay, or
// accepted by the gate) as a line of JSON: its
// deterministic id (the key of a downstream upsert), its provenance, and
// the canonical record itself as a JSON object.
func Canonical(w io.Writer, r *recordv1.CanonicalRecord) error {
	prov, err := Line.Marshal(r.GetProvenance())
	if err != nil {
		return fmt.Errorf("encode provenance: %w", err)
	}
	body := r.GetJson()
	if obj := r.GetObject(); obj != nil {
		if body, err = Line.Marshal(obj); err != nil {
			return fmt.Errorf("encode record: %w", err)
		}
	}
	line := make([]byte, 0, len(body)+len(prov)+120)
	line = append(line, `{"record_id":`...)
	line = strconv.AppendQuote(line, r.GetRecordId())
	line = append(line, `,"provenance":`...)
	line = append(line, prov...)
	line = append(line, `,"record":`...)
	line = append(line, body...)
	line = append(line, "}\n"...)
	_, err = w.Write(line)
	return err
}
