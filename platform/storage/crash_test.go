package storage_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/seamdata/seam/platform/storage"
)

// crashChildEnv, when set to a SQLite URL, turns the test binary into the
// writer that TestSQLiteAcknowledgedWritesSurviveKill kills.
const crashChildEnv = "SEAM_STORAGE_CRASH_CHILD_URL"

var crashMigrations = []storage.Migration{{
	Version:  1,
	Name:     "acks",
	SQLite:   "CREATE TABLE acks (id INTEGER PRIMARY KEY, writer INTEGER NOT NULL, payload TEXT NOT NULL)",
	Postgres: "CREATE TABLE acks (id BIGINT PRIMARY KEY, writer BIGINT NOT NULL, payload TEXT NOT NULL)",
}}

// crashChild writes rows from several goroutines and prints "ack ID" for
// each only after its transaction committed, until it is killed.
func crashChild(url string) {
	ctx := context.Background()
	db, err := storage.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := db.Migrate(ctx, "crash", crashMigrations); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	payload := strings.Repeat("x", 2000)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := int64(w)*1_000_000_000 + int64(i)
				err := db.InTx(ctx, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, "INSERT INTO acks (id, writer, payload) VALUES ($1, $2, $3)", id, w, payload)
					return err
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				// Unbuffered write: once the parent reads it, the commit returned.
				fmt.Fprintf(os.Stdout, "ack %d\n", id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestSQLiteAcknowledgedWritesSurviveKill(t *testing.T) {
	if url := os.Getenv(crashChildEnv); url != "" {
		crashChild(url)
		return
	}
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteAcknowledgedWritesSurviveKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+url)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start writer process: %v", err)
	}
	var acked []int64
	scanner := bufio.NewScanner(stdout)
	killed := false
	for scanner.Scan() {
		idText, ok := strings.CutPrefix(scanner.Text(), "ack ")
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			t.Fatalf("writer printed %q: %v", scanner.Text(), err)
		}
		acked = append(acked, id)
		// Kill mid-stream, while writers are inside transactions.
		if len(acked) == 300 && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill writer: %v", err)
			}
			killed = true
		}
	}
	waitErr := cmd.Wait()
	if !killed {
		t.Fatalf("writer exited after %d acks before it was killed: %v", len(acked), waitErr)
	}

	db := open(t, url)
	present := make(map[int64]bool)
	rows, err := db.SQL.Query("SELECT id FROM acks")
	if err != nil {
		t.Fatalf("read back after kill: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		present[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	missing := 0
	for _, id := range acked {
		if !present[id] {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged row %d is missing after kill -9", id)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged rows lost after kill -9, want 0", missing, len(acked))
	}
	if len(present) < len(acked) {
		t.Errorf("rows present = %d, want at least the %d acknowledged", len(present), len(acked))
	}
}
