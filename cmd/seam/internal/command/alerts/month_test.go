package alerts_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/platform/storage/storagetest"
)

// The month: October 2026, a drift on the 12th, a day over its BLOCK
// threshold on the 17th, merchants as UUIDs from the 22nd to the end, the
// node restarted after the 25th, the source contained on the 26th and
// 27th.
const (
	perDay     = 100
	driftDay   = 12
	blockDay   = 17
	switchDay  = 22
	restartDay = 25
	containDay = 26
	lastDay    = 30
)

func part(day int) string { return fmt.Sprintf("2026-10-%02d", day) }

// merchantUUID is merchant k's UUID in the source's new system.
func merchantUUID(k int) string { return fmt.Sprintf("6d3c0000-0000-4000-8000-%012d", k) }

// merchant is the i-th settlement's merchant of a day: 98 of 100 are
// known to the merchant master.
func merchant(day, i int) int {
	if i%50 == 49 {
		return 9_000_000 + day*100 + i
	}
	return 1000 + (day*37+i)%2000
}

func monthDay(t *testing.T, day int) string {
	var b strings.Builder
	for i := range perDay {
		amount := 85 + float64(i%21-10)
		if day == driftDay {
			amount *= 1.3
		}
		m := fmt.Sprint(merchant(day, i))
		switch {
		case day == blockDay && i < 2:
			m = "null"
		case day >= switchDay:
			m = fmt.Sprintf("%q", merchantUUID(merchant(day, i)))
		}
		fmt.Fprintf(&b, `{"settlement_id":"SET-%08d","merchant_id":%s,"amount":%.2f,"settled_at":"2026-10-%02dT%02d:%02d:00Z"}`+"\n",
			day*10000+i, m, amount, day, i%24, i%60)
	}
	return seamtest.WriteFile(t, fmt.Sprintf("day%02d.ndjson", day), b.String())
}

// TestMonthOfAlarmsThroughTheCLI is issue 31's month as an operator lives
// it with the seam command, on SQLite and PostgreSQL, across a restart:
// each day of the outage has its own MATCH_RATE alert (the relative rule
// alone keeps alerting, its baseline the days before the switch), the
// drift alert of the 12th is still open on day 30, no alert resolves
// before the fix, and the fix (the lookup table, v2 from the switch's
// data date, a replay of the 22nd to the 30th) resolves every MATCH_RATE
// and UNANNOUNCED_CHANGE alert of those days and nothing else.
func TestMonthOfAlarmsThroughTheCLI(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(testing.TB) string{"sqlite": func(testing.TB) string { return "" }, "postgres": storagetest.PostgresURL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := url(t)
			n := seamtest.StartNodeWith(t, func(c *node.Config) { c.Store = store })
			monthThroughTheCLI(t, n)
		})
	}
}

