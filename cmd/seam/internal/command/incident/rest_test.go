package incident_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/seamtest"
	"github.com/seamdata/seam/core/record/recordtest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// restIncident posts to the incident route and returns the status, and
// for a stream its {"result": …} messages.
func restIncident(t *testing.T, n *seamtest.Node, route, token string, body any) (int, []map[string]any) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp := n.HTTP(t, http.MethodPost, "/v1/subjects/pay.settlements/incident"+route, token, string(raw))
	defer resp.Body.Close()
	stream, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := seamtest.NDJSON(t, route, string(stream))
	for i, m := range out {
		if r, ok := m["result"].(map[string]any); ok {
			out[i] = r
		}
	}
	return resp.StatusCode, out
}

// released lists the released records of the day by source position.
func released(t *testing.T, n *seamtest.Node) []int64 {
	t.Helper()
	gate := gatev1.NewGateServiceClient(n.Conn(t, n.Admin))
	var out []int64
	page := ""
	for {
		resp, err := gate.ListQuarantine(context.Background(), &gatev1.ListQuarantineRequest{PageSize: 1000, PageToken: page,
			Filter: &gatev1.QuarantineFilter{Subject: "pay.settlements", State: gatev1.QuarantineState_QUARANTINE_STATE_RELEASED}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.GetRecords() {
			out = append(out, r.GetPosition())
		}
		if page = resp.GetNextPageToken(); page == "" {
			break
		}
	}
	slices.Sort(out)
	return out
}

// The console's incident route is `seam incident`: on two Seams with the
// same identifier switch (merchant ids from integers to random UUIDs, a
// table from the source's sync the only fix), the route shows the plan the
// command prints with -o json, refuses a caller without a token or a
// reason and changes nothing for a viewer, and its apply, with the same
// pairs uploaded, carries out the same steps and releases exactly the
// records --apply releases, with the same reconciliation.
func TestRESTIncidentIsTheCommands(t *testing.T) {
	t.Parallel()
	cli, rest := seamtest.StartNode(t), seamtest.StartNode(t)
	merchant := func(i int) string { return fmt.Sprintf("%q", recordtest.RandomUUID(i)) }
	setupSettlements(t, cli, merchant)
	setupSettlements(t, rest, merchant)
	pairs := uuidPairs(180) // the source's sync misses 20 merchants
	file := seamtest.WriteFile(t, "merchants.csv", pairs)
	// Named as the command names it, so the printed commands read the same.
	upload := map[string]any{"pairs_csv": pairs, "pairs_name": file}

	// The plan: the same document as the command's, with or without pairs.
	code, got := rest.REST(t, http.MethodGet, "/v1/subjects/pay.settlements/incident", rest.Viewer, "")
	want := jsonOf(t, cli.MustCLI(t, 0, "incident", "pay.settlements", "-o", "json"))
	if code != http.StatusOK || !reflect.DeepEqual(withoutClock(got), withoutClock(want)) {
		t.Errorf("GET incident = %d\n%v\nthe command's -o json:\n%v", code, got, want)
	}
	code, plans := restIncident(t, rest, ":plan", rest.Viewer, upload)
	want = jsonOf(t, cli.MustCLI(t, 0, "incident", "pay.settlements", "--pairs", file, "-o", "json"))
	if code != http.StatusOK || len(plans) != 1 || !reflect.DeepEqual(withoutClock(plans[0]), withoutClock(want)) {
		t.Errorf("POST incident:plan with pairs = %d\n%v\nthe command's -o json with --pairs:\n%v", code, plans, want)
	}
	if d := want["dry_run"].(map[string]any); d["passed"] != 180.0 {
		t.Fatalf("the dry run with the pairs = %v, want 180 passing", d)
	}

	// Refusals, with nothing changed.
	if code, _ := restIncident(t, rest, ":apply", "", upload); code != http.StatusUnauthorized {
		t.Errorf("apply without a token: %d, want 401", code)
	}
	if code, _ := restIncident(t, rest, ":apply", rest.Admin, upload); code != http.StatusBadRequest {
		t.Errorf("apply without a reason: %d, want 400", code)
	}
	if code, _ := restIncident(t, rest, ":plan", rest.Admin, map[string]any{"pairs_csv": "uuid,legacy_int\nonly-one-column\n"}); code != http.StatusBadRequest {
		t.Errorf("plan with a malformed pairs CSV: %d, want 400", code)
	}
	viewer := map[string]any{"reason": "INC-2", "pairs_csv": pairs, "pairs_name": "merchants.csv"}
	code, lines := restIncident(t, rest, ":apply", rest.Viewer, viewer)
	if code == http.StatusOK {
		if last := lines[len(lines)-1]["incident"].(map[string]any); last["error"] == nil {
			t.Errorf("a viewer's apply ended without an error: %v", last)
		}
	}
	if c := rest.MustJSON(t, "gate", "containments"); strings.Contains(fmt.Sprint(c), "pay.settlements") {
		t.Errorf("a viewer's apply contained the source: %v", c)
	}

	// The fix, both ways.
	reason := "INC-2: merchants arrive as UUIDs"
	byCLI := jsonOf(t, cli.MustCLI(t, 0, "incident", "pay.settlements", "--pairs", file, "--apply", "--reason", reason, "-o", "json"))
	upload["reason"] = reason
	code, lines = restIncident(t, rest, ":apply", rest.Admin, upload)
	if code != http.StatusOK || len(lines) == 0 {
		t.Fatalf("apply: %d %v", code, lines)
	}
	byREST, ok := lines[len(lines)-1]["incident"].(map[string]any)
	if !ok {
		t.Fatalf("the apply stream does not end with the incident: %v", lines[len(lines)-1])
	}
	if byREST["error"] != nil {
		t.Fatalf("apply failed: %v", byREST["error"])
	}
	// Each step streamed as it ended, then the replay's progress.
	var streamed []string
	progress := 0
	for _, l := range lines[:len(lines)-1] {
		if s, ok := l["step"].(map[string]any); ok {
			streamed = append(streamed, s["step"].(map[string]any)["name"].(string))
		}
		if _, ok := l["progress"]; ok {
			progress++
		}
	}
	var steps []string
	for _, s := range byCLI["steps"].([]any) {
		steps = append(steps, s.(map[string]any)["name"].(string))
	}
	if !slices.Equal(streamed, steps) || progress == 0 {
		t.Errorf("streamed steps %q and %d progress messages; the command's steps %q", streamed, progress, steps)
	}
	for _, key := range []string{"steps", "reconciliation", "replay", "window", "replay_id", "migrations", "dry_run"} {
		if !reflect.DeepEqual(byREST[key], byCLI[key]) {
			t.Errorf("%s: the route's\n%v\nthe command's\n%v", key, byREST[key], byCLI[key])
		}
	}
	if rec := byREST["reconciliation"].(map[string]any); rec["released"] != 180.0 || rec["adds_up"] != true {
		t.Errorf("reconciliation = %v, want 180 released, adding up", rec)
	}
	if a, b := released(t, rest), released(t, cli); len(a) != 180 || !slices.Equal(a, b) {
		t.Errorf("released by the route at positions %v (%d), by the command %v (%d)", a, len(a), b, len(b))
	}
}

// clockTime is the time of day of an RFC 3339 timestamp.
var clockTime = regexp.MustCompile(`T\d\d:\d\d:\d\d(\.\d+)?Z`)

// withoutClock is v with the times of day of its timestamps left out: a
// plan names the earliest effective time a breaking version may take,
// counted from when it was made, and the command's plan and the REST one
// are made a moment apart (a second boundary may lie between them).
func withoutClock(v any) any {
	switch v := v.(type) {
	case string:
		return clockTime.ReplaceAllString(v, "T…Z")
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = withoutClock(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutClock(e)
		}
		return out
	}
	return v
}
