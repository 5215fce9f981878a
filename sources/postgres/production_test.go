package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seamdata/seam/platform/telemetry"
	"github.com/seamdata/seam/sources/postgres"
)

// holdsNothing checks that, with its snapshot read, a source keeps no
// transaction open at the source database and no temporary slot: no
// backend of the database is idle in transaction, and status says so.
func holdsNothing(t testing.TB, e *env, name string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "no transaction held at the source after the snapshot", 10*time.Second, func() (bool, string) {
		var idle int
		var who string
		if err := e.src.QueryRow(ctx, `SELECT count(*), coalesce(string_agg(application_name || ' ' || coalesce(state, '') || ' ' || left(query, 60), '; '), '')
  FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`).Scan(&idle, &who); err != nil {
			t.Fatal(err)
		}
		if idle > 0 {
			return false, who
		}
		st, err := postgres.ReadStatus(ctx, e.tgt, e.src, name)
		if err != nil {
			t.Fatal(err)
		}
		if st.OpenTransaction != nil {
			return false, "status says the source holds a transaction open"
		}
		for _, sl := range st.Slots {
			if sl.Temporary || strings.HasSuffix(sl.Name, "_resume") {
				return false, "temporary slot " + sl.Name + " is still there"
			}
		}
		return true, ""
	})
}

