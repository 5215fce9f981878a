// Package proposal gathers what core/infer needs to propose the next
// contract version of a subject — the active version, its canonical
// model, its idmap namespaces and the records the gate holds in a window
// of partitions — and runs the inference. `seam contract infer` prints
// the proposal; `seam incident` shows it beside everything else and can
// carry it out.
//
// The gate keeps quarantined records with their raw bytes, but not the
// records it accepted: those went to the pipeline, which owns them. So a
// proposal is made from held records only, and the accepted side is what
// the gate's monitor counted per partition.
package proposal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/infer"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Limits of a gathering.
const (
	// DefaultLimit is how many held records a proposal reads by default.
	DefaultLimit = 10_000
	// MaxLimit bounds --limit.
	MaxLimit = 200_000
	// pageSize is the page of one ListQuarantine call.
	pageSize = 1000
	// maxKnown bounds the known ids fetched for a UUIDv5 search.
	maxKnown = 1_000_000
)

// Options choose the window and tune the inference.
type Options struct {
	// Partitions are the partitions to read; empty takes the newest
	// partitions that hold records, up to Limit records.
	Partitions []string
	// Limit is the most held records read (0: DefaultLimit).
	Limit int
	infer.Options
}

// Clients are the services a gathering asks.
type Clients struct {
	Registry registryv1.RegistryServiceClient
	Gate     gatev1.GateServiceClient
	Idmap    idmapv1.IdMapServiceClient
}

// NewClients returns the clients on conn.
func NewClients(conn grpc.ClientConnInterface) Clients {
	return Clients{registryv1.NewRegistryServiceClient(conn), gatev1.NewGateServiceClient(conn), idmapv1.NewIdMapServiceClient(conn)}
}

// Gathered is everything a proposal is made from.
type Gathered struct {
	Subject string
	// Active is the version in force; Latest the newest registered (a
	// SCHEDULED one when it differs).
	Active *registryv1.ContractVersion
	Latest int32
	// Canonical is the model Active's mapping targets (nil without one).
	Canonical *contractv1.CanonicalModel
	// Namespaces are the idmap namespaces Active names that exist.
	Namespaces []*idmapv1.Namespace
	// Partitions are the partitions read, sorted; Held the records read
	// from them; HeldTotal how many they hold in all.
	Partitions []string
	Held       []infer.Record
	HeldTotal  int64
	// Truncated counts the held records read whose raw bytes the gate
	// kept only the beginning of: left out of Held.
	Truncated int
	// Monitor is the gate's counters of the partitions read.
	Monitor []*gatev1.PartitionMonitor
	// Context are lines for the proposal's header: where the records came
	// from and what the monitor says.
	Context []string
}

// Gather reads the subject's active version, canonical model, idmap
// namespaces and held records.
func Gather(ctx context.Context, c Clients, subject string, o Options) (*Gathered, error) {
	limit := cmp.Or(o.Limit, DefaultLimit)
	if limit < 0 || limit > MaxLimit {
		return nil, fmt.Errorf("read at most 1 to %d held records, not %d", MaxLimit, limit)
	}
	g := &Gathered{Subject: subject}
	active, err := c.Registry.GetContract(ctx, &registryv1.GetContractRequest{Subject: subject})
	if err != nil {
		return nil, Wrap(fmt.Sprintf("get the active version of %s", subject), err)
	}
	g.Active = active.GetVersion()
	list, err := c.Registry.ListContracts(ctx, &registryv1.ListContractsRequest{Subject: subject})
	if err != nil {
		return nil, Wrap(fmt.Sprintf("list the versions of %s", subject), err)
	}
	for _, v := range list.GetVersions() {
		g.Latest = max(g.Latest, v.GetVersion())
	}
	ct := g.Active.GetContract()
	if m := ct.GetMapping(); m.GetCanonical() != "" {
		cm, err := c.Registry.GetCanonicalModel(ctx, &registryv1.GetCanonicalModelRequest{Name: m.GetCanonical(), Version: m.GetCanonicalVersion()})
		if err != nil {
			return nil, Wrap(fmt.Sprintf("get canonical model %s of %s", m.GetCanonical(), subject), err)
		}
		g.Canonical = cm.GetVersion().GetModel()
	}
	for _, ns := range namespacesOf(ct) {
		resp, err := c.Idmap.GetNamespace(ctx, &idmapv1.GetNamespaceRequest{Name: ns})
		if status.Code(err) == codes.NotFound {
			g.Context = append(g.Context, fmt.Sprintf("idmap has no namespace %q, which v%d names.", ns, g.Active.GetVersion()))
			continue
		}
		if err != nil {
			return nil, Wrap(fmt.Sprintf("get idmap namespace %s", ns), err)
		}
		g.Namespaces = append(g.Namespaces, resp.GetNamespace())
	}
	if err := g.readHeld(ctx, c.Gate, o.Partitions, limit); err != nil {
		return nil, err
	}
	g.describe()
	return g, nil
}

