package idmap_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/platform/storage/storagetest"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// createAccount creates the bank feed's namespace: account references
// "ACC-00012345", account numbers, and the UUIDs of the new core banking.
func createAccount(t testing.TB, c idmapv1.IdMapServiceClient) {
	t.Helper()
	_, err := c.CreateNamespace(context.Background(), &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{
		Name: "account",
		Formats: []*idmapv1.Format{
			{Name: "acc-ref", Kind: idmapv1.FormatKind_FORMAT_KIND_STRING, Pattern: `^ACC-[0-9]{8}$`},
			{Name: "account-number", Kind: idmapv1.FormatKind_FORMAT_KIND_INT},
			{Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
		},
	}})
	if err != nil {
		t.Fatalf("CreateNamespace account: %v", err)
	}
}

func accountTemplate(t testing.TB, c idmapv1.IdMapServiceClient) {
	t.Helper()
	if _, err := c.SetRule(context.Background(), &idmapv1.SetRuleRequest{Namespace: "account", Samples: []string{"12345", "7"},
		Rule: &idmapv1.Rule{FromFormat: "account-number", ToFormat: "acc-ref", Reversible: true,
			Strategy: &idmapv1.Rule_Template{Template: &idmapv1.TemplateRule{Template: "ACC-{int:08}"}}}}); err != nil {
		t.Fatalf("SetRule account-number→acc-ref: %v", err)
	}
}

func describe(t testing.TB, c idmapv1.IdMapServiceClient, queries ...[3]string) []*idmapv1.Route {
	t.Helper()
	req := &idmapv1.DescribeRoutesRequest{}
	for _, q := range queries {
		req.Queries = append(req.Queries, &idmapv1.RouteQuery{Namespace: q[0], FromFormat: q[1], ToFormat: q[2]})
	}
	resp, err := c.DescribeRoutes(context.Background(), req)
	if err != nil {
		t.Fatalf("DescribeRoutes: %v", err)
	}
	if len(resp.GetRoutes()) != len(queries) {
		t.Fatalf("DescribeRoutes answered %d routes for %d queries", len(resp.GetRoutes()), len(queries))
	}
	return resp.GetRoutes()
}

