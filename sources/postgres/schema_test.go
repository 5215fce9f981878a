package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/sources/postgres"
)

// tableStatus reads one table's status.
func tableStatus(t testing.TB, e *env, name, table string) postgres.TableStatus {
	t.Helper()
	st, err := postgres.ReadStatus(context.Background(), e.tgt, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range st.Tables {
		if ts.Table == table {
			return ts
		}
	}
	t.Fatalf("no table %s in the status of %s", table, name)
	return postgres.TableStatus{}
}

// haltEvents lists the UNANNOUNCED_CHANGE events of a subject.
func haltEvents(t testing.TB, e *env, subject string) []*registryv1.Event {
	t.Helper()
	resp, err := e.seam.registry.ListEvents(context.Background(), &registryv1.ListEventsRequest{Subjects: []string{subject},
		Types: []registryv1.EventType{registryv1.EventType_EVENT_TYPE_UNANNOUNCED_CHANGE}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetEvents()
}

// registerMigration registers the migration version of a halted table:
// the contract the source proposes, edited by fix, with the notice waived
// by an admin as an operator would during an incident.
func registerMigration(t testing.TB, e *env, h *postgres.Halt, fix func(*contractv1.Contract)) int32 {
	t.Helper()
	var c contractv1.Contract
	if err := protojson.Unmarshal(h.Proposed, &c); err != nil {
		t.Fatalf("the halt's proposed contract: %v", err)
	}
	if fix != nil {
		fix(&c)
	}
	resp, err := e.seam.registry.RegisterContract(context.Background(), &registryv1.RegisterContractRequest{Contract: &c,
		Override: &registryv1.NoticeOverride{Reason: "migration of a source schema change (test)"}})
	if err != nil {
		t.Fatalf("register the migration version: %v", err)
	}
	if resp.GetVersion().GetStatus() != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		t.Fatalf("migration version %d is %s, want ACTIVE", resp.GetVersion().GetVersion(), resp.GetVersion().GetStatus())
	}
	return resp.GetVersion().GetVersion()
}

func without(cols []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(cols), func(c string) bool { return c == drop })
}

// An added nullable column flows through by itself; a dropped column
// halts its table while the other table goes on, raises the alert, and
// after a migration version the held changes apply in order; a retyped
// column does the same the other way round.
func TestSchemaChangesAdditiveFlowBreakingHalt(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 300)
	e.startReady(e.config("schema", "payments", "accounts"))
	db := dbName(e.source)
	paySubject, accSubject := "pg."+db+".public.payments", "pg."+db+".public.accounts"
	converged(t, e, "replica")

	// 1. Additive: a new nullable column.
	e.exec(e.src, "ALTER TABLE payments ADD COLUMN channel text")
	e.exec(e.src, "INSERT INTO payments VALUES (9001, 'FR01', 5.00, 'EUR', 'with channel', now(), false, 0.5, 'web')")
	e.exec(e.src, "UPDATE payments SET channel = 'app' WHERE id <= 10")
	withChannel := append(slices.Clone(paymentCols), "channel")
	eventually(t, "the new column reaches the replica", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "payments", "replica.payments", withChannel)
	})
	active, err := e.seam.registry.GetContract(context.Background(), &registryv1.GetContractRequest{Subject: paySubject})
	if err != nil {
		t.Fatal(err)
	}
	if v := active.GetVersion(); v.GetVersion() != 2 || v.GetBreaking() {
		t.Fatalf("after the added column %s is at version %d (breaking %v), want version 2, additive", paySubject, v.GetVersion(), v.GetBreaking())
	}
	if ts := tableStatus(t, e, "schema", "public.payments"); ts.Phase != "stream" || ts.Halt != nil {
		t.Fatalf("payments after an additive change: phase %s halt %+v, want streaming", ts.Phase, ts.Halt)
	}

	// 2. Breaking: a dropped column halts payments; accounts goes on.
	e.exec(e.src, "ALTER TABLE payments DROP COLUMN memo")
	for i := 1; i <= 5; i++ {
		e.exec(e.src, "UPDATE payments SET amount = $1 WHERE id = 7", i) // held, applied in this order
	}
	e.exec(e.src, "INSERT INTO payments VALUES (9002, 'FR02', 6.00, 'EUR', now(), true, NULL, 'web')")
	e.exec(e.src, "DELETE FROM payments WHERE id = 8")
	e.exec(e.src, "UPDATE accounts SET holder = 'moved on' WHERE ref = 'ACC-000001'")
	h := haltsHolding(t, e, "schema", "payments", 7, "accounts", accountCols)
	if h.Reason != "SCHEMA_CHANGE" || !strings.Contains(strings.Join(h.Changes, ";"), "FIELD_REMOVED") {
		t.Fatalf("halt = %+v, want SCHEMA_CHANGE naming FIELD_REMOVED", h)
	}
	evs := haltEvents(t, e, paySubject)
	if len(evs) != 1 || evs[0].GetSequence() != h.AlertSequence || !strings.Contains(evs[0].GetMessage(), "memo") {
		t.Fatalf("UNANNOUNCED_CHANGE events of %s = %v, want one naming memo (sequence %d)", paySubject, evs, h.AlertSequence)
	}
	var n int
	if err := e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM replica.payments WHERE id = 9002").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the replica holds %d rows of id 9002 (%v); a halted table applies nothing", n, err)
	}
	time.Sleep(300 * time.Millisecond)
	if evs := haltEvents(t, e, paySubject); len(evs) != 1 {
		t.Fatalf("the halt was announced %d times, want once", len(evs))
	}

	// The migration version: the proposal as it is (memo no longer
	// produced). The held changes then apply in log order.
	registerMigration(t, e, h, nil)
	eventually(t, "payments resumes and matches the source", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "payments", "replica.payments", without(withChannel, "memo"))
	})
	amounts := column[string](t, e.tgt, `SELECT record->>'amount' FROM seam_cdc.outbox
 WHERE connector = 'schema' AND source_table = 'public.payments' AND record->>'id' = '7' AND op = 'u' AND lsn >= $1 ORDER BY id`, int64(h.AtLSN))
	if want := []string{"1.00", "2.00", "3.00", "4.00", "5.00"}; !slices.Equal(amounts, want) {
		t.Fatalf("held updates of payment 7 published as %v, want %v (log order)", amounts, want)
	}

	// 3. A retyped column halts accounts; payments goes on.
	e.exec(e.src, "ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(14,2)")
	e.exec(e.src, "UPDATE accounts SET balance = 12.25 WHERE ref = 'ACC-000002'")
	e.exec(e.src, "UPDATE payments SET settled = true WHERE id = 9")
	ah := haltsHolding(t, e, "schema", "accounts", 1, "payments", without(withChannel, "memo"))
	if !strings.Contains(strings.Join(ah.Changes, ";"), "FIELD_TYPE_CHANGED") || len(haltEvents(t, e, accSubject)) != 1 {
		t.Fatalf("accounts halt = %+v with %d events, want FIELD_TYPE_CHANGED announced once", ah, len(haltEvents(t, e, accSubject)))
	}
	// The proposal, as printed, casts the new DECIMAL back to the
	// canonical DOUBLE.
	registerMigration(t, e, ah, func(c *contractv1.Contract) {
		if m := c.GetMapping().GetFields()["balance"]; m.GetCast().GetTo() != contractv1.FieldType_FIELD_TYPE_DOUBLE {
			t.Fatalf("the proposal maps balance as %v, want a cast to the canonical DOUBLE", m)
		}
	})
	asFloat := []string{"ref", "holder", "balance::float8", "opened"}
	eventually(t, "accounts resumes and matches the source", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "accounts", "replica.accounts", asFloat)
	})
	if ts := tableStatus(t, e, "schema", "public.accounts"); ts.Phase != "stream" || ts.Held() != 0 {
		t.Fatalf("accounts after its migration: phase %s, %d held; want streaming, none held", ts.Phase, ts.Held())
	}
	raw, _ := json.Marshal(tableStatus(t, e, "schema", "public.payments"))
	t.Logf("payments status: %s", raw)
}

