package registry

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// errLineageCycle reports consumers that read, directly or not, what they
// produce; no rerun order exists for them.
var errLineageCycle = errors.New("lineage cycle")

// fieldsOverlap reports whether a consumer reading field read is affected by
// a change to field changed: the same field, or one nested in the other
// ("customer" covers "customer.id").
func fieldsOverlap(read, changed string) bool {
	return read == changed || strings.HasPrefix(read, changed+".") || strings.HasPrefix(changed, read+".")
}

// changedField returns the (dotted) field a classifier change path points
// at: "fields.customer_id.type" is "customer_id", and nested members
// "fields.customer.fields.id.type" are "customer.id". ok is false for paths
// outside the fields (compatibility, key set, mapping…), which concern the
// whole subject.
func changedField(path string) (field string, ok bool) {
	parts := strings.Split(path, ".")
	var names []string
	for i := 0; i+1 < len(parts); i += 2 {
		if parts[i] != "fields" {
			break
		}
		names = append(names, parts[i+1])
	}
	if len(names) == 0 {
		return "", false
	}
	return strings.Join(names, "."), true
}

// breakingFields returns the fields the breaking changes touch, in order of
// appearance; whole is true when a breaking change concerns the whole
// subject rather than particular fields.
func breakingFields(changes []*registryv1.Change) (fields []string, whole bool) {
	for _, c := range changes {
		if c.GetLevel() != registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
			continue
		}
		f, ok := changedField(c.GetPath())
		if !ok {
			whole = true
			continue
		}
		if !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	return fields, whole
}

// canonicalReach is what a change to a subject's fields reaches in one
// canonical model through the subject's mappings: the canonical fields
// those source fields feed, each with the source fields feeding it. Whole
// is set when the change concerns the whole subject, so every reader of
// the model is reached.
type canonicalReach struct {
	model  string
	whole  bool
	fields map[string][]string
}

// srcRef finds the source fields a CEL mapping expression reads:
// src.customer_id, src.address.zip, src["customer_id"].
var srcRef = regexp.MustCompile(`\bsrc(?:\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)|\[\s*"([^"]+)"\s*\])`)

