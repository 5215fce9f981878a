package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The heartbeat is a row the source writes at the source database every
// HeartbeatInterval, in a table of its publication. Its change travels the
// stream like any other (it is not applied anywhere), so the slot's
// position moves with it even when no keepalive arrives and the
// replicated tables are quiet for hours, and a stream that stopped
// delivering shows as a heartbeat that no longer arrives. The price: a
// small write (and its WAL) at the primary every interval, a table the
// source role may write, and that table in the publication.

// heartbeatTable is the Seam-owned table of heartbeats, one row per source.
var heartbeatTable = TableName{Schema: "public", Name: "seam_heartbeat"}

// ensureHeartbeat creates the heartbeat table when it is missing and adds
// it to the source's publication.
func (s *Source) ensureHeartbeat(ctx context.Context) error {
	ident := heartbeatTable.ident()
	if _, err := s.source.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ident+" (source text PRIMARY KEY, beat timestamptz NOT NULL)"); err != nil {
		return fmt.Errorf("heartbeat table %s: %w (the source role needs CREATE on schema public, or create it yourself: CREATE TABLE %s (source text PRIMARY KEY, beat timestamptz NOT NULL) and grant the role INSERT and UPDATE on it)", heartbeatTable, err, ident)
	}
	var in bool
	if err := s.source.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3)",
		s.cfg.slotName(), heartbeatTable.Schema, heartbeatTable.Name).Scan(&in); err != nil {
		return fmt.Errorf("read publication %s: %w", s.cfg.slotName(), err)
	}
	if !in {
		if _, err := s.source.Exec(ctx, fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s", pgx.Identifier{s.cfg.slotName()}.Sanitize(), ident)); err != nil {
			return fmt.Errorf("add the heartbeat table %s to publication %s: %w (the source role must own the table, or add it yourself)", heartbeatTable, s.cfg.slotName(), err)
		}
	}
	return nil
}

// heartbeat writes the source's heartbeat row every HeartbeatInterval.
// A failed write is logged and tried again at the next beat: a heartbeat
// is an aid, never a reason to stop replicating.
func (s *Source) heartbeat(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		if _, err := s.source.Exec(ctx, "INSERT INTO "+heartbeatTable.ident()+" (source, beat) VALUES ($1, now()) ON CONFLICT (source) DO UPDATE SET beat = EXCLUDED.beat",
			s.cfg.Name); err != nil && ctx.Err() == nil {
			s.log.Warn("write the heartbeat", "table", heartbeatTable.String(), "error", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}
