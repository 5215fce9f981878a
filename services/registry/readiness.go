package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/rpcerr"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Reasons of migration problems.
const (
	ReasonNamespaceNotFound  = "IDMAP_NAMESPACE_NOT_FOUND"
	ReasonFormatNotFound     = "IDMAP_FORMAT_NOT_FOUND"
	ReasonFormatKindMismatch = "IDMAP_FORMAT_KIND_MISMATCH"
	ReasonMigrationNotReady  = "MIGRATION_NOT_READY"
)

// idmapPeer asks idmap what the registry must know before it accepts or
// activates a version: whether the namespaces and formats a contract names
// exist and whether the translations of its mapping can run.
type idmapPeer struct {
	client  idmapv1.IdMapServiceClient
	timeout time.Duration
}

// translation is one identifier translation of a mapping.
type translation struct {
	// field is the canonical field it produces.
	field                         string
	from, to                      string // "namespace/format"
	namespace, fromFormat, target string
}

// translationsOf lists the translations of c's mapping by canonical field.
// Malformed references are left out: validation refuses them first.
func translationsOf(c *contractv1.Contract) []translation {
	var out []translation
	for field, fm := range c.GetMapping().GetFields() {
		tr := fm.GetTranslate()
		if tr == nil {
			continue
		}
		ns, from, ok1 := strings.Cut(tr.GetFrom(), "/")
		ns2, to, ok2 := strings.Cut(tr.GetTo(), "/")
		if !ok1 || !ok2 || ns != ns2 || ns == "" || from == "" || to == "" {
			continue
		}
		out = append(out, translation{field: field, from: tr.GetFrom(), to: tr.GetTo(), namespace: ns, fromFormat: from, target: to})
	}
	slices.SortFunc(out, func(a, b translation) int { return strings.Compare(a.field, b.field) })
	return out
}

// needsIdmap reports whether c names anything idmap must confirm.
func needsIdmap(c *contractv1.Contract) bool {
	return len(contract.Identifiers(c)) > 0 || len(translationsOf(c)) > 0
}

// migrationReport is idmap's answer about one contract.
type migrationReport struct {
	// problems refuse the version whatever its effective time: a namespace
	// or format that does not exist, a format whose ids cannot fill the
	// field.
	problems []*registryv1.Problem
	// translations say, per translation of the mapping, whether it can run.
	translations []*registryv1.TranslationReadiness
}

// pending returns the translations idmap cannot run yet.
func (r *migrationReport) pending() []*registryv1.TranslationReadiness {
	var out []*registryv1.TranslationReadiness
	for _, t := range r.GetTranslations() {
		if !t.GetReady() {
			out = append(out, t)
		}
	}
	return out
}

// GetTranslations is nil-safe.
func (r *migrationReport) GetTranslations() []*registryv1.TranslationReadiness {
	if r == nil {
		return nil
	}
	return r.translations
}

// unavailable turns a failed call to idmap into the status the registry's
// caller gets: retryable when idmap could not be reached in time.
func unavailable(what string, err error) error {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return rpcerr.Unavailable("idmap", fmt.Errorf("%s: %s", what, status.Convert(err).Message()))
	case codes.Canceled:
		return err
	}
	return fmt.Errorf("idmap: %s: %w", what, err)
}

// namespaces fetches each namespace c names: present, or nil when idmap
// says it does not exist.
func (p *idmapPeer) namespaces(ctx context.Context, names []string) (map[string]*idmapv1.Namespace, error) {
	out := make(map[string]*idmapv1.Namespace, len(names))
	for _, n := range names {
		if _, done := out[n]; done {
			continue
		}
		resp, err := p.client.GetNamespace(ctx, &idmapv1.GetNamespaceRequest{Name: n}, grpc.WaitForReady(true))
		switch {
		case status.Code(err) == codes.NotFound:
			out[n] = nil
		case err != nil:
			return nil, unavailable(fmt.Sprintf("read namespace %q", n), err)
		default:
			out[n] = resp.GetNamespace()
		}
	}
	return out, nil
}