// TestDescribeRoutes walks a migration from nothing to ready: the answer
// the registry relies on before it accepts or activates one.
func TestDescribeRoutes(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		c, _ := start(t, url)
		ctx := context.Background()
		uuidToRef := [3]string{"account", "uuid", "acc-ref"}
		type want struct {
			state    idmapv1.RouteState
			strategy string
			pairs    int64
			msg      string
		}
		check := func(step string, q [3]string, w want) {
			t.Helper()
			r := describe(t, c, q)[0]
			if r.GetState() != w.state || r.GetStrategy() != w.strategy || r.GetTablePairs() != w.pairs || !strings.Contains(r.GetMessage(), w.msg) ||
				(w.state == idmapv1.RouteState_ROUTE_STATE_READY) != (r.GetMessage() == "") {
				t.Fatalf("%s: route %v = %v %q %d %q, want %v %q %d with a message containing %q", step, q, r.GetState(), r.GetStrategy(),
					r.GetTablePairs(), r.GetMessage(), w.state, w.strategy, w.pairs, w.msg)
			}
		}
		check("no namespace", uuidToRef, want{state: idmapv1.RouteState_ROUTE_STATE_NAMESPACE_NOT_FOUND, msg: `idmap namespace "account" does not exist`})
		createAccount(t, c)
		check("unknown format", [3]string{"account", "guid", "acc-ref"}, want{state: idmapv1.RouteState_ROUTE_STATE_FORMAT_NOT_FOUND,
			msg: `has no format "guid" (formats: acc-ref, account-number, uuid)`})
		check("nothing set", uuidToRef, want{state: idmapv1.RouteState_ROUTE_STATE_NO_ROUTE,
			msg: "no rule and no lookup table for uuid→acc-ref; set a rule (seam idmap rule set account --from uuid --to acc-ref …) or import the uuid→acc-ref pairs with `seam idmap import account FILE.csv --from uuid --to acc-ref`"})
		if _, err := c.SetRule(ctx, &idmapv1.SetRuleRequest{Namespace: "account",
			Rule: &idmapv1.Rule{FromFormat: "uuid", ToFormat: "acc-ref", Strategy: &idmapv1.Rule_Lookup{Lookup: &idmapv1.LookupRule{}}}}); err != nil {
			t.Fatalf("SetRule lookup: %v", err)
		}
		check("lookup rule, no table", uuidToRef, want{state: idmapv1.RouteState_ROUTE_STATE_TABLE_EMPTY,
			msg: "translates uuid→acc-ref through its lookup table, which has no pairs"})
		importPairs(t, c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "acc-ref", ToFormat: "uuid"},
			[][2]string{{"ACC-00012345", u1}, {"ACC-00012346", u2}})
		check("table loaded (either orientation serves both directions)", uuidToRef, want{state: idmapv1.RouteState_ROUTE_STATE_READY, strategy: "table", pairs: 2})
		// An import that empties the table makes the route unready again.
		importPairs(t, c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "uuid", ToFormat: "acc-ref", Replace: true}, nil)
		check("table emptied", uuidToRef, want{state: idmapv1.RouteState_ROUTE_STATE_TABLE_EMPTY, msg: "which has no pairs"})

		accountTemplate(t, c)
		check("forward rule", [3]string{"account", "account-number", "acc-ref"}, want{state: idmapv1.RouteState_ROUTE_STATE_READY, strategy: "rule template ACC-{int:08}"})
		check("reverse of a reversible rule", [3]string{"account", "acc-ref", "account-number"}, want{state: idmapv1.RouteState_ROUTE_STATE_READY, strategy: "reverse rule template ACC-{int:08}"})
		check("same format", [3]string{"account", "uuid", "uuid"}, want{state: idmapv1.RouteState_ROUTE_STATE_NO_ROUTE, msg: "nothing to translate"})

		// Several queries answer in order.
		routes := describe(t, c, uuidToRef, [3]string{"ledger", "a", "b"}, [3]string{"account", "account-number", "acc-ref"})
		var states []idmapv1.RouteState
		for _, r := range routes {
			states = append(states, r.GetState())
		}
		if !slices.Equal(states, []idmapv1.RouteState{idmapv1.RouteState_ROUTE_STATE_TABLE_EMPTY, idmapv1.RouteState_ROUTE_STATE_NAMESPACE_NOT_FOUND, idmapv1.RouteState_ROUTE_STATE_READY}) {
			t.Fatalf("states %v, want TABLE_EMPTY, NAMESPACE_NOT_FOUND, READY in query order", states)
		}
	})
}

