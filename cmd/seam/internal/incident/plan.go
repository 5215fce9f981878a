package incident

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/seamdata/seam/cmd/seam/internal/standing"
	"os"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	idmapcmd "github.com/seamdata/seam/cmd/seam/internal/command/idmap"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/proposal"
	"github.com/seamdata/seam/core/infer"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Incident is one view of an ongoing incident: what changed and since
// when, what is held, who is affected, the proposed fix, how much of the
// window it would release, and the steps that carry it out.
type Incident struct {
	Subject string `json:"subject"`
	// Active is the version in force; Next the number the fix would get.
	Active int32 `json:"active_version"`
	Next   int32 `json:"next_version"`
	// Containment is the source's containment (nil when never contained).
	Containment *gatev1.Containment `json:"-"`
	// Changed are the alerts that say the source changed, oldest first;
	// Since is the first partition they (or the held records) concern.
	Changed []*gatev1.Alert `json:"-"`
	Since   string          `json:"since"`
	// Held counts what the gate holds of the subject: in all, per
	// partition and per reason.
	Held       int64            `json:"held"`
	HeldByPart map[string]int64 `json:"held_by_partition"`
	HeldByWhy  map[string]int64 `json:"held_by_reason"`
	// Window is the incident's partitions, from Since to the newest
	// holding records: what the fix replays, whatever their number of
	// records. Sample is the partitions the proposal read Read records
	// from (--limit bounds it, never the window).
	Window      []string                       `json:"window"`
	Sample      []string                       `json:"sample"`
	Read        int                            `json:"read"`
	BlastRadius []*registryv1.AffectedConsumer `json:"-"`
	// DataFrom is the data date the next version judges partitions from:
	// the start of the incident's first partition, for a contract with a
	// partition time (nil otherwise).
	DataFrom *timestamppb.Timestamp `json:"-"`
	// Proposal is the inferred next version; Check the registry's verdict
	// on it (with the notice waived when a reason was given).
	Proposal *infer.Proposal                   `json:"-"`
	Check    *registryv1.CheckContractResponse `json:"-"`
	// Waived is the verdict with the notice waived by --reason (nil
	// without a reason, or when no notice is owed).
	Waived *registryv1.CheckContractResponse `json:"-"`
	// Migrations say per identifier how idmap will translate it.
	Migrations []*MigrationPlan `json:"migrations"`
	// DryRun is the window replayed through the fix, simulated.
	DryRun    *infer.Simulation `json:"dry_run,omitempty"`
	DryRunErr string            `json:"dry_run_error,omitempty"`
	// Partitions are the window's partitions as the gate stands them.
	Partitions []standing.Partition `json:"partitions"`
	// Steps carry out the fix, in order.
	Steps []*Step `json:"steps"`
	// ReplayID names the replay of the window, the same on every run of
	// the same fix so running it again releases nothing twice.
	ReplayID string `json:"replay_id"`
	// File is where the proposal is written for the register command.
	File string `json:"file"`
	// Replay is the replay's summary once --apply ran it; Registered the
	// version its register step got.
	Replay     *gatev1.ReplaySummary `json:"-"`
	Registered int32                 `json:"registered_version,omitempty"`
	// Progress is the replay's partitions as it went through them.
	Progress []*gatev1.ReplayProgress `json:"-"`
	progress func(*gatev1.ReplayProgress)
	// OnStep and OnProgress, when set, are told by Apply of each step as
	// it ends (done before, carried out or failed) and of the replay's
	// progress after each partition: the console shows them as they come.
	OnStep     func(i int, s *Step)         `json:"-"`
	OnProgress func(*gatev1.ReplayProgress) `json:"-"`
}

// MigrationPlan is how one migrated identifier gets translated.
type MigrationPlan struct {
	*infer.Migration `json:"-"`
	// FormatExists is whether idmap has the new format already.
	FormatExists bool `json:"format_exists"`
	// Ready is whether idmap can translate New→Target now, and How.
	Ready bool   `json:"ready"`
	How   string `json:"how"`
	// Rule is the rule to set, when one answers; Pairs the table to
	// import otherwise (from --pairs, or generated from a UUIDv5 rule
	// and the known ids).
	Rule      *idmapv1.Rule `json:"-"`
	RuleText  string        `json:"rule,omitempty"`
	Samples   []string      `json:"samples,omitempty"`
	Pairs     []infer.Pair  `json:"-"`
	PairsFrom string        `json:"pairs_from,omitempty"`
	// Missing says what is still needed when neither is at hand.
	Missing string `json:"missing,omitempty"`
}

