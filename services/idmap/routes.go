package idmap

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/seamdata/seam/platform/rpcerr"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// maxRouteQueries bounds one DescribeRoutes call; a contract has a handful.
const maxRouteQueries = 1000

// DescribeRoutes says, per namespace and ordered pair of formats, whether
// Translate answers now and how. It reads the same snapshot Translate does
// and decides by the same order: a rule in that direction, the reverse of a
// reversible rule, then the pair's lookup table, which must hold pairs.
func (s *Server) DescribeRoutes(_ context.Context, req *idmapv1.DescribeRoutesRequest) (*idmapv1.DescribeRoutesResponse, error) {
	if n := len(req.GetQueries()); n > maxRouteQueries {
		return nil, rpcerr.InvalidArgument(fmt.Sprintf("%d queries in one call, the limit is %d", n, maxRouteQueries),
			rpcerr.FieldViolation{Field: "queries", Description: fmt.Sprintf("ask about at most %d routes at once", maxRouteQueries)})
	}
	snap := s.snap.Load()
	out := &idmapv1.DescribeRoutesResponse{Routes: make([]*idmapv1.Route, len(req.GetQueries()))}
	for i, q := range req.GetQueries() {
		out.Routes[i] = describeRoute(snap, q)
	}
	return out, nil
}

func describeRoute(snap *snapshot, q *idmapv1.RouteQuery) *idmapv1.Route {
	r := &idmapv1.Route{Query: q}
	name, from, to := q.GetNamespace(), q.GetFromFormat(), q.GetToFormat()
	ns := snap.namespaces[name]
	if ns == nil {
		r.State = idmapv1.RouteState_ROUTE_STATE_NAMESPACE_NOT_FOUND
		r.Message = fmt.Sprintf("idmap namespace %q does not exist; create it with its formats (seam idmap namespace create %s --format %s:KIND --format %s:KIND)",
			name, orPlaceholder(name, "NAME"), orPlaceholder(from, "FORMAT"), orPlaceholder(to, "FORMAT"))
		return r
	}
	var missing []string
	for _, f := range []string{from, to} {
		if ns.formats[f] == nil && !slices.Contains(missing, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		r.State = idmapv1.RouteState_ROUTE_STATE_FORMAT_NOT_FOUND
		quoted := make([]string, len(missing))
		for i, m := range missing {
			quoted[i] = fmt.Sprintf("%q", m)
		}
		r.Message = fmt.Sprintf("idmap namespace %q has no format %s (formats: %s); formats are fixed when a namespace is created",
			name, strings.Join(quoted, " or "), strings.Join(formatList(ns), ", "))
		return r
	}
	if from == to {
		r.State = idmapv1.RouteState_ROUTE_STATE_NO_ROUTE
		r.Message = fmt.Sprintf("from and to are both %s/%s; there is nothing to translate", name, from)
		return r
	}
	if c := ns.rules[[2]string{from, to}]; c != nil && !c.Lookup {
		r.State, r.Strategy = idmapv1.RouteState_ROUTE_STATE_READY, "rule "+strategyName(c.Rule)
		return r
	}
	if c := ns.rules[[2]string{to, from}]; c != nil && !c.Lookup && c.Reverse != nil {
		r.State, r.Strategy = idmapv1.RouteState_ROUTE_STATE_READY, "reverse rule "+strategyName(c.Rule)
		return r
	}
	key, _ := tableKey(name, from, to)
	table := ns.tables[[2]string{key.A, key.B}]
	if table != nil {
		r.TablePairs = table.Pairs
	}
	importHint := fmt.Sprintf("import the %s→%s pairs with `seam idmap import %s FILE.csv --from %s --to %s`", from, to, name, from, to)
	switch {
	case r.TablePairs > 0:
		r.State, r.Strategy = idmapv1.RouteState_ROUTE_STATE_READY, "table"
	case table != nil || ns.rules[[2]string{from, to}] != nil || ns.rules[[2]string{to, from}] != nil:
		r.State = idmapv1.RouteState_ROUTE_STATE_TABLE_EMPTY
		r.Message = fmt.Sprintf("idmap namespace %q translates %s→%s through its lookup table, which has no pairs: every id would be a miss; %s",
			name, from, to, importHint)
	default:
		r.State = idmapv1.RouteState_ROUTE_STATE_NO_ROUTE
		r.Message = fmt.Sprintf("idmap namespace %q has no rule and no lookup table for %s→%s; set a rule (seam idmap rule set %s --from %s --to %s …) or %s",
			name, from, to, name, from, to, importHint)
	}
	return r
}

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

func formatList(ns *nsState) []string {
	names := make([]string, 0, len(ns.formats))
	for n := range ns.formats {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
