// Package storagetest gives tests a fresh store of each kind, so one
// conformance suite runs against both the embedded SQLite file and PostgreSQL.
package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the environment variable holding the PostgreSQL URL
// tests create their databases on.
const PostgresEnv = "SEAM_TEST_POSTGRES_URL"

// PostgresURL returns the URL of a fresh, empty PostgreSQL database created for this test
// (CREATE DATABASE seam_test_<random>, dropped in t.Cleanup), from SEAM_TEST_POSTGRES_URL;
// when that variable is unset it calls t.Skip("PostgreSQL tests skip: set SEAM_TEST_POSTGRES_URL=postgres://… to run them").
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip("PostgreSQL tests skip: set " + PostgresEnv + "=postgres://… to run them")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s=%q: %v", PostgresEnv, base, err)
	}
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatalf("random database name: %v", err)
	}
	name := "seam_test_" + hex.EncodeToString(suffix[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop test database %s: connect: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		// FORCE ends listener connections a test may still be closing.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// SQLiteURL returns a sqlite URL in t.TempDir().
func SQLiteURL(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "seam.db")
}

// Each runs fn once per store kind as subtests "sqlite" and "postgres" (the latter skipping
// without the variable) — how a conformance suite runs on both.
func Each(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, PostgresURL(t)) })
}

// EachParallel is Each for a test that may run beside other tests: it
// marks t parallel, and each store kind's subtest too.
func EachParallel(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Parallel()
	Each(t, func(t *testing.T, url string) {
		t.Parallel()
		fn(t, url)
	})
}