// namespacesOf lists the idmap namespaces a contract names, sorted.
func namespacesOf(ct *contractv1.Contract) []string {
	seen := map[string]bool{}
	var walk func([]*contractv1.Field)
	walk = func(fs []*contractv1.Field) {
		for _, f := range fs {
			if id := f.GetIdentifier(); id != nil {
				seen[id.GetNamespace()] = true
			}
			walk(f.GetFields())
			if it := f.GetItems(); it != nil {
				walk([]*contractv1.Field{it})
			}
		}
	}
	walk(ct.GetFields())
	for _, fm := range ct.GetMapping().GetFields() {
		if tr := fm.GetTranslate(); tr != nil {
			ns, _, _ := strings.Cut(tr.GetTo(), "/")
			seen[ns] = true
		}
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// readHeld reads the held records of the partitions asked for, or of the
// newest partitions holding records.
func (g *Gathered) readHeld(ctx context.Context, gate gatev1.GateServiceClient, parts []string, limit int) error {
	filter := &gatev1.QuarantineFilter{Subject: g.Subject, State: gatev1.QuarantineState_QUARANTINE_STATE_HELD}
	stats, err := gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: filter})
	if err != nil {
		return Wrap(fmt.Sprintf("count the held records of %s", g.Subject), err)
	}
	held := map[string]int64{}
	for _, p := range stats.GetByPartition() {
		held[p.GetKey()] = p.GetCount()
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(held))
		for k := range held {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var n int64
		for i := len(keys) - 1; i >= 0 && n < int64(limit); i-- {
			parts = append(parts, keys[i])
			n += held[keys[i]]
		}
	}
	parts = slices.Compact(slices.Sorted(slices.Values(parts)))
	g.Partitions = parts
	for _, p := range parts {
		g.HeldTotal += held[p]
	}
	// Newest partitions first, so a limit keeps the incident's records.
	for i := len(parts) - 1; i >= 0 && len(g.Held) < limit; i-- {
		f := &gatev1.QuarantineFilter{Subject: g.Subject, PartitionFrom: parts[i], PartitionTo: parts[i], State: gatev1.QuarantineState_QUARANTINE_STATE_HELD}
		tok := ""
		for len(g.Held) < limit {
			resp, err := gate.ListQuarantine(ctx, &gatev1.ListQuarantineRequest{Filter: f, PageSize: int32(min(pageSize, limit-len(g.Held))), PageToken: tok})
			if err != nil {
				return Wrap(fmt.Sprintf("read the held records of %s partition %s", g.Subject, parts[i]), err)
			}
			g.addHeld(resp.GetRecords())
			if tok = resp.GetNextPageToken(); tok == "" {
				break
			}
		}
	}
	if len(parts) > 0 {
		m, err := gate.GetMonitor(ctx, &gatev1.GetMonitorRequest{Subject: g.Subject, PartitionFrom: parts[0], PartitionTo: parts[len(parts)-1]})
		if err != nil {
			return Wrap(fmt.Sprintf("read the monitor of %s", g.Subject), err)
		}
		for _, pm := range m.GetPartitions() {
			if slices.Contains(parts, pm.GetPartition()) {
				g.Monitor = append(g.Monitor, pm)
			}
		}
	}
	return nil
}

// addHeld adds held records to infer from. A record whose raw bytes the
// gate kept only the beginning of is counted, not added: there is nothing
// to infer from, and no replay can release it.
func (g *Gathered) addHeld(records []*gatev1.QuarantinedRecord) {
	for _, q := range records {
		if q.GetRawTruncated() {
			g.Truncated++
			continue
		}
		g.Held = append(g.Held, infer.Record{Format: q.GetFormat(), Raw: q.GetRaw(), Partition: q.GetPartition(), ID: q.GetId(), Position: q.GetPosition()})
	}
}

// describe writes the context lines of the proposal's header.
func (g *Gathered) describe() {
	read := fmt.Sprintf("Read %d of the %d records the gate holds", len(g.Held), g.HeldTotal)
	if len(g.Partitions) > 0 {
		read += " in partitions " + strings.Join(g.Partitions, ", ")
	}
	g.Context = append(g.Context, read+".")
	if g.Truncated > 0 {
		g.Context = append(g.Context, fmt.Sprintf("Left out %d held records larger than the quarantine keeps (only their first bytes are kept; no replay can release them: discard them and have the source resend them).", g.Truncated))
	}
	var accepted, received int64
	for _, m := range g.Monitor {
		accepted += m.GetAccepted()
		received += m.GetReceived()
	}
	g.Context = append(g.Context, fmt.Sprintf("Accepted records are not kept by the gate (the pipeline owns them); its monitor counted %d accepted of %d received in those partitions.", accepted, received))
	if g.Latest > g.Active.GetVersion() {
		g.Context = append(g.Context, fmt.Sprintf("v%d is registered but not active yet: the registry compares a new version with it, not with v%d.", g.Latest, g.Active.GetVersion()))
	}
}