// sourcesOf lists the source fields a canonical field's mapping reads.
func sourcesOf(fm *contractv1.FieldMapping) []string {
	var out []string
	if f := fm.GetFrom(); f != "" {
		out = append(out, f)
	}
	for _, m := range srcRef.FindAllStringSubmatch(fm.GetExpr(), -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// feeds maps changed source fields through mappings to the canonical
// fields they feed. A nil changed with whole set is a change to the whole
// subject. Mappings to the same model are merged; models nothing reaches
// are left out.
func feeds(mappings []*contractv1.Mapping, changed []string, whole bool) []canonicalReach {
	var out []canonicalReach
	at := map[string]int{}
	for _, m := range mappings {
		model := m.GetCanonical()
		if model == "" {
			continue
		}
		i, ok := at[model]
		if !ok {
			i = len(out)
			at[model] = i
			out = append(out, canonicalReach{model: model, fields: map[string][]string{}})
		}
		r := &out[i]
		r.whole = r.whole || whole
		for cf, fm := range m.GetFields() {
			for _, src := range sourcesOf(fm) {
				for _, f := range changed {
					if fieldsOverlap(src, f) && !slices.Contains(r.fields[cf], f) {
						r.fields[cf] = append(r.fields[cf], f)
					}
				}
			}
		}
	}
	return slices.DeleteFunc(out, func(r canonicalReach) bool { return !r.whole && len(r.fields) == 0 })
}

// lineageMappings are the mappings a change of subject may flow through:
// the proposed version's, the latest registered one's and the active
// one's (a source field feeds the canonical model through whichever
// version consumers read today).
func lineageMappings(history []*registryv1.ContractVersion, active int32, proposed *contractv1.Contract) []*contractv1.Mapping {
	var out []*contractv1.Mapping
	add := func(m *contractv1.Mapping) {
		if m != nil && !slices.ContainsFunc(out, func(o *contractv1.Mapping) bool { return proto.Equal(o, m) }) {
			out = append(out, m)
		}
	}
	add(proposed.GetMapping())
	if n := len(history); n > 0 {
		add(history[n-1].GetContract().GetMapping())
	}
	for _, v := range history {
		if v.GetVersion() == active {
			add(v.GetContract().GetMapping())
		}
	}
	return out
}

// canonicalModelsOf names the canonical models a subject's records are
// released into: those of version (0: the active one, or the latest when
// none is active).
func canonicalModelsOf(history []*registryv1.ContractVersion, version, active int32) []string {
	if version == 0 {
		version = active
	}
	var pick *registryv1.ContractVersion
	for _, v := range history {
		if v.GetVersion() == version || (version == 0 && v == history[len(history)-1]) {
			pick = v
		}
	}
	if m := pick.GetContract().GetMapping().GetCanonical(); m != "" {
		return []string{m}
	}
	return nil
}

// reach is one consumer found by a lineage walk.
type reach struct {
	affected *registryv1.AffectedConsumer
	consumer *registryv1.Consumer
}

// blastRadius returns every consumer affected by a change to subject —
// limited to fields when fields is not empty — directly, through the
// canonical fields the change reaches (see feeds), or through the
// datasets of affected consumers, nearest first, each with the shortest
// path by which it is reached.
func blastRadius(consumers []*registryv1.Consumer, subject string, fields []string, canonical []canonicalReach) []*registryv1.AffectedConsumer {
	sorted := slices.Clone(consumers)
	slices.SortFunc(sorted, func(a, b *registryv1.Consumer) int { return strings.Compare(a.GetName(), b.GetName()) })

	seen := map[string]bool{}
	var level []reach
	for _, c := range sorted {
		a := directReach(c, subject, fields, canonical)
		if a == nil {
			continue
		}
		seen[c.GetName()] = true
		level = append(level, reach{affected: a, consumer: c})
	}
	var out []*registryv1.AffectedConsumer
	for len(level) > 0 {
		var next []reach
		for _, r := range level {
			out = append(out, r.affected)
		}
		for _, r := range level {
			for _, dataset := range r.consumer.GetProduces() {
				for _, c := range sorted {
					if seen[c.GetName()] {
						continue
					}
					var usages []registryv1.UsageKind
					for _, in := range c.GetInputs() {
						if in.GetDataset() == dataset {
							usages = appendUsage(usages, in.GetUsage())
						}
					}
					if usages == nil {
						continue
					}
					seen[c.GetName()] = true
					path := append(slices.Clone(r.affected.GetPath()), dataset, c.GetName())
					next = append(next, reach{consumer: c, affected: &registryv1.AffectedConsumer{
						Consumer: c.GetName(),
						Path:     path,
						Depth:    r.affected.GetDepth() + 1,
						Fields:   []string{dataset},
						Usages:   usages,
						Owner:    c.GetOwner(),
					}})
				}
			}
		}
		level = next
	}
	return out
}

// directReach returns how c reads fields of subject, directly or as the
// canonical fields they feed, or nil when it reads none of them. A direct
// read of the subject makes the path; otherwise the path runs through the
// first canonical field reached.
func directReach(c *registryv1.Consumer, subject string, fields []string, canonical []canonicalReach) *registryv1.AffectedConsumer {
	var matched, matchedCanonical []string
	var usages []registryv1.UsageKind
	direct, whole := false, false
	var via []string // subject field, canonical field
	for _, in := range c.GetInputs() {
		if model := in.GetCanonical(); model != "" {
			hit := false
			for _, r := range canonical {
				if r.model != model {
					continue
				}
				for _, cf := range canonicalHits(r, in.GetFields()) {
					hit = true
					q := model + "." + cf
					if !slices.Contains(matchedCanonical, q) {
						matchedCanonical = append(matchedCanonical, q)
					}
					if via == nil {
						via = []string{subject, q}
						if srcs := r.fields[cf]; len(srcs) > 0 {
							via[0] = subject + "." + srcs[0]
						}
					}
				}
				if r.whole && !hit {
					hit = true
					if via == nil {
						via = []string{subject, model}
					}
				}
			}
			if hit {
				usages = appendUsage(usages, in.GetUsage())
			}
			continue
		}
		if in.GetSubject() != subject {
			continue
		}
		hit := false
		switch {
		case len(fields) == 0 && len(in.GetFields()) == 0:
			hit, whole = true, true
		case len(fields) == 0:
			hit = true
			for _, f := range in.GetFields() {
				if !slices.Contains(matched, f) {
					matched = append(matched, f)
				}
			}
		case len(in.GetFields()) == 0:
			// The consumer reads every field, so every changed one.
			hit = true
			for _, f := range fields {
				if !slices.Contains(matched, f) {
					matched = append(matched, f)
				}
			}
		default:
			for _, read := range in.GetFields() {
				for _, changed := range fields {
					if fieldsOverlap(read, changed) {
						hit = true
						if !slices.Contains(matched, read) {
							matched = append(matched, read)
						}
					}
				}
			}
		}
		if hit {
			direct = true
			usages = appendUsage(usages, in.GetUsage())
		}
	}
	if usages == nil {
		return nil
	}
	var path []string
	switch {
	case direct && !whole && len(matched) > 0:
		path = []string{subject + "." + matched[0], c.GetName()}
	case direct:
		path = []string{subject, c.GetName()}
	default:
		path = append(via, c.GetName())
	}
	return &registryv1.AffectedConsumer{
		Consumer: c.GetName(),
		Path:     path,
		Depth:    1,
		Fields:   append(matched, matchedCanonical...),
		Usages:   usages,
		Owner:    c.GetOwner(),
	}
}

// canonicalHits returns the canonical fields of r a reader of read (empty:
// every field) is affected through, in order.
func canonicalHits(r canonicalReach, read []string) []string {
	var reached []string
	for cf := range r.fields {
		reached = append(reached, cf)
	}
	slices.Sort(reached)
	if len(read) == 0 {
		return reached
	}
	var out []string
	for _, cf := range reached {
		if slices.ContainsFunc(read, func(f string) bool { return fieldsOverlap(f, cf) }) {
			out = append(out, cf)
		}
	}
	if r.whole {
		for _, f := range read {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// appendUsage adds u to usages once; the result is non-nil, so callers use
// nil to mean "no input matched".
func appendUsage(usages []registryv1.UsageKind, u registryv1.UsageKind) []registryv1.UsageKind {
	if usages == nil {
		usages = []registryv1.UsageKind{}
	}
	if !slices.Contains(usages, u) {
		usages = append(usages, u)
	}
	return usages
}

// rerunRoot is where a rerun order starts: a subject with the canonical
// models its records are released into, a canonical model, or a dataset.
type rerunRoot struct {
	subject   string
	canonical []string
	dataset   string
}

// readsRoot reports whether an input reads the root directly: the subject,
// one of its canonical models (any field, since a backfill releases whole
// canonical records), or the dataset.
func (r rerunRoot) readsRoot(in *registryv1.Input) bool {
	switch {
	case r.subject != "" && in.GetSubject() == r.subject:
		return true
	case in.GetCanonical() != "" && slices.Contains(r.canonical, in.GetCanonical()):
		return true
	}
	return r.dataset != "" && in.GetDataset() == r.dataset
}

// rerunOrder returns the consumers downstream of a root in dependency
// order: each after every consumer whose dataset it reads. Ties are broken
// by name so the order is stable.
func rerunOrder(consumers []*registryv1.Consumer, root rerunRoot) ([]string, error) {
	byName := map[string]*registryv1.Consumer{}
	for _, c := range consumers {
		byName[c.GetName()] = c
	}
	readers := func(pred func(*registryv1.Input) bool) []string {
		var out []string
		for _, c := range consumers {
			if slices.ContainsFunc(c.GetInputs(), pred) {
				out = append(out, c.GetName())
			}
		}
		return out
	}
	frontier := readers(root.readsRoot)
	// Collect everything downstream.
	down := map[string]bool{}
	for len(frontier) > 0 {
		name := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		if down[name] {
			continue
		}
		down[name] = true
		for _, d := range byName[name].GetProduces() {
			frontier = append(frontier, readers(func(in *registryv1.Input) bool { return in.GetDataset() == d })...)
		}
	}
	return topoOrder(byName, down)
}

// topoOrder orders the consumers in set so that each comes after every
// consumer in set producing a dataset it reads (Kahn's algorithm).
func topoOrder(byName map[string]*registryv1.Consumer, set map[string]bool) ([]string, error) {
	producers := map[string][]string{}
	for name := range set {
		for _, d := range byName[name].GetProduces() {
			producers[d] = append(producers[d], name)
		}
	}
	indeg := map[string]int{}
	succ := map[string][]string{}
	for name := range set {
		indeg[name] += 0
		deps := map[string]bool{}
		for _, in := range byName[name].GetInputs() {
			for _, p := range producers[in.GetDataset()] {
				if in.GetDataset() != "" && !deps[p] {
					deps[p] = true
					indeg[name]++
					succ[p] = append(succ[p], name)
				}
			}
		}
	}
	var ready, out []string
	for name, n := range indeg {
		if n == 0 {
			ready = append(ready, name)
		}
	}
	for len(ready) > 0 {
		slices.Sort(ready)
		name := ready[0]
		ready = ready[1:]
		out = append(out, name)
		for _, s := range succ[name] {
			indeg[s]--
			if indeg[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	if len(out) < len(set) {
		var stuck []string
		for name, n := range indeg {
			if n > 0 {
				stuck = append(stuck, name)
			}
		}
		slices.Sort(stuck)
		return nil, fmt.Errorf("%w: consumers %s read datasets produced downstream of themselves; break the cycle by changing their inputs or produced datasets",
			errLineageCycle, strings.Join(stuck, ", "))
	}
	return out, nil
}

// lineageCycle returns an error when the consumers' dataset lineage has a
// cycle, naming the consumers on or behind it.
func lineageCycle(consumers []*registryv1.Consumer) error {
	byName := map[string]*registryv1.Consumer{}
	all := map[string]bool{}
	for _, c := range consumers {
		byName[c.GetName()] = c
		all[c.GetName()] = true
	}
	_, err := topoOrder(byName, all)
	return err
}
