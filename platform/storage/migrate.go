package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// Migration is one schema version of one component ("registry", "idmap", "gate").
type Migration struct {
	Version  int
	Name     string
	SQLite   string // statements for SQLite
	Postgres string // statements for PostgreSQL
}

// migrationsTable records, per component, which versions are applied.
const migrationsTable = `CREATE TABLE IF NOT EXISTS seam_migrations (
	component  TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	name       TEXT    NOT NULL,
	applied_at TEXT    NOT NULL,
	PRIMARY KEY (component, version)
)`

// Migrate applies, in one transaction per version, the migrations of component not yet
// applied, recording them in a seam_migrations(component, version, name, applied_at) table.
// Idempotent, and safe when two processes start at once (PostgreSQL: pg_advisory_xact_lock;
// SQLite: BEGIN IMMEDIATE).
//
// Versions must be positive and strictly increasing. A version already
// recorded under another name is an error: the binary and the database
// disagree about the schema, and guessing would corrupt data.
func (db *DB) Migrate(ctx context.Context, component string, migrations []Migration) error {
	if component == "" {
		return errors.New("storage: migrate: empty component name")
	}
	prev := 0
	for i, m := range migrations {
		if m.Version <= prev {
			return fmt.Errorf("storage: migrate %s: migrations[%d] has version %d, want versions positive and strictly increasing (previous %d)", component, i, m.Version, prev)
		}
		prev = m.Version
		if m.statements(db.Dialect) == "" {
			return fmt.Errorf("storage: migrate %s: version %d (%s) has no %s statements", component, m.Version, m.Name, db.Dialect)
		}
	}
	for _, m := range migrations {
		if err := db.InTx(ctx, func(tx *sql.Tx) error { return db.applyOne(ctx, tx, component, m) }); err != nil {
			return fmt.Errorf("storage: migrate %s to version %d (%s): %w", component, m.Version, m.Name, err)
		}
	}
	return nil
}

func (m Migration) statements(d Dialect) string {
	if d == Postgres {
		return m.Postgres
	}
	return m.SQLite
}

// applyOne applies m unless it is recorded already. On SQLite the
// transaction began IMMEDIATE, so it holds the write lock; on PostgreSQL the
// advisory lock serialises migrators of every component before the
// bookkeeping table is even created (CREATE TABLE IF NOT EXISTS races otherwise).
func (db *DB) applyOne(ctx context.Context, tx *sql.Tx, component string, m Migration) error {
	if db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey()); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, migrationsTable); err != nil {
		return fmt.Errorf("create seam_migrations: %w", err)
	}
	var name string
	err := tx.QueryRowContext(ctx,
		"SELECT name FROM seam_migrations WHERE component = $1 AND version = $2", component, m.Version).Scan(&name)
	switch {
	case err == nil:
		if name != m.Name {
			return fmt.Errorf("database records version %d as %q, this binary calls it %q; run the binary that matches the database", m.Version, name, m.Name)
		}
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("read seam_migrations: %w", err)
	}
	if _, err := tx.ExecContext(ctx, m.statements(db.Dialect)); err != nil {
		return fmt.Errorf("apply statements: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		"INSERT INTO seam_migrations (component, version, name, applied_at) VALUES ($1, $2, $3, $4)",
		component, m.Version, m.Name, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("record in seam_migrations: %w", err)
	}
	return nil
}

// migrationLockKey is the advisory lock id all migrators share.
func migrationLockKey() int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("seam_migrations"))
	return int64(h.Sum64())
}