// TestMemberListBesideRules: with a template rule both ways every valid
// account reference translates, so the known accounts (what the match rate
// measures against) are declared as a member list, which coexists with the
// rule, survives a restart and is kept up by single-id changes.
func TestMemberListBesideRules(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		c, _ := start(t, url)
		ctx := context.Background()
		createAccount(t, c)
		accountTemplate(t, c)

		// A pair table is refused, and the refusal names the way that works.
		_, err := tryImport(c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "acc-ref", ToFormat: "account-number"},
			[][2]string{{"ACC-00000001", "1"}})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "import a member list of acc-ref instead (seam idmap import account FILE.csv --members acc-ref)") {
			t.Fatalf("pair table under rules both ways = %v, want FailedPrecondition pointing to a member list", err)
		}
		resp := importPairs(t, c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "acc-ref", Members: true},
			[][2]string{{"ACC-00000001", ""}, {"ACC-00000002", "ACC-00000002"}, {"ACC-00000003", ""}, {"ACC-00000001", ""}})
		if !resp.GetCommitted() || resp.GetTableSize() != 3 || resp.GetInserted() != 3 {
			t.Fatalf("member import = %v, want 3 members committed (a repeated id is harmless)", resp)
		}
		if _, err := tryImport(c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "acc-ref", Members: true}, [][2]string{{"ACC-00000004", "ACC-00000005"}}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("member with a different to id = %v, want InvalidArgument", err)
		}
		if _, err := tryImport(c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "acc-ref", Members: true}, [][2]string{{"acc-4", ""}}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("member not of the format = %v, want InvalidArgument", err)
		}
		if _, err := tryImport(c, &idmapv1.ImportHeader{Namespace: "account", FromFormat: "acc-ref", ToFormat: "uuid", Members: true}, nil); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("member list naming a second format = %v, want InvalidArgument", err)
		}
		contains := func(step string, want ...bool) {
			t.Helper()
			got, err := c.Contains(ctx, &idmapv1.ContainsRequest{Namespace: "account", Format: "acc-ref", Ids: []string{"ACC-00000001", "ACC-00000003", "ACC-00000009"}})
			if err != nil {
				t.Fatalf("%s: Contains: %v", step, err)
			}
			if !slices.Equal(got.GetPresent(), want) {
				t.Fatalf("%s: Contains = %v, want %v", step, got.GetPresent(), want)
			}
		}
		contains("after import", true, true, false)
		// The rule still translates every valid id, member or not.
		tr, err := c.Translate(ctx, &idmapv1.TranslateRequest{Namespace: "account", FromFormat: "acc-ref", ToFormat: "account-number", Ids: []string{"ACC-00000009"}})
		if err != nil || tr.GetValues()[0] != "9" {
			t.Fatalf("Translate through the rule = %v, %v, want 9", tr, err)
		}
		if _, err := c.UpsertPair(ctx, &idmapv1.UpsertPairRequest{Namespace: "account", FromFormat: "acc-ref", ToFormat: "acc-ref",
			Pair: &idmapv1.Pair{From: "ACC-00000009"}, Reason: "account opened"}); err != nil {
			t.Fatalf("UpsertPair member: %v", err)
		}
		if _, err := c.DeletePair(ctx, &idmapv1.DeletePairRequest{Namespace: "account", FromFormat: "acc-ref", ToFormat: "acc-ref",
			From: "ACC-00000003", Reason: "account closed"}); err != nil {
			t.Fatalf("DeletePair member: %v", err)
		}
		contains("after single changes", true, false, true)

		ns, err := c.GetNamespace(ctx, &idmapv1.GetNamespaceRequest{Name: "account"})
		if err != nil {
			t.Fatal(err)
		}
		if tables := ns.GetNamespace().GetTables(); len(tables) != 1 || !tables[0].GetMembers() || tables[0].GetPairs() != 3 || tables[0].GetFromFormat() != "acc-ref" {
			t.Fatalf("tables = %v, want one member list of acc-ref with 3 ids", tables)
		}
		// A second server on the same store (a restart, or another replica)
		// loads the member list.
		c2, _ := start(t, url)
		got, err := c2.Contains(ctx, &idmapv1.ContainsRequest{Namespace: "account", Format: "acc-ref", Ids: []string{"ACC-00000001", "ACC-00000003", "ACC-00000009"}})
		if err != nil || !slices.Equal(got.GetPresent(), []bool{true, false, true}) {
			t.Fatalf("Contains on a second server = %v, %v, want [true false true]", got.GetPresent(), err)
		}
		// A member list never answers a translation.
		if r := describe(t, c2, [3]string{"account", "acc-ref", "uuid"})[0]; r.GetState() != idmapv1.RouteState_ROUTE_STATE_NO_ROUTE {
			t.Fatalf("acc-ref→uuid with only a member list = %v, want NO_ROUTE", r.GetState())
		}
	})
}