// check asks idmap about c. model, when not nil, is the canonical model
// the mapping fills; with it, formats whose ids cannot fill their fields
// are found too. A missing namespace is named once, at its first use.
func (p *idmapPeer) check(ctx context.Context, c *contractv1.Contract, model *contractv1.CanonicalModel, modelVersion int32) (*migrationReport, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	ids := contract.Identifiers(c)
	trs := translationsOf(c)
	var names []string
	for _, id := range ids {
		names = append(names, id.Identifier.GetNamespace())
	}
	for _, t := range trs {
		names = append(names, t.namespace)
	}
	nss, err := p.namespaces(ctx, names)
	if err != nil {
		return nil, err
	}
	r := &migrationReport{}
	reported := map[string]bool{}
	missing := func(path, ns, format, use string) bool {
		n, ok := nss[ns]
		switch {
		case !ok:
			return false
		case n == nil:
			if !reported[ns] {
				reported[ns] = true
				r.problems = append(r.problems, &registryv1.Problem{Reason: ReasonNamespaceNotFound, Path: path,
					Message: fmt.Sprintf("%s names idmap namespace %q, which does not exist; create it with its formats first (seam idmap namespace create %s --format %s:KIND …)", use, ns, ns, format)})
			}
			return true
		case !slices.ContainsFunc(n.GetFormats(), func(f *idmapv1.Format) bool { return f.GetName() == format }):
			key := ns + "/" + format
			if !reported[key] {
				reported[key] = true
				r.problems = append(r.problems, &registryv1.Problem{Reason: ReasonFormatNotFound, Path: path,
					Message: fmt.Sprintf("%s names format %q of idmap namespace %q, which has formats %s; use one of them, or add it with `seam idmap namespace add-format %s --format %s:KIND[:PATTERN]`",
						use, format, ns, strings.Join(formatNames(n), ", "), ns, format)})
			}
			return true
		}
		return false
	}
	// Paths are the contract's document paths, as validation names them.
	for ref := range contract.Fields(c.GetFields()) {
		id := ref.Field.GetIdentifier()
		if id == nil {
			continue
		}
		missing("contract."+ref.Path+".identifier", id.GetNamespace(), id.GetFormat(), "field "+ref.Name)
	}
	var queries []*idmapv1.RouteQuery
	var asked []translation
	for _, t := range trs {
		path := "contract.mapping.fields." + t.field + ".translate"
		bad := missing(path+".from", t.namespace, t.fromFormat, "the translation of "+t.field)
		bad = missing(path+".to", t.namespace, t.target, "the translation of "+t.field) || bad
		tr := &registryv1.TranslationReadiness{Field: t.field, From: t.from, To: t.to}
		r.translations = append(r.translations, tr)
		if bad {
			tr.Message = fmt.Sprintf("idmap has no %s or no %s", t.from, t.to)
			continue
		}
		queries = append(queries, &idmapv1.RouteQuery{Namespace: t.namespace, FromFormat: t.fromFormat, ToFormat: t.target})
		asked = append(asked, t)
	}
	if len(queries) > 0 {
		resp, err := p.client.DescribeRoutes(ctx, &idmapv1.DescribeRoutesRequest{Queries: queries}, grpc.WaitForReady(true))
		if err != nil {
			return nil, unavailable("describe the routes of the migration", err)
		}
		if len(resp.GetRoutes()) != len(queries) {
			return nil, fmt.Errorf("idmap answered %d routes for %d queries", len(resp.GetRoutes()), len(queries))
		}
		for i, route := range resp.GetRoutes() {
			tr := findTranslation(r.translations, asked[i].field)
			tr.Ready = route.GetState() == idmapv1.RouteState_ROUTE_STATE_READY
			tr.Strategy, tr.TablePairs, tr.Message = route.GetStrategy(), route.GetTablePairs(), route.GetMessage()
		}
	}
	if model != nil && len(trs) > 0 {
		r.problems = append(r.problems, kindProblems(c, model, modelVersion, nss)...)
	}
	return r, nil
}

func findTranslation(trs []*registryv1.TranslationReadiness, field string) *registryv1.TranslationReadiness {
	for _, t := range trs {
		if t.GetField() == field {
			return t
		}
	}
	return nil
}

func formatNames(n *idmapv1.Namespace) []string {
	names := make([]string, len(n.GetFormats()))
	for i, f := range n.GetFormats() {
		names[i] = f.GetName()
	}
	return names
}

// kindProblems compiles the mapping against the namespaces idmap has, the
// way the adapter will, and keeps the problems only idmap's formats cause:
// ids of a format that cannot fill the source or canonical field.
func kindProblems(c *contractv1.Contract, model *contractv1.CanonicalModel, version int32, nss map[string]*idmapv1.Namespace) []*registryv1.Problem {
	catalog := mapping.StaticCatalog{}
	for name, n := range nss {
		if n != nil {
			catalog[name] = n.GetFormats()
		}
	}
	_, problems, err := mapping.Draft(c, model, version, catalog)
	if err != nil {
		return nil // the mapping does not lay out; validation says why
	}
	var out []*registryv1.Problem
	for _, pr := range problems {
		if pr.Reason == mapping.ReasonTypeMismatch && strings.Contains(pr.Path, ".translate.") {
			out = append(out, &registryv1.Problem{Reason: ReasonFormatKindMismatch, Path: "contract." + pr.Path, Message: pr.Message})
		}
	}
	return out
}

