package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// WithPartitionOf returns cfg naming its stream partitions by f, so a
// test crosses a commit day without waiting for one.
func WithPartitionOf(cfg Config, f func(time.Time) string) Config {
	cfg.partitionOf = f
	return cfg
}

// DeriveContract is the contract and canonical model the source derives
// for a table of the database at url, so a test can register a version
// of its own (with checks) ahead of the source's first start.
func DeriveContract(ctx context.Context, url, subject, owner, table string) (*contractv1.Contract, *contractv1.CanonicalModel, error) {
	name, err := ParseTableName(table)
	if err != nil {
		return nil, nil, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(ctx)
	shape, err := readShape(ctx, tx, name)
	if err != nil {
		return nil, nil, err
	}
	c := deriveContract(subject, owner, name, shape)
	return c, deriveCanonical(c), nil
}