// A contained source's changes wait in the source, in order, instead of
// piling up in the gate's quarantine; release resumes them.
func TestContainmentHoldsChangesUntilRelease(t *testing.T) {
	t.Parallel()
	e := paymentsEnv(t, 200)
	e.startReady(e.config("contain", "payments", "accounts"))
	converged(t, e, "replica")
	subject := "pg." + dbName(e.source) + ".public.payments"
	ctx := context.Background()
	if _, err := e.seam.gate.Contain(ctx, &gatev1.ContainRequest{Subject: subject, Reason: "INC-3: bad amounts upstream"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the source's containment cache
	e.exec(e.src, "UPDATE payments SET amount = amount * 10 WHERE id <= 20")
	e.exec(e.src, "UPDATE accounts SET holder = 'still flowing' WHERE ref = 'ACC-000003'")
	eventually(t, "payments is held while contained", 20*time.Second, func() (bool, string) {
		ts := tableStatus(t, e, "contain", "public.payments")
		return ts.Phase == "halted" && ts.Halt.Reason == "CONTAINED" && ts.Held() == 20, fmt.Sprintf("phase %s, %d held", ts.Phase, ts.Held())
	})
	eventually(t, "accounts goes on", 20*time.Second, func() (bool, string) {
		return sameRows(t, e, "accounts", "replica.accounts", accountCols)
	})
	stats, err := e.seam.gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: subject}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.GetTotal() != 0 {
		t.Fatalf("the gate quarantined %d changes of the contained source, want 0 (held at the source)", stats.GetTotal())
	}
	if _, err := e.seam.gate.Release(ctx, &gatev1.ReleaseRequest{Subject: subject, Reason: "INC-3 fixed"}); err != nil {
		t.Fatal(err)
	}
	converged(t, e, "replica")
	if evs := haltEvents(t, e, subject); len(evs) != 0 {
		t.Fatalf("a containment raised %d UNANNOUNCED_CHANGE events, want none (the gate announces containment)", len(evs))
	}
}

// replicaEquals waits for replica.<table> to equal the source's table in
// cols; when says after what, for the failure.
func replicaEquals(t testing.TB, e *env, table, when string, cols []string) {
	t.Helper()
	eventually(t, table+" replica equals the source "+when, 30*time.Second, func() (bool, string) {
		return sameRows(t, e, table, "replica."+table, cols)
	})
}

// haltsHolding waits for public.<table> of source name to halt holding
// held changes while other goes on matching the source, and returns the
// halt.
func haltsHolding(t testing.TB, e *env, name, table string, held int64, other string, otherCols []string) *postgres.Halt {
	t.Helper()
	eventually(t, table+" halts", 30*time.Second, func() (bool, string) {
		ts := tableStatus(t, e, name, "public."+table)
		return ts.Phase == "halted" && ts.Held() == held && ts.Halt.AlertSequence > 0, fmt.Sprintf("phase %s, %d held, halt %+v", ts.Phase, ts.Held(), ts.Halt)
	})
	eventually(t, other+" goes on while "+table+" is halted", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, other, "replica."+other, otherCols)
	})
	return tableStatus(t, e, name, "public."+table).Halt
}

