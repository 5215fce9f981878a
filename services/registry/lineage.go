package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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

// reach is one consumer found by a lineage walk.
type reach struct {
	affected *registryv1.AffectedConsumer
	consumer *registryv1.Consumer
}

// blastRadius returns every consumer affected by a change to subject —
// limited to fields when fields is not empty — directly or through the
// datasets of affected consumers, nearest first, each with the shortest
// path by which it is reached.
func blastRadius(consumers []*registryv1.Consumer, subject string, fields []string) []*registryv1.AffectedConsumer {
	sorted := slices.Clone(consumers)
	slices.SortFunc(sorted, func(a, b *registryv1.Consumer) int { return strings.Compare(a.GetName(), b.GetName()) })

	seen := map[string]bool{}
	var level []reach
	for _, c := range sorted {
		a := directReach(c, subject, fields)
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

// directReach returns how c reads fields of subject, or nil when it reads
// none of them.
func directReach(c *registryv1.Consumer, subject string, fields []string) *registryv1.AffectedConsumer {
	var matched []string
	var usages []registryv1.UsageKind
	whole := false
	for _, in := range c.GetInputs() {
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
			usages = appendUsage(usages, in.GetUsage())
		}
	}
	if usages == nil {
		return nil
	}
	start := subject
	if !whole && len(matched) > 0 {
		start = subject + "." + matched[0]
	}
	return &registryv1.AffectedConsumer{
		Consumer: c.GetName(),
		Path:     []string{start, c.GetName()},
		Depth:    1,
		Fields:   matched,
		Usages:   usages,
		Owner:    c.GetOwner(),
	}
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

// rerunOrder returns the consumers downstream of a subject or dataset (set
// exactly one) in dependency order: each after every consumer whose dataset
// it reads. Ties are broken by name so the order is stable.
func rerunOrder(consumers []*registryv1.Consumer, subject, dataset string) ([]string, error) {
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
	var frontier []string
	if subject != "" {
		frontier = readers(func(in *registryv1.Input) bool { return in.GetSubject() == subject })
	} else {
		frontier = readers(func(in *registryv1.Input) bool { return in.GetDataset() == dataset })
	}
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