// deadTuples counts the dead row versions of a source table.
func deadTuples(t testing.TB, e *env, table string) int64 {
	t.Helper()
	var n int64
	if err := e.src.QueryRow(context.Background(), "SELECT dead_tuple_count FROM pgstattuple($1)", table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// expectVacuumed deletes every nth payment, waits for the replica to
// converge and checks that VACUUM then leaves no dead rows in payments,
// as it does only when the source holds no transaction or slot that
// still sees them. It needs the pgstattuple extension.
func expectVacuumed(t *testing.T, e *env, nth int, when string) {
	t.Helper()
	e.exec(e.src, fmt.Sprintf("DELETE FROM payments WHERE id %% %d = 0", nth))
	converged(t, e, "replica")
	e.exec(e.src, "VACUUM payments")
	if n := deadTuples(t, e, "payments"); n != 0 {
		t.Fatalf("VACUUM left %d dead rows in payments%s; the source still holds a transaction or slot that sees them", n, when)
	}
}

// Once its snapshot is read the source holds no transaction at the
// source: VACUUM removes the rows deleted after the snapshot. While the
// snapshot is read, status and the metric say a transaction is open, and
// the metric falls back to 0 when it is read.
func TestSnapshotLeavesNoTransactionOpen(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 3000)
	e.exec(e.src, "CREATE EXTENSION IF NOT EXISTS pgstattuple")
	cfg := e.config("vacuum", "payments", "accounts")
	cfg.SnapshotWorkers = 2
	metrics := withMetrics(t, &cfg)
	openSeconds := func() (float64, string) {
		lines := metrics()["seam_cdc_source_transaction_open_seconds"]
		if len(lines) == 0 {
			return -1, "no seam_cdc_source_transaction_open_seconds"
		}
		f := strings.Fields(lines[0])
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%s: %v", lines[0], err)
		}
		return v, lines[0]
	}
	var metricOpen float64
	seenOpen := make(chan *postgres.OpenTransaction, 1)
	// Progress is called from the snapshot's workers: connections of its
	// own, one call at a time.
	var mu sync.Mutex
	tgt, src := connect(t, e.target), connect(t, e.source)
	cfg.Progress = func(p postgres.SnapshotProgress) {
		if p.RowsDone == 0 || p.RowsDone >= p.RowsTotal {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		st, err := postgres.ReadStatus(context.Background(), tgt, src, "vacuum")
		if err == nil && st.OpenTransaction != nil {
			select {
			case seenOpen <- st.OpenTransaction:
			default:
			}
		}
		if v, _ := openSeconds(); v > metricOpen {
			metricOpen = v
		}
	}
	e.startReady(cfg)
	select {
	case ot := <-seenOpen:
		if ot.Backends < 1 || ot.Since.IsZero() {
			t.Errorf("status during the snapshot: %+v, want the snapshot's transactions named", ot)
		}
	default:
		t.Error("status never said the source held a transaction open while its snapshot was read")
	}
	mu.Lock()
	sawMetric := metricOpen
	mu.Unlock()
	if sawMetric <= 0 {
		t.Error("seam_cdc_source_transaction_open_seconds never rose above 0 while the snapshot was read")
	}
	holdsNothing(t, e, "vacuum")
	eventually(t, "the open-transaction metric back at 0", 10*time.Second, func() (bool, string) {
		v, line := openSeconds()
		return v == 0, line
	})

	expectVacuumed(t, e, 3, "")
}

// A caught-up source confirms the server's WAL position from keepalives:
// WAL written for other tables does not pile up behind its slot, with no
// heartbeat. Run again with a heartbeat, the source writes its row into
// the publication; a drop removes slot, publication and heartbeat.
func TestCaughtUpSourceKeepsWALBounded(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 50)
	e.exec(e.src, "CREATE TABLE noise (id bigserial PRIMARY KEY, pad text)")
	cfg := e.config("walbound", "payments", "accounts")
	metrics := withMetrics(t, &cfg)
	r := e.startReady(cfg)
	ctx := context.Background()

	const written, bound = 200 << 20, 64 << 20
	var start int64
	if err := e.src.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&start); err != nil {
		t.Fatal(err)
	}
	for {
		e.exec(e.src, "INSERT INTO noise (pad) SELECT repeat(md5(i::text), 32) FROM generate_series(1, 20000) i")
		var now int64
		if err := e.src.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&now); err != nil {
			t.Fatal(err)
		}
		if now-start >= written {
			t.Logf("wrote %d MiB of WAL to an unrelated table", (now-start)>>20)
			break
		}
	}
	began := time.Now()
	var last int64
	eventually(t, "the slot's retained WAL under 64 MiB", 30*time.Second, func() (bool, string) {
		st, err := postgres.ReadStatus(ctx, e.tgt, e.src, "walbound")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Slots) != 1 {
			return false, fmt.Sprintf("slots %+v, want the source's one", st.Slots)
		}
		last = st.Slots[0].RetainedBytes
		return last < bound, "retained " + strconv.FormatInt(last>>20, 10) + " MiB, lag " + strconv.FormatInt(st.LagBytes>>20, 10) + " MiB"
	})
	t.Logf("retained WAL %d KiB after %s", last>>10, time.Since(began).Round(100*time.Millisecond))

	// The metric says the same, and the alert rules name what the source
	// exports.
	eventually(t, "the retained-WAL metric under 64 MiB", 10*time.Second, func() (bool, string) {
		for _, line := range metrics()["seam_cdc_slot_retained_wal_bytes"] {
			if strings.Contains(line, `slot="seam_walbound"`) {
				f := strings.Fields(line)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				return err == nil && v < bound, line
			}
		}
		return false, "no seam_cdc_slot_retained_wal_bytes{slot=\"seam_walbound\"}"
	})
	checkCDCRules(t, metrics())

	// The heartbeat: a row of the publication, written every interval.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	cfg.HeartbeatInterval = time.Second
	r = e.start(cfg)
	r.waitReady(t)
	var published bool
	if err := e.src.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'seam_walbound' AND tablename = 'seam_heartbeat')").Scan(&published); err != nil || !published {
		t.Fatalf("seam_heartbeat in the publication: %v (%v)", published, err)
	}
	eventually(t, "a fresh heartbeat", 10*time.Second, func() (bool, string) {
		var age float64
		if err := e.src.QueryRow(ctx, "SELECT extract(epoch FROM now() - beat) FROM seam_heartbeat WHERE source = 'walbound'").Scan(&age); err != nil {
			return false, err.Error()
		}
		return age < 3, fmt.Sprintf("last beat %.1fs ago", age)
	})

	// The replicated table still streams, and a change to it lands.
	e.exec(e.src, "UPDATE payments SET memo = 'after the noise' WHERE id = 7")
	converged(t, e, "replica")

	// Stop, then drop: the slot, the publication and the heartbeat go.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Drop(ctx, e.tgt, e.src, "walbound"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := e.src.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'seam_walbound%')
     + (SELECT count(*) FROM pg_publication WHERE pubname = 'seam_walbound') + (SELECT count(*) FROM seam_heartbeat WHERE source = 'walbound')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after drop %d slots, publications or heartbeats of walbound are left (%v)", left, err)
	}
}

// withMetrics gives cfg a meter exported in Prometheus' text format and
// returns a scrape: metric name → its sample lines.
func withMetrics(t testing.TB, cfg *postgres.Config) func() map[string][]string {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "seam-source-postgres-test", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	cfg.Meter = tel.Meter("github.com/seamdata/seam/sources/postgres")
	return func() map[string][]string {
		rec := httptest.NewRecorder()
		tel.Metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		out := map[string][]string{}
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, _, _ := strings.Cut(line, "{")
			name, _, _ = strings.Cut(name, " ")
			out[name] = append(out[name], line)
		}
		return out
	}
}