// tableHalts waits for a table to halt and returns its halt.
func tableHalts(t testing.TB, e *env, name, table string) *postgres.Halt {
	t.Helper()
	eventually(t, table+" halts", 30*time.Second, func() (bool, string) {
		ts := tableStatus(t, e, name, table)
		return ts.Phase == "halted" && ts.Halt != nil && ts.Halt.AlertSequence > 0, fmt.Sprintf("phase %s, halt %+v", ts.Phase, ts.Halt)
	})
	return tableStatus(t, e, name, table).Halt
}

// Schema changes that rewrite values without a change event leave the
// replica equal to the source, or halt the table saying why: a column
// added with a constant (or stable, now()) default fills the existing rows
// (additive, and NOT NULL through its migration), one with a volatile
// default halts, a
// narrowed numeric halts as breaking, and the proposal after int → text
// registers as printed.
func TestSchemaChangesKeepTheReplicaEqual(t *testing.T) {
	t.Parallel()
	e := newEnv(t, startSeam(t))
	e.exec(e.src, `
CREATE TABLE t_def (id int PRIMARY KEY, v text);
CREATE TABLE t_vol (id int PRIMARY KEY, v text);
CREATE TABLE t_num (id int PRIMARY KEY, price numeric(12,4));
CREATE TABLE t_qty (id int PRIMARY KEY, qty int);
CREATE TABLE t_ann (id int PRIMARY KEY, v text);
INSERT INTO t_ann SELECT i, 'v' || i FROM generate_series(1, 40) i;
INSERT INTO t_def SELECT i, 'v' || i FROM generate_series(1, 1007) i;
INSERT INTO t_vol SELECT i, 'v' || i FROM generate_series(1, 50) i;
INSERT INTO t_num SELECT i, i + 0.2345 FROM generate_series(1, 50) i;
INSERT INTO t_qty SELECT i, i * 3 FROM generate_series(1, 50) i;`)
	e.startReady(e.config("ddl", "t_def", "t_vol", "t_num", "t_qty", "t_ann"))
	db := dbName(e.source)

	// A constant default: PostgreSQL keeps it in the catalog and sends no
	// change for the 1,007 rows it already had.
	e.exec(e.src, "ALTER TABLE t_def ADD COLUMN status text DEFAULT 'active'")
	e.exec(e.src, "INSERT INTO t_def VALUES (2000, 'new', 'pending')")
	replicaEquals(t, e, "t_def", "with the new column", []string{"id", "v", "status"})
	if ts := tableStatus(t, e, "ddl", "public.t_def"); ts.Phase != "stream" {
		t.Fatalf("t_def after ADD COLUMN DEFAULT 'active': %s (halt %+v), want streaming (additive)", ts.Phase, ts.Halt)
	}
	// NOT NULL DEFAULT is breaking (a new required field); through the
	// proposal as printed, the existing rows take the default too.
	e.exec(e.src, "ALTER TABLE t_def ADD COLUMN flag boolean NOT NULL DEFAULT true")
	e.exec(e.src, "UPDATE t_def SET flag = false WHERE id = 5")
	h := tableHalts(t, e, "ddl", "public.t_def")
	if !strings.Contains(strings.Join(h.Changes, ";"), "FIELD_ADDED_REQUIRED") {
		t.Fatalf("t_def halt %+v, want FIELD_ADDED_REQUIRED", h)
	}
	registerMigration(t, e, h, nil)
	replicaEquals(t, e, "t_def", "with the NOT NULL column", []string{"id", "v", "status", "flag"})

	// DEFAULT now() is stable, not volatile: PostgreSQL evaluates it once
	// and keeps it in the catalog, so the replica's rows take it.
	e.exec(e.src, "ALTER TABLE t_vol ADD COLUMN created timestamptz DEFAULT now()")
	e.exec(e.src, "INSERT INTO t_vol (id, v) VALUES (100, 'after')")
	replicaEquals(t, e, "t_vol", "with DEFAULT now()", []string{"id", "v", "created"})
	// A volatile default: each row got its own value in a rewrite the
	// stream never saw. The table halts and says what to do; no NULLs.
	e.exec(e.src, "ALTER TABLE t_vol ADD COLUMN token uuid DEFAULT gen_random_uuid()")
	e.exec(e.src, "INSERT INTO t_vol (id, v) VALUES (101, 'after the token')")
	h = tableHalts(t, e, "ddl", "public.t_vol")
	if !strings.Contains(h.Message, "gen_random_uuid()") || !strings.Contains(h.Message, "drop the source and start it again") {
		t.Fatalf("t_vol halt message %q, want it to name the default and the re-snapshot", h.Message)
	}
	var cols int
	if err := e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'replica' AND table_name = 't_vol' AND column_name = 'token'").Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("the replica of t_vol got the column token (%d, %v) while halted; its rows would read NULL", cols, err)
	}

	// numeric(12,4) → numeric(8,1): the source rounded 1.2345 to 1.2.
	e.exec(e.src, "ALTER TABLE t_num ALTER COLUMN price TYPE numeric(8,1)")
	e.exec(e.src, "UPDATE t_num SET price = 7.5 WHERE id = 1")
	h = tableHalts(t, e, "ddl", "public.t_num")
	if lines := strings.Join(h.Changes, ";"); !strings.Contains(lines, "FIELD_TYPE_NARROWED") || !strings.Contains(lines, "DECIMAL(8,1)") {
		t.Fatalf("t_num halt changes %v, want FIELD_TYPE_NARROWED to DECIMAL(8,1)", h.Changes)
	}
	if ev := haltEvents(t, e, "pg."+db+".public.t_num"); len(ev) != 1 {
		t.Fatalf("t_num: %d UNANNOUNCED_CHANGE events, want 1", len(ev))
	}

	// int → text: the proposal carries the cast to the canonical INT32 and
	// registers as printed.
	e.exec(e.src, "ALTER TABLE t_qty ALTER COLUMN qty TYPE text")
	e.exec(e.src, "UPDATE t_qty SET qty = '1000' WHERE id = 1")
	h = tableHalts(t, e, "ddl", "public.t_qty")
	if len(h.ProposalNotes) > 0 {
		t.Fatalf("t_qty proposal notes %v, want none: a text → INT32 cast exists", h.ProposalNotes)
	}
	registerMigration(t, e, h, nil)
	eventually(t, "t_qty resumes through the proposal as printed", 30*time.Second, func() (bool, string) {
		return sameRows(t, e, "t_qty", "replica.t_qty", []string{"id", "qty"})
	})

	// An announced change: the version carrying the new column is
	// registered ahead, and the replica's rows still take its default.
	ctx := context.Background()
	annSubject := "pg." + db + ".public.t_ann"
	active, err := e.seam.registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: annSubject})
	if err != nil {
		t.Fatal(err)
	}
	model, err := e.seam.registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: annSubject})
	if err != nil {
		t.Fatal(err)
	}
	m := model.GetVersion().GetModel()
	m.Fields = append(m.Fields, &contractv1.Field{Name: "region", Type: contractv1.FieldType_FIELD_TYPE_STRING})
	if _, err := e.seam.registry.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: m}); err != nil {
		t.Fatal(err)
	}
	next := active.GetVersion().GetContract()
	next.Fields = append(next.Fields, &contractv1.Field{Name: "region", Type: contractv1.FieldType_FIELD_TYPE_STRING})
	next.Mapping.Fields["region"] = &contractv1.FieldMapping{From: "region"}
	reg, err := e.seam.registry.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: next})
	if err != nil || reg.GetVersion().GetStatus() != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		t.Fatalf("register the announced version: %v (%v)", reg.GetVersion().GetStatus(), err)
	}
	e.exec(e.src, "ALTER TABLE t_ann ADD COLUMN region text DEFAULT 'eu'")
	e.exec(e.src, "INSERT INTO t_ann VALUES (100, 'new', 'us')")
	replicaEquals(t, e, "t_ann", "through the announced version", []string{"id", "v", "region"})
	if ts := tableStatus(t, e, "ddl", "public.t_ann"); ts.ContractVersion != reg.GetVersion().GetVersion() {
		t.Fatalf("t_ann runs version %d, want the announced %d", ts.ContractVersion, reg.GetVersion().GetVersion())
	}
}