// Propose runs the inference on what was gathered. When an identifier now
// arrives as UUIDs that no rule reads, it fetches the known ids of the old
// format (its member list, or one side of a table) and searches for a
// UUIDv5 derivation of them.
func (g *Gathered) Propose(ctx context.Context, c Clients, o infer.Options) (*infer.Proposal, error) {
	in := infer.Input{Active: g.Active.GetContract(), ActiveVersion: g.Active.GetVersion(), Canonical: g.Canonical,
		Namespaces: g.Namespaces, Held: g.Held, Context: g.Context, Options: o}
	p, err := infer.Propose(in)
	if err != nil {
		return nil, err
	}
	known := map[string][]string{}
	for _, m := range p.Migrations {
		if !m.Rule.TableOnly() || g.formatKind(m) != idmapv1.FormatKind_FORMAT_KIND_UUID {
			continue
		}
		ids, err := KnownIDs(ctx, c.Idmap, g.nsByName(m.Namespace), m.Old, maxKnown)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			known[m.Namespace+"/"+m.Old] = ids
		}
	}
	if len(known) == 0 {
		return p, nil
	}
	in.Known = known
	return infer.Propose(in)
}

// formatKind is the kind of the format a migrated identifier now has.
func (g *Gathered) formatKind(m *infer.Migration) idmapv1.FormatKind {
	if m.CreateFormat != nil {
		return m.CreateFormat.GetKind()
	}
	for _, f := range g.nsByName(m.Namespace).GetFormats() {
		if f.GetName() == m.New {
			return f.GetKind()
		}
	}
	return idmapv1.FormatKind_FORMAT_KIND_UNSPECIFIED
}

func (g *Gathered) nsByName(name string) *idmapv1.Namespace {
	for _, ns := range g.Namespaces {
		if ns.GetName() == name {
			return ns
		}
	}
	return nil
}

// KnownIDs reads up to limit known ids of a format: its member list, or
// its side of the largest lookup table it is in. None is not an error.
func KnownIDs(ctx context.Context, c idmapv1.IdMapServiceClient, ns *idmapv1.Namespace, format string, limit int64) ([]string, error) {
	var best *idmapv1.TableInfo
	for _, t := range ns.GetTables() {
		if t.GetFromFormat() != format && t.GetToFormat() != format {
			continue
		}
		if t.GetMembers() {
			best = t
			break
		}
		if best == nil || t.GetPairs() > best.GetPairs() {
			best = t
		}
	}
	if best == nil {
		return nil, nil
	}
	other := best.GetToFormat()
	if other == format {
		other = best.GetFromFormat()
	}
	pairs, err := ExportPairs(ctx, c, &idmapv1.ExportPairsRequest{Namespace: ns.GetName(), FromFormat: format, ToFormat: other, Limit: limit})
	if err != nil {
		return nil, Wrap(fmt.Sprintf("read the known %s ids of %s", format, ns.GetName()), err)
	}
	ids := make([]string, len(pairs))
	for i, p := range pairs {
		ids[i] = p.From
	}
	return ids, nil
}

// ExportPairs reads a whole export.
func ExportPairs(ctx context.Context, c idmapv1.IdMapServiceClient, req *idmapv1.ExportPairsRequest) ([]infer.Pair, error) {
	stream, err := c.ExportPairs(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []infer.Pair
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range msg.GetPairs() {
			out = append(out, infer.Pair{From: p.GetFrom(), To: p.GetTo()})
		}
	}
}

// CallError is a failed call to a service with what it was for. Its
// message reads "get the active version of x: subject not found", not the
// transport's "rpc error: code = … desc = …", and it keeps the call's gRPC
// code, so the command exits as for the call itself.
type CallError struct {
	What string
	st   *status.Status
}

// Wrap wraps err with what the call was for: a CallError for a gRPC
// status, an ordinary wrapped error otherwise.
func Wrap(what string, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
		return &CallError{What: what, st: st}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Error implements error.
func (e *CallError) Error() string { return e.What + ": " + e.st.Message() }

// GRPCStatus gives the call's code with the whole message.
func (e *CallError) GRPCStatus() *status.Status { return status.New(e.st.Code(), e.Error()) }
