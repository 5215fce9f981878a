package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seamdata/seam/platform/backoff"
)

// Status is what `seam source postgres status` and `seam monitor` show.
type Status struct {
	Name          string        `json:"name"`
	Slot          string        `json:"slot"`
	Phase         string        `json:"phase"`
	ConsistentLSN string        `json:"handoff_lsn"`
	CaptureLSN    string        `json:"capture_lsn"`
	SourceLSN     string        `json:"source_lsn,omitempty"`
	LagBytes      int64         `json:"lag_bytes"`
	Tables        []TableStatus `json:"tables"`
	// Slots are the source's replication slots at the source database
	// (read when the source database is given): the slot and, while a
	// resumed snapshot is read, its temporary one.
	Slots []SlotStatus `json:"slots,omitempty"`
	// OpenTransaction is set when the source holds a transaction open at
	// the source database (the snapshot's), which keeps VACUUM from
	// removing rows deleted after it began.
	OpenTransaction *OpenTransaction `json:"open_transaction,omitempty"`
	// Outbox is the last sequence of the change stream.
	Outbox int64 `json:"outbox_sequence"`
}

// SlotStatus is one replication slot of the source.
type SlotStatus struct {
	Name      string `json:"name"`
	Temporary bool   `json:"temporary,omitempty"`
	Active    bool   `json:"active"`
	// RetainedBytes is the WAL the slot keeps: the current WAL position
	// minus its restart_lsn.
	RetainedBytes int64 `json:"retained_wal_bytes"`
	// ConfirmedLSN is the position the source confirmed to the server.
	ConfirmedLSN string `json:"confirmed_flush_lsn,omitempty"`
}

// OpenTransaction describes the transactions the source holds open at
// the source database.
type OpenTransaction struct {
	Backends int           `json:"backends"`
	Since    time.Time     `json:"since"`
	Age      time.Duration `json:"age_ns"`
}

// TableStatus is one table's state.
type TableStatus struct {
	Table           string `json:"table"`
	Subject         string `json:"subject"`
	Phase           string `json:"phase"`
	ContractVersion int32  `json:"contract_version"`
	RowsTotal       int64  `json:"snapshot_rows_total"`
	RowsDone        int64  `json:"snapshot_rows_done"`
	BytesDone       int64  `json:"snapshot_bytes"`
	AppliedLSN      string `json:"applied_lsn"`
	Applied         int64  `json:"changes_applied"`
	Quarantined     int64  `json:"changes_quarantined"`
	Skipped         int64  `json:"changes_skipped"`
	// Pending counts staged changes not yet applied; for a halted table
	// they are the held changes.
	Pending int64 `json:"changes_pending"`
	// OldestPending is the commit time of the oldest pending change.
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
	Halt          *Halt      `json:"halt,omitempty"`
}

// Held is the number of changes held by a halt (0 when not halted).
func (t TableStatus) Held() int64 {
	if t.Phase == "halted" {
		return t.Pending
	}
	return 0
}

// ErrNoSource is returned by ReadStatus for a name with no state.
var ErrNoSource = errors.New("no such source")

// ReadStatus reads a source's state from the target and, when source is
// not nil, the lag from the source's current WAL position.
func ReadStatus(ctx context.Context, target queryer, source queryer, name string) (*Status, error) {
	c, found, err := loadConnector(ctx, target, name)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("source %s: %w in this target (start it with seam source postgres run)", name, ErrNoSource)
	}
	st := &Status{Name: c.Name, Slot: c.Slot, Phase: c.Phase, ConsistentLSN: lsnText(c.ConsistentLSN), CaptureLSN: lsnText(c.CaptureLSN)}
	tables, err := loadTables(ctx, target, name)
	if err != nil {
		return nil, err
	}
	pending := map[string]int64{}
	oldest := map[string]time.Time{}
	rows, err := target.Query(ctx, "SELECT source_table, count(*), min(commit_time) FROM seam_cdc.log WHERE connector = $1 GROUP BY source_table", name)
	if err != nil {
		return nil, fmt.Errorf("count staged changes: %w", err)
	}
	for rows.Next() {
		var t string
		var n int64
		var at time.Time
		if err := rows.Scan(&t, &n, &at); err != nil {
			rows.Close()
			return nil, err
		}
		pending[t], oldest[t] = n, at
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, t := range tables {
		ts := TableStatus{Table: t.Source, Subject: t.Subject, Phase: t.Phase, ContractVersion: t.Version,
			RowsTotal: t.RowsTotal, RowsDone: t.RowsDone, BytesDone: t.BytesDone, AppliedLSN: lsnText(t.AppliedLSN),
			Applied: t.AppliedCount, Quarantined: t.Quarantined, Skipped: t.Skipped, Pending: pending[t.Source], Halt: t.Halt}
		if at, ok := oldest[t.Source]; ok {
			ts.OldestPending = &at
		}
		st.Tables = append(st.Tables, ts)
	}
	if err := target.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM seam_cdc.outbox WHERE connector = $1", name).Scan(&st.Outbox); err != nil {
		return nil, err
	}
	if source != nil {
		var cur string
		if err := source.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&cur); err != nil {
			return nil, fmt.Errorf("read the source's WAL position: %w", err)
		}
		lsn, err := pglogrepl.ParseLSN(cur)
		if err != nil {
			return nil, err
		}
		st.SourceLSN = cur
		if uint64(lsn) > c.CaptureLSN {
			st.LagBytes = int64(uint64(lsn) - c.CaptureLSN)
		}
		if err := readSourceHolds(ctx, source, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// readSourceHolds reads what the source keeps at the source database: the
// WAL of its slots and the transactions of its connections (named
// application_name seam_NAME) that hold a snapshot.
func readSourceHolds(ctx context.Context, source queryer, st *Status) error {
	rows, err := source.Query(ctx, `SELECT slot_name::text, temporary, active, coalesce((pg_current_wal_lsn() - restart_lsn)::bigint, 0), coalesce(confirmed_flush_lsn::text, '')
  FROM pg_replication_slots WHERE slot_name = $1 OR slot_name = $1 || '_resume' ORDER BY slot_name`, st.Slot)
	if err != nil {
		return fmt.Errorf("read the slots of %s at the source: %w", st.Name, err)
	}
	slots, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SlotStatus, error) {
		var s SlotStatus
		err := r.Scan(&s.Name, &s.Temporary, &s.Active, &s.RetainedBytes, &s.ConfirmedLSN)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("read the slots of %s at the source: %w", st.Name, err)
	}
	st.Slots = slots
	var n int
	var since *time.Time
	var age float64
	if err := source.QueryRow(ctx, `SELECT count(*), min(coalesce(xact_start, backend_start)), coalesce(extract(epoch FROM now() - min(coalesce(xact_start, backend_start))), 0)::float8
  FROM pg_stat_activity
 WHERE application_name = $1 AND pid <> pg_backend_pid()
   AND (backend_xmin IS NOT NULL OR state LIKE 'idle in transaction%')`, st.Slot).Scan(&n, &since, &age); err != nil {
		return fmt.Errorf("read the transactions of %s at the source: %w", st.Name, err)
	}
	if n > 0 && since != nil {
		st.OpenTransaction = &OpenTransaction{Backends: n, Since: *since, Age: time.Duration(age * float64(time.Second))}
	}
	return nil
}

