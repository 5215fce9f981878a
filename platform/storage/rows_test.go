package storage_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// TestScanRows: every row comes back in order, and an error of the query
// or of a row names what was read.
func TestScanRows(t *testing.T) {
	t.Parallel()
	db := open(t, storagetest.SQLiteURL(t))
	ctx := context.Background()
	rows, err := db.SQL.QueryContext(ctx, `SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3`)
	got, err := storage.ScanRows(rows, err, "count", func(row storage.Row) (int, error) {
		var n int
		err := row.Scan(&n)
		return n, err
	})
	if err != nil || !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("ScanRows = %v, %v; want [1 2 3], nil", got, err)
	}

	rows, err = db.SQL.QueryContext(ctx, `SELECT no_such_column FROM no_such_table`)
	if _, err := storage.ScanRows(rows, err, "list nothing", func(storage.Row) (int, error) { return 0, nil }); err == nil || !strings.HasPrefix(err.Error(), "list nothing: ") {
		t.Errorf("query error = %v, want it to start with %q", err, "list nothing: ")
	}

	bad := errors.New("bad row")
	rows, err = db.SQL.QueryContext(ctx, `SELECT 1`)
	if _, err := storage.ScanRows(rows, err, "read rows", func(storage.Row) (int, error) { return 0, bad }); !errors.Is(err, bad) || !strings.HasPrefix(err.Error(), "read rows: ") {
		t.Errorf("row error = %v, want %v wrapped as %q", err, bad, "read rows: …")
	}
}