// requireMigration applies idmap's answer to a decision. A namespace or
// format that does not exist refuses the version whatever its effective
// time. A translation idmap cannot run yet refuses a version that would
// take effect now; a version that takes effect later is accepted, and the
// scheduler holds it at its effective time until idmap can run it.
func (d *decision) requireMigration(subject string, r *migrationReport) {
	if r == nil || d.unchanged {
		return
	}
	if refusedForGood(d.refusal) {
		return
	}
	added := slices.Clone(r.problems)
	if d.version != nil && d.version.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
		for _, t := range r.pending() {
			added = append(added, &registryv1.Problem{Reason: ReasonMigrationNotReady, Path: "contract.mapping.fields." + t.GetField() + ".translate",
				Message: fmt.Sprintf("the migration cannot run yet: %s (%s→%s for %s); until it can, register with a later effective time and the version waits SCHEDULED",
					t.GetMessage(), t.GetFrom(), t.GetTo(), t.GetField())})
		}
	}
	if len(added) == 0 {
		return
	}
	d.problems = append(d.problems, added...)
	d.version = nil
	d.refusal = refusal(subject, d)
}

// refusedForGood reports whether a decision's refusal is one idmap's
// answer cannot change: an invalid contract or a caller who may not.
func refusedForGood(refusal error) bool {
	switch status.Code(refusal) {
	case codes.InvalidArgument, codes.PermissionDenied:
		return true
	}
	return false
}

// holdReason says why a due version may not activate yet, or "" when its
// migration is ready (or it has none).
func holdReason(r *migrationReport) string {
	var parts []string
	for _, p := range r.problems {
		parts = append(parts, p.GetMessage())
	}
	for _, t := range r.pending() {
		parts = append(parts, fmt.Sprintf("%s: %s", t.GetField(), t.GetMessage()))
	}
	return strings.Join(parts, "; ")
}

// askIdmap is check through the server's peer; nil without a peer or when c
// names nothing idmap must confirm.
func (s *Server) askIdmap(ctx context.Context, c *contractv1.Contract, model *registryv1.CanonicalModelVersion) (*migrationReport, error) {
	if s.idmap == nil || !needsIdmap(c) {
		return nil, nil
	}
	return s.idmap.check(ctx, c, model.GetModel(), model.GetVersion())
}

// migrationCheck asks idmap about a decided proposal, unless the decision
// already refuses it for reasons idmap cannot change or nothing changes.
func (s *Server) migrationCheck(ctx context.Context, d *decision, c *contractv1.Contract,
	model func(name string, version int32) *registryv1.CanonicalModelVersion) (*migrationReport, error) {
	if d.unchanged {
		return nil, nil
	}
	if refusedForGood(d.refusal) {
		return nil, nil
	}
	var mv *registryv1.CanonicalModelVersion
	if m := c.GetMapping(); m.GetCanonical() != "" {
		mv = model(m.GetCanonical(), m.GetCanonicalVersion())
	}
	return s.askIdmap(ctx, c, mv)
}

// errRetryRegistration is a registration whose subject changed between
// asking idmap and writing, so idmap was not asked about what is written.
var errRetryRegistration = rpcerr.WithReason(codes.Aborted, "SUBJECT_CHANGED", "the subject changed while the registration was being checked; send it again", nil)

// registrationMigration asks idmap about a contract about to be registered,
// deciding on the read model whether there is anything to ask; the write
// transaction decides again on the store and applies the answer.
func (s *Server) registrationMigration(ctx context.Context, p *auth.Principal, c *contractv1.Contract, req *registryv1.RegisterContractRequest) (*migrationReport, error) {
	if s.idmap == nil || !needsIdmap(c) {
		return nil, nil
	}
	txn := s.model.snapshot()
	subj, history, err := subjectWithHistory(txn, c.GetSubject())
	if err != nil {
		return nil, err
	}
	model := func(name string, version int32) *registryv1.CanonicalModelVersion {
		return s.modelVersion(txn, name, version)
	}
	d, err := decide(proposal{principal: p, now: s.clock(), contract: c, effective: req.GetEffectiveTime(), override: req.GetOverride(),
		subject: subj, history: history, model: model})
	if err != nil {
		return nil, err
	}
	return s.migrationCheck(ctx, d, c, model)
}
