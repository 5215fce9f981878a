package storage

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seamdata/seam/platform/telemetry/telemetrytest"
)

// TestTransactionsAreMeasured: every InTx is recorded with its outcome,
// and a failed one as failed, on the store's dialect.
func TestTransactionsAreMeasured(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }() // after the checks; Close is tested in storage_test
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(ctx) }()
	db.metrics = newTxMetrics(mp, db.Dialect)

	for range 3 {
		if err := db.InTx(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, "SELECT 1"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	if err := db.InTx(ctx, func(*sql.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("InTx = %v, want boom", err)
	}

	counts := map[string]uint64{}
	h, _ := telemetrytest.Metric(t, reader, "seam.store.transaction.duration").(metricdata.Histogram[float64])
	for _, dp := range h.DataPoints {
		outcome, _ := dp.Attributes.Value("outcome")
		system, _ := dp.Attributes.Value("db.system.name")
		counts[system.AsString()+"/"+outcome.AsString()] += dp.Count
	}
	if counts["sqlite/committed"] != 3 || counts["sqlite/failed"] != 1 || len(counts) != 2 {
		t.Errorf("transactions measured = %v, want sqlite/committed 3 and sqlite/failed 1", counts)
	}
}