// A default set on a column after it was added leaves the rows that
// predate the column NULL, at the source and in the replica: the table
// goes on (the catalog has a default but no missing value, and the table
// was not rewritten). A volatile time default (clock_timestamp(), unlike
// now() evaluated row by row in a rewrite) halts the table, also when the
// new column's first change comes after a later SET DEFAULT elsewhere.
func TestDefaultSetAfterAddColumnKeepsStreaming(t *testing.T) {
	t.Parallel()
	e := newEnv(t, startSeam(t))
	e.exec(e.src, `
CREATE TABLE t_late (id int PRIMARY KEY, v text);
CREATE TABLE t_clock (id int PRIMARY KEY, v text);
INSERT INTO t_late SELECT i, 'v' || i FROM generate_series(1, 60) i;
INSERT INTO t_clock SELECT i, 'v' || i FROM generate_series(1, 60) i;`)
	e.startReady(e.config("late", "t_late", "t_clock"))

	// No change of t_late between the ADD and the SET DEFAULT: the first
	// change in the new shape comes when the catalog already has a default.
	e.exec(e.src, "ALTER TABLE t_late ADD COLUMN note text")
	e.exec(e.src, "ALTER TABLE t_late ALTER COLUMN note SET DEFAULT 'later'")
	e.exec(e.src, "INSERT INTO t_late (id, v) VALUES (100, 'after')")
	e.exec(e.src, "UPDATE t_late SET note = 'set' WHERE id = 3")
	replicaEquals(t, e, "t_late", "with the new column", []string{"id", "v", "note"})
	if ts := tableStatus(t, e, "late", "public.t_late"); ts.Phase != "stream" {
		t.Fatalf("t_late after ADD COLUMN then SET DEFAULT: %s (halt %+v), want streaming", ts.Phase, ts.Halt)
	}
	var nulls int
	if err := e.tgt.QueryRow(context.Background(), "SELECT count(*) FROM replica.t_late WHERE note IS NULL").Scan(&nulls); err != nil || nulls != 59 {
		t.Fatalf("replica.t_late has %d rows without a note (%v), want the 59 that predate the column and were not updated", nulls, err)
	}

	// A volatile default: every existing row got its own time in a rewrite.
	e.exec(e.src, "ALTER TABLE t_clock ADD COLUMN seen timestamptz DEFAULT clock_timestamp()")
	e.exec(e.src, "INSERT INTO t_clock (id, v) VALUES (100, 'after')")
	h := tableHalts(t, e, "late", "public.t_clock")
	if !strings.Contains(h.Message, "clock_timestamp()") || !strings.Contains(h.Message, "drop the source and start it again") {
		t.Fatalf("t_clock halt message %q, want it to name the default and the re-snapshot", h.Message)
	}
	if ts := tableStatus(t, e, "late", "public.t_late"); ts.Phase != "stream" {
		t.Fatalf("t_late is %s after t_clock halted, want streaming", ts.Phase)
	}
}