// MarshalJSON writes the migration with its plan.
func (mp *MigrationPlan) MarshalJSON() ([]byte, error) {
	j := proposal.MigrationsJSON([]*infer.Migration{mp.Migration})[0]
	j["format_exists"], j["ready"], j["how"] = mp.FormatExists, mp.Ready, mp.How
	if mp.RuleText != "" {
		j["rule_to_set"], j["samples"] = mp.RuleText, mp.Samples
	}
	if len(mp.Pairs) > 0 {
		j["pairs"], j["pairs_from"] = len(mp.Pairs), mp.PairsFrom
	}
	if mp.Missing != "" {
		j["missing"] = mp.Missing
	}
	return json.Marshal(j)
}

// Step is one thing the fix does.
type Step struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// Done is set when the step has nothing left to do; Why says so.
	Done bool   `json:"done"`
	Why  string `json:"why,omitempty"`
	// Result is what --apply did.
	Result string `json:"result,omitempty"`
	Failed string `json:"failed,omitempty"`
	run    func(ctx context.Context) (string, error)
}

// Options are the choices of `seam incident`.
type Options struct {
	Proposal proposal.Options
	Pairs    string
	// PairsData is the pairs CSV's content when it came without a file
	// (the console's upload); Pairs then names it.
	PairsData []byte
	NoHeader  bool
	Reason    string
	Out       string
	ReplayID  string
	InferArgs string // the --partition flags, repeated in printed commands
}

// Build gathers everything and plans the steps.
func Build(ctx context.Context, c proposal.Clients, subject string, o Options) (*Incident, error) {
	g, err := proposal.Gather(ctx, c, subject, o.Proposal)
	if err != nil {
		return nil, err
	}
	inc := &Incident{Subject: subject, Active: g.Active.GetVersion(), Next: max(g.Latest, g.Active.GetVersion()) + 1,
		Sample: g.Partitions, Read: len(g.Held), HeldByPart: map[string]int64{}, HeldByWhy: map[string]int64{}}
	if err := inc.state(ctx, c); err != nil {
		return nil, err
	}
	if len(g.Held) > 0 {
		if inc.Proposal, err = g.Propose(ctx, c, o.Proposal.Options); err != nil {
			return nil, err
		}
	}
	if err := inc.since(ctx, c, g); err != nil {
		return nil, err
	}
	inc.window(g, o)
	if inc.Partitions, err = standing.Read(ctx, c.Gate, subject, inc.Window); err != nil {
		return nil, err
	}
	p := inc.Proposal
	if p == nil {
		return inc, nil
	}
	version := inc.Active
	if len(p.Changes) > 0 {
		version = inc.Next
		br, err := c.Registry.GetBlastRadius(ctx, &registryv1.GetBlastRadiusRequest{Subject: subject, Proposed: p.Contract})
		if err != nil {
			return nil, proposal.Wrap(fmt.Sprintf("blast radius of %s", subject), err)
		}
		inc.BlastRadius = br.GetConsumers()
		if inc.Check, err = c.Registry.CheckContract(ctx, &registryv1.CheckContractRequest{Contract: p.Contract}); err != nil {
			return nil, proposal.Wrap(fmt.Sprintf("check the proposed version of %s", subject), err)
		}
		inc.DataFrom = inc.dataEffective(p.Contract)
		if o.Reason != "" && (inc.Check.GetNoticeOwed() != "" || inc.DataFrom != nil) {
			// Would the notice be waived, and the version judge the
			// incident's days, for this caller? Only an admin may.
			req := &registryv1.CheckContractRequest{Contract: p.Contract, DataEffectiveTime: inc.DataFrom}
			if inc.Check.GetNoticeOwed() != "" {
				req.Override = &registryv1.NoticeOverride{Reason: o.Reason}
			}
			if inc.DataFrom != nil {
				req.DataEffectiveReason = o.Reason
			}
			waived, err := c.Registry.CheckContract(ctx, req)
			if err != nil {
				return nil, proposal.Wrap(fmt.Sprintf("check the proposed version of %s with the notice waived", subject), err)
			}
			inc.Waived = waived
		}
		if err := inc.migrations(ctx, c, g, o); err != nil {
			return nil, err
		}
	}
	inc.dryRun(ctx, c, g)
	if len(p.Changes) == 0 && !inc.Containment.GetContained() && inc.DryRun.GetPassed() == 0 {
		// Nothing a version or a replay would release: no fix to offer.
		return inc, nil
	}
	inc.File = cmp.Or(o.Out, fmt.Sprintf("%s.v%d.yaml", subject, inc.Next))
	inc.ReplayID = cmp.Or(o.ReplayID, fmt.Sprintf("incident-%s-v%d-%s..%s", subject, version, inc.Window[0], inc.Window[len(inc.Window)-1]))
	inc.plan(c, o)
	return inc, nil
}

