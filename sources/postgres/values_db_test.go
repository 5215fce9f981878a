package postgres_test

import (
	"context"
	"testing"
	"time"
)

// typesDDL is a table with a column of every kind the issue lists, and
// rows at the edges of each type.
const typesDDL = `
CREATE TABLE types (
	id   int PRIMARY KEY,
	r    real,
	d    double precision,
	n    numeric,
	n38  numeric(38,10),
	z    numeric(20,10),
	b    bigint,
	ts   timestamptz,
	j    jsonb,
	u    uuid,
	arr  text[],
	bin  bytea,
	t    text
);
INSERT INTO types VALUES
 (1, 3.4028235e38, -0, 0.0000000000, 1234567890123456789012345678.0123456789, 0, 9223372036854775807,
  '2026-03-01 12:34:56.789012+00', '{"a": [1, 2.50, null], "b": "x\"y"}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{a,"b c",NULL}', '\x00ff', E'line\nbreak'),
 (2, -3.4028235e38, 1.7976931348623157e308, -0.5, -0.0000000001, 0.0000000000, -9223372036854775808,
  '1970-01-01 00:00:00+00', '[]', '00000000-0000-0000-0000-000000000000', '{}', '', ''),
 (3, 1.1754944e-38, -2.2250738585072014e-308, 12345678901234567890.123456789, 9999999999999999999999999999.9999999999, 1.5, 9223372036854775806,
  '2000-02-29 23:59:59.999999+00', '{"n": 12345678901234567890}', NULL, '{"{x}"}', '\x5c', 'ü'),
 (4, 1e-45, 5e-324, -0.0, 0, -0.0000000001, -9223372036854775807,
  '2038-01-19 03:14:08+00', 'null', NULL, NULL, NULL, NULL),
 (5, -0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);`

var typeCols = []string{"id", "r", "d", "n", "n38", "z", "b", "ts", "j", "u", "arr", "bin", "t"}

// Every value of the type table reaches the replica exactly, through the
// snapshot and through the stream; values JSON cannot carry (NaN,
// ±Infinity) are quarantined by name, never changed.
func TestTypesRoundTrip(t *testing.T) {
	t.Parallel()
	sm := startSeam(t)
	e := newEnv(t, sm)
	e.exec(e.src, typesDDL)
	r := e.start(e.config("types", "types"))
	r.waitReady(t)
	same := func() (bool, string) { return sameRows(t, e, "types", "replica.types", typeCols) }
	eventually(t, "the snapshot of the type table", 30*time.Second, same)

	// The same rows again through the stream.
	e.exec(e.src, "INSERT INTO types SELECT id + 100, r, d, n, n38, z, b, ts, j, u, arr, bin, t FROM types WHERE id <= 6")
	eventually(t, "the streamed copy of the type table", 30*time.Second, same)

	// NaN and infinities have no JSON form: quarantined, not changed.
	e.exec(e.src, `INSERT INTO types (id, r, d, n) VALUES (201, 'NaN', NULL, NULL), (202, NULL, 'Infinity', NULL), (203, NULL, '-Infinity', NULL), (204, NULL, NULL, 'NaN')`)
	e.exec(e.src, "INSERT INTO types (id, t) VALUES (205, 'after')")
	eventually(t, "the row after the NaNs", 30*time.Second, func() (bool, string) {
		var n int
		_ = e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM replica.types WHERE id = 205").Scan(&n)
		return n == 1, "row 205 not in the replica"
	})
	var ids []int
	rows, err := e.tgt.Query(context.Background(), "SELECT id FROM replica.types WHERE id BETWEEN 201 AND 204")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) != 0 {
		t.Fatalf("rows %v with NaN or an infinity reached the replica; want them quarantined", ids)
	}
	if q := tableStatus(t, e, "types", "public.types").Quarantined; q != 4 {
		t.Fatalf("%d changes quarantined, want the 4 with NaN or an infinity", q)
	}
}
