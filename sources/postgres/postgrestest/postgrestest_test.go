package postgrestest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

var shared Shared

func TestMain(m *testing.M) { os.Exit(Main(m, &shared)) }

// The server the CDC tests run on decodes logical replication.
func TestServerIsLogical(t *testing.T) {
	s := shared.Require(t)
	ctx := context.Background()
	url, err := s.CreateDB(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var level string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level != "logical" {
		t.Fatalf("wal_level = %q, want logical", level)
	}
}