// state reads the containment, the alerts and the held counts.
func (inc *Incident) state(ctx context.Context, c proposal.Clients) error {
	cs, err := c.Gate.ListContainments(ctx, &gatev1.ListContainmentsRequest{})
	if err != nil {
		return proposal.Wrap("list containments", err)
	}
	for _, ct := range cs.GetContainments() {
		if ct.GetSubject() == inc.Subject {
			inc.Containment = ct
		}
	}
	// Only alerts that still hold: a resolved one belongs to a story that
	// ended.
	alerts, err := c.Gate.ListAlerts(ctx, &gatev1.ListAlertsRequest{Subject: inc.Subject, Limit: 1000,
		States: []gatev1.AlertState{gatev1.AlertState_ALERT_STATE_OPEN, gatev1.AlertState_ALERT_STATE_ACKNOWLEDGED}})
	if err != nil {
		return proposal.Wrap(fmt.Sprintf("list the alerts of %s", inc.Subject), err)
	}
	for _, a := range alerts.GetAlerts() {
		if changeKinds[a.GetKind()] {
			inc.Changed = append(inc.Changed, a)
		}
	}
	slices.SortStableFunc(inc.Changed, func(a, b *gatev1.Alert) int {
		return cmp.Or(strings.Compare(a.GetPartition(), b.GetPartition()), cmp.Compare(a.GetSequence(), b.GetSequence()))
	})
	st, err := c.Gate.GetQuarantineStats(ctx, &gatev1.GetQuarantineStatsRequest{Filter: &gatev1.QuarantineFilter{Subject: inc.Subject, State: gatev1.QuarantineState_QUARANTINE_STATE_HELD}})
	if err != nil {
		return proposal.Wrap(fmt.Sprintf("count the held records of %s", inc.Subject), err)
	}
	inc.Held = st.GetTotal()
	for _, p := range st.GetByPartition() {
		inc.HeldByPart[p.GetKey()] = p.GetCount()
	}
	for _, r := range st.GetByReason() {
		inc.HeldByWhy[r.GetKey()] = r.GetCount()
	}
	return nil
}

// changeKinds are the alert kinds that say the source changed.
var changeKinds = map[string]bool{"UNANNOUNCED_CHANGE": true, "MATCH_RATE": true, "NULL_RATE": true, "ROW_COUNT": true}

// migrations decides per migrated identifier what idmap needs: a format,
// then a rule (read off the values, or off --pairs) or a table (from
// --pairs, or generated from a UUIDv5 rule and the known ids).
func (inc *Incident) migrations(ctx context.Context, c proposal.Clients, g *proposal.Gathered, o Options) error {
	var filePairs []infer.Pair
	switch {
	case o.PairsData != nil:
		var err error
		if filePairs, err = idmapcmd.ReadPairsCSV(bytes.NewReader(o.PairsData), !o.NoHeader, o.Pairs); err != nil {
			return err
		}
	case o.Pairs != "":
		f, err := os.Open(o.Pairs)
		if err != nil {
			return exit.Usagef("--pairs: %w", err)
		}
		defer f.Close()
		if filePairs, err = idmapcmd.ReadPairsCSV(f, !o.NoHeader, o.Pairs); err != nil {
			return err
		}
	}
	for _, m := range inc.Proposal.Migrations {
		mp := &MigrationPlan{Migration: m, FormatExists: m.CreateFormat == nil}
		inc.Migrations = append(inc.Migrations, mp)
		if m.Target == "" {
			mp.Ready, mp.How = true, "nothing translates it"
			continue
		}
		if mp.FormatExists {
			routes, err := c.Idmap.DescribeRoutes(ctx, &idmapv1.DescribeRoutesRequest{Queries: []*idmapv1.RouteQuery{{Namespace: m.Namespace, FromFormat: m.New, ToFormat: m.Target}}})
			if err != nil {
				return proposal.Wrap(fmt.Sprintf("ask idmap about %s/%s→%s", m.Namespace, m.New, m.Target), err)
			}
			if r := routes.GetRoutes()[0]; r.GetState() == idmapv1.RouteState_ROUTE_STATE_READY {
				mp.Ready, mp.How = true, "idmap translates it already ("+r.GetStrategy()+")"
				continue
			}
		}
		r := m.Rule
		if r.Rule != nil && r.Answers && m.Target == m.Old {
			mp.Rule, mp.Samples, mp.How = r.Rule, r.Samples, r.Why
			mp.RuleText = infer.DescribeRule(r.Rule)
			continue
		}
		if len(filePairs) > 0 {
			nsp := inc.namespace(g, m)
			finding, err := infer.InferRule(infer.RuleQuery{Namespace: m.Namespace, From: proposal.FormatOf(nsp, m.New), To: proposal.FormatOf(nsp, m.Target), Pairs: filePairs})
			if err == nil && finding.Rule != nil && finding.Answers && finding.Wrong == 0 {
				mp.Rule, mp.Samples, mp.RuleText = finding.Rule, finding.Samples, infer.DescribeRule(finding.Rule)
				mp.How = finding.Why + fmt.Sprintf(" (read off the %d pairs of %s)", len(filePairs), o.Pairs)
				continue
			}
			mp.Pairs, mp.PairsFrom = filePairs, o.Pairs
			mp.How = fmt.Sprintf("a lookup table of the %d pairs of %s (%s)", len(filePairs), o.Pairs, r.Reason)
			continue
		}
		if v5 := r.Rule.GetUuidV5(); v5 != nil && m.Target == m.Old {
			known, err := proposal.KnownIDs(ctx, c.Idmap, inc.namespace(g, m), m.Old, 1_000_000)
			if err != nil {
				return err
			}
			pairs, err := infer.UUIDv5Pairs(v5.GetNamespaceUuid(), known)
			if err != nil {
				return err
			}
			mp.Pairs, mp.PairsFrom = pairs, fmt.Sprintf("UUIDv5 of the %d known %s ids", len(known), m.Old)
			mp.How = r.Why
			continue
		}
		mp.Missing = fmt.Sprintf("only a lookup table will do (%s): give the pairs with --pairs FILE.csv (columns %s,%s)",
			r.Reason, m.New, m.Target)
	}
	return nil
}

