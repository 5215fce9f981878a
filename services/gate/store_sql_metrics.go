package gate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seamdata/seam/platform/storage"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// What the gate's gauges read from the store at each scrape, so every
// replica reports the same figures and a restart loses none of them.

// sealedUnit is one sealed unit of a subject as the gauges see it.
type sealedUnit struct {
	pid       int64
	part      string
	amendment int32
	verdict   gatev1.PartitionVerdict
	// sealedAt (Unix nanoseconds) changes when the unit is judged again,
	// so it tells a cached reading of the unit's figures from a stale one.
	sealedAt int64
}

// openAlertCount is how many alerts of a subject and severity are OPEN.
type openAlertCount struct {
	subject  string
	severity gatev1.Severity
	count    int64
}

func (s *sqlStore) LatestSealed(ctx context.Context, subject string, n int) ([]sealedUnit, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT u.pid, p.part, u.amendment, u.verdict, u.sealed_at
FROM gate_parts p JOIN gate_units u ON u.pid = p.pid
WHERE p.subject = $1 AND u.status = $2 ORDER BY p.part DESC, u.amendment DESC LIMIT $3`,
		subject, int32(gatev1.PartitionStatus_PARTITION_STATUS_SEALED), n)
	return storage.ScanRows(rows, err, "read the latest sealed partitions of "+subject, func(row storage.Row) (sealedUnit, error) {
		var u sealedUnit
		var verdict int32
		err := row.Scan(&u.pid, &u.part, &u.amendment, &verdict, &u.sealedAt)
		u.verdict = gatev1.PartitionVerdict(verdict)
		return u, err
	})
}

func (s *sqlStore) UnitMatchRates(ctx context.Context, pid int64, amendment int32) (map[string]float64, error) {
	var raw []byte
	if err := s.db.SQL.QueryRowContext(ctx, `SELECT figures FROM gate_units WHERE pid = $1 AND amendment = $2`, pid, amendment).Scan(&raw); err != nil {
		return nil, fmt.Errorf("read the figures of partition %d amendment %d: %w", pid, amendment, err)
	}
	var f unitFigures
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("decode the figures of partition %d amendment %d: %w", pid, amendment, err)
		}
	}
	return matchRates(f), nil
}

func (s *sqlStore) OpenAlertCounts(ctx context.Context) ([]openAlertCount, error) {
	rows, err := s.db.SQL.QueryContext(ctx, `SELECT subject, severity, COUNT(*) FROM gate_alerts WHERE state = $1 GROUP BY subject, severity`,
		int32(gatev1.AlertState_ALERT_STATE_OPEN))
	return storage.ScanRows(rows, err, "count the open alerts", func(row storage.Row) (openAlertCount, error) {
		var c openAlertCount
		var sev int32
		err := row.Scan(&c.subject, &sev, &c.count)
		c.severity = gatev1.Severity(sev)
		return c, err
	})
}
