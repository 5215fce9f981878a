package storage

import (
	"database/sql"
	"fmt"
)

// Row is a row or rows being read: *sql.Row and *sql.Rows both are one.
type Row = interface{ Scan(dest ...any) error }

// ScanRows reads every row of rows with scan and closes rows. It takes the
// query's error too, so a caller passes QueryContext's results straight on;
// what says what was read, in the errors of the query, of each row and of
// the end of the rows.
func ScanRows[T any](rows *sql.Rows, err error, what string, scan func(row Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