func monthThroughTheCLI(t *testing.T, n *seamtest.Node) {
	n.MustCLI(t, 0, "idmap", "namespace", "create", "merchant", "--format", "legacy-int:int")
	var known strings.Builder
	for k := 1000; k < 3000; k++ {
		fmt.Fprintf(&known, "%d\n", k)
	}
	n.MustCLI(t, 0, "idmap", "import", "merchant", seamtest.WriteFile(t, "known.csv", known.String()), "--members", "legacy-int", "--no-header")
	n.MustCLI(t, 0, "canonical", "register", "-f", seamtest.FixtureFile(t, "month_model.yaml"))
	n.MustCLI(t, 0, "contract", "register", "-f", seamtest.FixtureFile(t, "month_v1.yaml"))

	for day := 1; day <= lastDay; day++ {
		if day == containDay {
			n.MustCLI(t, 0, "gate", "contain", "pay.settlements", "--reason", "INC-22: merchants arrive as UUIDs")
		}
		// A BLOCKED seal exits 1; every other day 0.
		want := 0
		if day == blockDay {
			want = 1
		}
		n.MustCLI(t, want, "gate", "ingest", monthDay(t, day), "--subject", "pay.settlements", "--partition", part(day), "--chunk-records", "40")
		if day == containDay+1 {
			n.MustCLI(t, 0, "gate", "release", "pay.settlements", "--reason", "INC-22: the fix is coming, hold no more")
		}
		if day == restartDay {
			n.Restart(t)
		}
	}

	alerts := listAlerts(t, n)
	var outage []string
	for day := switchDay; day <= lastDay; day++ {
		outage = append(outage, "MATCH_RATE "+part(day)+" OPEN")
	}
	if got := alerts.lines("MATCH_RATE"); !slices.Equal(got, outage) {
		t.Fatalf("MATCH_RATE alerts on day 30 = %v, want one OPEN for each day of the outage %v", got, outage)
	}
	want := map[string][]string{
		"MEAN_DRIFT":         {"MEAN_DRIFT " + part(driftDay) + " OPEN"},
		"PARTITION_BLOCKED":  {"PARTITION_BLOCKED " + part(blockDay) + " OPEN"},
		"UNANNOUNCED_CHANGE": {"UNANNOUNCED_CHANGE " + part(switchDay) + " OPEN"},
	}
	for kind, w := range want {
		if got := alerts.lines(kind); !slices.Equal(got, w) {
			t.Errorf("%s alerts on day 30 = %v, want %v", kind, got, w)
		}
	}
	// The partition says where its baselines came from: the last day's
	// match rate from the seven days before the switch.
	out := n.MustCLI(t, 0, "gate", "partition", "pay.settlements", part(lastDay))
	if wantLine := " of 7 partitions: " + strings.Join(days(switchDay-7, switchDay-1), ", "); !strings.Contains(out, "  merchant_match: 0.9") || !strings.Contains(out, wantLine) {
		t.Errorf("seam gate partition %s lacks %q:\n%s", part(lastDay), wantLine, out)
	}

	// The fix, on day 31.
	n.MustCLI(t, 0, "idmap", "namespace", "add-format", "merchant", "--format", "uuid:uuid")
	var pairs strings.Builder
	for k := 1000; k < 3000; k++ {
		fmt.Fprintf(&pairs, "%s,%d\n", merchantUUID(k), k)
	}
	n.MustCLI(t, 0, "idmap", "import", "merchant", seamtest.WriteFile(t, "pairs.csv", pairs.String()), "--from", "uuid", "--to", "legacy-int", "--no-header")
	n.MustCLI(t, 0, "contract", "register", "-f", seamtest.FixtureFile(t, "month_v2.yaml"), "--override-reason", "INC-22: merchants arrive as UUIDs",
		"--data-effective", part(switchDay), "--data-effective-reason", "INC-22: the switch began on the 22nd")
	n.MustCLI(t, 0, "quarantine", "replay", "pay.settlements", "--from", part(switchDay), "--to", part(lastDay), "--reason", "INC-22 fixed by v2", "--summary-only")

	for _, a := range listAlerts(t, n) {
		inOutage := a.Partition >= part(switchDay)
		resolved := a.State == "ALERT_STATE_RESOLVED"
		switch {
		case inOutage && (a.Kind == "MATCH_RATE" || a.Kind == "UNANNOUNCED_CHANGE"):
			if !resolved || !strings.HasPrefix(a.ResolvedBy, "replay ") {
				t.Errorf("%s of %s is %s by %q after the fix, want RESOLVED by the replay", a.Kind, a.Partition, a.State, a.ResolvedBy)
			}
		case resolved:
			t.Errorf("%s of %s was RESOLVED by %q: only the replayed days' alerts are", a.Kind, a.Partition, a.ResolvedBy)
		}
	}
}

type alert struct {
	Kind, Partition, State string
	ResolvedBy             string `json:"resolved_by"`
}

type alertList []alert

func listAlerts(t *testing.T, n *seamtest.Node) alertList {
	t.Helper()
	var resp struct{ Alerts alertList }
	out := n.MustCLI(t, 0, "alerts", "list", "pay.settlements", "--all", "-o", "json")
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("alerts list -o json: %v\n%s", err, out)
	}
	return resp.Alerts
}

// lines are the alerts of a kind as "KIND partition STATE", by partition.
func (l alertList) lines(kind string) []string {
	var out []string
	for _, a := range l {
		if a.Kind == kind {
			out = append(out, fmt.Sprintf("%s %s %s", kind, a.Partition, strings.TrimPrefix(a.State, "ALERT_STATE_")))
		}
	}
	slices.Sort(out)
	return out
}

func days(from, to int) []string {
	var out []string
	for d := from; d <= to; d++ {
		out = append(out, part(d))
	}
	return out
}
