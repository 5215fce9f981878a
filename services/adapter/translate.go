package adapter

import (
	"context"
	"fmt"

	"github.com/seamdata/seam/core/idpack"
	"github.com/seamdata/seam/core/mapping"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// maxTranslateIDs is idmap's limit of ids per Translate call.
const maxTranslateIDs = 100_000

// translate resolves a batch's lookups: one Translate call per (namespace,
// from, to) the batch uses, split only where a lookup exceeds idmap's
// per-call limit. A failure fails the whole batch: a record never passes
// with an id left untranslated. The ids go packed in one buffer and the
// values come back so.
func (s *Server) translate(ctx context.Context, b *mapping.Batch) error {
	for _, l := range b.Lookups() {
		if len(l.IDs) == 0 {
			continue
		}
		if err := s.translatePacked(ctx, l); err != nil {
			return err
		}
	}
	return nil
}

// translatePacked resolves l with packed ids and values.
func (s *Server) translatePacked(ctx context.Context, l *mapping.Lookup) error {
	var data []byte
	var ends []uint32
	statuses := make([]idmapv1.TranslateStatus, 0, len(l.IDs))
	for start := 0; start < len(l.IDs); start += maxTranslateIDs {
		ids := l.IDs[start:min(start+maxTranslateIDs, len(l.IDs))]
		resp, err := s.idmap.Translate(ctx, &idmapv1.TranslateRequest{Namespace: l.Namespace, FromFormat: l.From, ToFormat: l.To, Packed: idpack.Pack(ids)})
		if err != nil {
			return peerError(ctx, "idmap", "translation", "", err, "")
		}
		pv := resp.GetPackedValues()
		if len(pv.GetEnds()) != len(ids) || len(resp.GetStatuses()) != len(ids) {
			return peerError(ctx, "idmap", "translation", "", fmt.Errorf("idmap answered %d values and %d statuses for %d ids", len(pv.GetEnds()), len(resp.GetStatuses()), len(ids)), "")
		}
		if start == 0 && len(l.IDs) <= maxTranslateIDs {
			data, ends = pv.GetData(), pv.GetEnds() // one call: its buffer as it is
		} else {
			base := uint32(len(data))
			data = append(data, pv.GetData()...)
			for _, e := range pv.GetEnds() {
				ends = append(ends, base+e)
			}
		}
		statuses = append(statuses, resp.GetStatuses()...)
	}
	if err := l.ResolvePacked(data, ends, statuses); err != nil {
		return fmt.Errorf("translate %s/%s → %s: %w", l.Namespace, l.From, l.To, err)
	}
	return nil
}