// Change is one entry of the change stream pipelines read.
type Change struct {
	Sequence        int64  `json:"sequence"`
	Table           string `json:"table"`
	Subject         string `json:"subject"`
	Op              string `json:"op"`
	LSN             string `json:"lsn"`
	Seq             int64  `json:"seq"`
	ContractVersion int32  `json:"contract_version"`
	RecordID        string `json:"record_id"`
	Record          []byte `json:"-"`
}

// ReadChanges returns up to limit changes of the stream after sequence
// after, in order.
func ReadChanges(ctx context.Context, target queryer, name string, after int64, limit int) ([]Change, error) {
	rows, err := target.Query(ctx, `SELECT id, source_table, subject, op, lsn, seq, contract_version, record_id, record::text
  FROM seam_cdc.outbox WHERE connector = $1 AND id > $2 ORDER BY id LIMIT $3`, name, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read the change stream of %s: %w", name, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var c Change
		var lsn int64
		var rec string
		err := r.Scan(&c.Sequence, &c.Table, &c.Subject, &c.Op, &lsn, &c.Seq, &c.ContractVersion, &c.RecordID, &rec)
		c.LSN, c.Record = lsnText(uint64(lsn)), []byte(rec)
		return c, err
	})
}

// Drop removes a source: its slot and publication at the source and its
// state in the target. The replica tables stay.
func Drop(ctx context.Context, target, source queryer, name string) error {
	slot := "seam_" + name
	if source != nil {
		if err := dropSlot(ctx, source, slot); err != nil {
			return fmt.Errorf("drop slot %s (stop the running source first): %w", slot, err)
		}
		if _, err := execQ(ctx, source, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{slot}.Sanitize()); err != nil {
			return fmt.Errorf("drop publication %s: %w", slot, err)
		}
		if _, err := execQ(ctx, source, "DELETE FROM "+heartbeatTable.ident()+" WHERE source = $1", name); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42P01" { // undefined_table: no heartbeat was ever written
				return fmt.Errorf("remove the heartbeat of %s: %w", name, err)
			}
		}
	}
	for _, q := range []string{
		"DELETE FROM seam_cdc.log WHERE connector = $1",
		"DELETE FROM seam_cdc.outbox WHERE connector = $1",
		"DELETE FROM seam_cdc.connectors WHERE name = $1",
	} {
		if _, err := execQ(ctx, target, q, name); err != nil {
			return fmt.Errorf("drop the state of source %s: %w", name, err)
		}
	}
	return nil
}

// slotReleaseWait is how long dropSlot waits for a slot to be released.
const slotReleaseWait = 10 * time.Second

// dropSlot drops the slot if it exists. A slot still active (SQLSTATE
// 55006) is tried again for up to slotReleaseWait: when a source has just
// stopped, the server's walsender for it can hold the slot a moment
// longer, until it sees the connection gone. A source still running keeps
// it past the wait, and the error says so.
func dropSlot(ctx context.Context, source queryer, slot string) error {
	deadline := time.Now().Add(slotReleaseWait)
	retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for {
		_, err := execQ(ctx, source, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", slot)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || time.Now().After(deadline) {
			return err
		}
		if retry.Wait(ctx) != nil {
			return err
		}
	}
}

// execQ runs a statement through a queryer.
func execQ(ctx context.Context, q queryer, sql string, args ...any) (int64, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	rows.Close()
	return rows.CommandTag().RowsAffected(), rows.Err()
}