// checkCDCRules checks the seam-cdc group of the alert rules against a
// scrape of a running source: every metric a rule names is exported, with
// every label it groups by.
func checkCDCRules(t testing.TB, scraped map[string][]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "observability", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	_, group, ok := strings.Cut(string(raw), "- name: seam-cdc\n")
	if !ok {
		t.Fatal("rules.yml has no seam-cdc group")
	}
	if i := strings.Index(group, "\n  - name: "); i >= 0 {
		group = group[:i]
	}
	exprs := regexp.MustCompile(`(?m)^\s+expr: (.+)$`).FindAllStringSubmatch(group, -1)
	if len(exprs) < 2 {
		t.Fatalf("the seam-cdc group has %d rules, want the retained-WAL and open-transaction alerts", len(exprs))
	}
	for _, m := range exprs {
		expr := m[1]
		for _, name := range regexp.MustCompile(`seam_cdc_[a-z_]+`).FindAllString(expr, -1) {
			lines := scraped[name]
			if len(lines) == 0 {
				t.Errorf("rule %q: metric %s is not exported by the source", expr, name)
				continue
			}
			for _, by := range regexp.MustCompile(`by \(([a-z_, ]+)\)`).FindAllStringSubmatch(expr, -1) {
				for _, label := range strings.Split(by[1], ",") {
					if !strings.Contains(lines[0], strings.TrimSpace(label)+"=") {
						t.Errorf("rule %q: metric %s has no label %s (%s)", expr, name, label, lines[0])
					}
				}
			}
		}
	}
}

// A snapshot longer than SnapshotTransactionLimit is read in passes, each
// in a fresh exported snapshot: no transaction at the source lives much
// longer than the limit, and the replica, the change stream and the
// counts stay exact under writes, as after a restart.
func TestSnapshotTransactionsEndAtTheirLimit(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 6000) // payments: 12 chunks of 500; accounts: 2
	w := startWriter(e, 6000, 3)
	cfg := e.config("passes", "payments", "accounts")
	cfg.SnapshotWorkers = 2
	cfg.SnapshotTransactionLimit = 300 * time.Millisecond
	var mu sync.Mutex
	var oldest time.Duration
	src := connect(t, e.source)
	cfg.Progress = func(p postgres.SnapshotProgress) {
		if p.RowsDone > p.RowsTotal {
			t.Errorf("snapshot progress over 100%%: %d of %d rows", p.RowsDone, p.RowsTotal)
		}
		mu.Lock()
		defer mu.Unlock()
		// The workers' transactions: client backends of the source (its
		// replication connections are walsenders).
		var age float64
		err := src.QueryRow(context.Background(), `SELECT coalesce(extract(epoch FROM max(now() - xact_start)), 0)::float8 FROM pg_stat_activity
 WHERE application_name = 'seam_passes' AND backend_type = 'client backend' AND xact_start IS NOT NULL AND pid <> pg_backend_pid()`).Scan(&age)
		if err == nil && time.Duration(age*float64(time.Second)) > oldest {
			oldest = time.Duration(age * float64(time.Second))
		}
	}
	began := time.Now()
	e.startReady(cfg)
	took := time.Since(began)
	w.finish(t)
	converged(t, e, "replica")
	noDuplicates(t, e, "passes")
	snapshotReadsOnce(t, e, "passes")
	holdsNothing(t, e, "passes")

	// Rows read in each pass carry that pass's snapshot position.
	var passes int
	if err := e.tgt.QueryRow(context.Background(), "SELECT count(DISTINCT lsn) FROM seam_cdc.outbox WHERE connector = 'passes' AND op = 'r'").Scan(&passes); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("snapshot of 6,600 rows under writes in %s, in %d exported snapshots; oldest transaction seen %s", took.Round(10*time.Millisecond), passes, oldest.Round(time.Millisecond))
	if passes < 2 {
		t.Errorf("the snapshot was read in %d exported snapshot(s) in %s, want more with a limit of %s", passes, took, cfg.SnapshotTransactionLimit)
	}
	// A worker ends its transaction at the first chunk boundary past the
	// limit: one chunk (500 rows, three gate calls; each worker reads
	// about seven) beyond it, far from the whole read.
	if oldest >= took*2/3 {
		t.Errorf("a snapshot transaction at the source was %s old in a snapshot of %s, want about the limit (%s) plus one chunk", oldest, took, cfg.SnapshotTransactionLimit)
	}
	for _, table := range []string{"public.payments", "public.accounts"} {
		ts := tableStatus(t, e, "passes", table)
		published := outboxCount(t, e, "passes", table, "op = 'r'")
		if ts.RowsDone != ts.RowsTotal || ts.RowsDone != published {
			t.Errorf("%s: snapshot %d of %d rows when done, and %d published; want all of its total, and as many as published", table, ts.RowsDone, ts.RowsTotal, published)
		}
	}
}