func (inc *Incident) namespace(g *proposal.Gathered, m *infer.Migration) *idmapv1.Namespace {
	for _, ns := range g.Namespaces {
		if ns.GetName() == m.Namespace {
			out := &idmapv1.Namespace{Name: ns.GetName(), Formats: slices.Clone(ns.GetFormats()), Tables: ns.GetTables()}
			if m.CreateFormat != nil {
				out.Formats = append(out.Formats, m.CreateFormat)
			}
			return out
		}
	}
	return &idmapv1.Namespace{Name: m.Namespace}
}

// dryRun replays the records read through the proposal: checks, mapping,
// and each translation by idmap where it is ready, else by the rule or
// pairs the fix would load.
func (inc *Incident) dryRun(ctx context.Context, c proposal.Clients, g *proposal.Gathered) {
	var local infer.LocalRoutes
	namespaces := slices.Clone(g.Namespaces)
	for _, mp := range inc.Migrations {
		ns := inc.namespace(g, mp.Migration)
		for i, n := range namespaces {
			if n.GetName() == ns.GetName() {
				namespaces[i] = ns
			}
		}
		switch {
		case mp.Ready:
		case mp.Rule != nil:
			if err := local.AddRule(ns, mp.Rule); err != nil {
				inc.DryRunErr = fmt.Sprintf("the proposed rule does not compile: %v", err)
				return
			}
		case len(mp.Pairs) > 0:
			local.AddPairs(mp.Namespace, mp.New, mp.Target, mp.Pairs)
		}
	}
	tr := func(ns, from, to string, ids []string) ([]string, []idmapv1.TranslateStatus, error) {
		if local.Has(ns, from, to) {
			return local.Translate(ns, from, to, ids)
		}
		var vals []string
		var sts []idmapv1.TranslateStatus
		for i := 0; i < len(ids); i += translateBatch {
			resp, err := c.Idmap.Translate(ctx, &idmapv1.TranslateRequest{Namespace: ns, FromFormat: from, ToFormat: to, Ids: ids[i:min(i+translateBatch, len(ids))]})
			if status.Code(err) == codes.FailedPrecondition || status.Code(err) == codes.InvalidArgument || status.Code(err) == codes.NotFound {
				return nil, nil, fmt.Errorf("%s/%s→%s: %w", ns, from, to, infer.ErrNoRoute)
			}
			if err != nil {
				return nil, nil, err
			}
			vals, sts = append(vals, resp.GetValues()...), append(sts, resp.GetStatuses()...)
		}
		return vals, sts, nil
	}
	sim, err := infer.Simulate(inc.Proposal.Contract, g.Canonical, namespaces, tr, g.Held)
	if err != nil {
		inc.DryRunErr = err.Error()
		return
	}
	inc.DryRun = sim
}

// translateBatch is the most ids one Translate call carries.
const translateBatch = 100_000
