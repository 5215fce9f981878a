package openlineage

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Binding is a Seam subject, or a canonical model, an OpenLineage dataset
// stands for.
type Binding struct {
	Subject string
	// Canonical names a canonical model instead of a subject: the job is a
	// consumer of the model's fields, as named in the column lineage,
	// whichever subjects map into it now or later.
	Canonical string
	// Field maps a field of the dataset to the subject's field; nil means
	// the same name. ok is false when the dataset field has no single
	// source field (a computed canonical field): the subject is then read
	// whole.
	Field func(string) (string, bool)
}

// Resolver says which Seam subjects a dataset is; none for other datasets.
type Resolver interface {
	Resolve(namespace, name string) []Binding
}

// usageRank orders usages when one field is used several ways; a join key
// matters most to a blast radius.
var usageRank = map[registryv1.UsageKind]int{
	registryv1.UsageKind_USAGE_KIND_JOIN_KEY:    4,
	registryv1.UsageKind_USAGE_KIND_FILTER:      3,
	registryv1.UsageKind_USAGE_KIND_FEATURE:     2,
	registryv1.UsageKind_USAGE_KIND_PASSTHROUGH: 1,
}

// usageOf maps a column-lineage transformation to a usage: a JOIN marks a
// join key, a FILTER a filter, an IDENTITY a passthrough, anything else
// (transformations, aggregations, grouping, sorting) a feature.
func usageOf(typ, subtype string) registryv1.UsageKind {
	switch strings.ToUpper(subtype) {
	case "JOIN":
		return registryv1.UsageKind_USAGE_KIND_JOIN_KEY
	case "FILTER":
		return registryv1.UsageKind_USAGE_KIND_FILTER
	case "IDENTITY":
		return registryv1.UsageKind_USAGE_KIND_PASSTHROUGH
	}
	if strings.EqualFold(typ, "IDENTITY") {
		return registryv1.UsageKind_USAGE_KIND_PASSTHROUGH
	}
	return registryv1.UsageKind_USAGE_KIND_FEATURE
}

type columnLineage struct {
	Fields map[string]struct {
		InputFields        []inputField `json:"inputFields"`
		TransformationType string       `json:"transformationType"`
	} `json:"fields"`
	Dataset []inputField `json:"dataset"`
}

type inputField struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Field           string `json:"field"`
	Transformations []struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	} `json:"transformations"`
}

// dsKey identifies a dataset.
type dsKey struct{ ns, name string }

// Consumer turns one run or job event into the consumer its job is: named
// "<job namespace>/<job name>", reading its input datasets and producing
// its outputs. It returns nil for events that name no dataset (a parent
// job, a step, a dataset event). Notes say what was left out and why.
func Consumer(e *Event, r Resolver) (*registryv1.Consumer, []string) {
	if e.Job == nil || (len(e.Inputs) == 0 && len(e.Outputs) == 0) {
		return nil, nil
	}
	var notes []string
	c := &registryv1.Consumer{
		Name:   ID(e.Job.Namespace, e.Job.Name),
		Owner:  owner(e.Job.Facets),
		Origin: registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE,
		Learned: &registryv1.LearnedLineage{
			JobNamespace: e.Job.Namespace, JobName: e.Job.Name, Producer: e.Producer,
		},
	}
	if e.Run != nil {
		c.Learned.RunId = e.Run.RunID
	}
	if d, ok := e.Job.Facets["documentation"].(map[string]any); ok {
		c.Description, _ = d["description"].(string)
	}
	// Field usages per input dataset, from the column-lineage facets of
	// the outputs.
	usages := map[dsKey]map[string]registryv1.UsageKind{}
	order := []dsKey{}
	note := func(k dsKey) {
		if _, ok := usages[k]; !ok {
			usages[k] = map[string]registryv1.UsageKind{}
			order = append(order, k)
		}
	}
	for _, in := range e.Inputs {
		note(dsKey{in.Namespace, in.Name})
	}
	add := func(f inputField, fallback registryv1.UsageKind) {
		k := dsKey{f.Namespace, f.Name}
		note(k)
		u := fallback
		for _, t := range f.Transformations {
			if v := usageOf(t.Type, t.Subtype); usageRank[v] > usageRank[u] {
				u = v
			}
		}
		if f.Field != "" && usageRank[u] > usageRank[usages[k][f.Field]] {
			usages[k][f.Field] = u
		}
	}
	for _, out := range e.Outputs {
		raw, ok := out.Facets["columnLineage"]
		if !ok {
			continue
		}
		var cl columnLineage
		if err := json.Unmarshal(raw, &cl); err != nil {
			notes = append(notes, fmt.Sprintf("column lineage of %s is malformed (%v); its inputs are taken as read whole", ID(out.Namespace, out.Name), err))
			continue
		}
		for _, fl := range cl.Fields {
			fallback := registryv1.UsageKind_USAGE_KIND_FEATURE
			if fl.TransformationType != "" {
				fallback = usageOf(fl.TransformationType, "")
			}
			for _, f := range fl.InputFields {
				add(f, fallback)
			}
		}
		for _, f := range cl.Dataset {
			add(f, registryv1.UsageKind_USAGE_KIND_FILTER)
		}
	}
	produced := map[string]bool{}
	for _, out := range e.Outputs {
		id := ID(out.Namespace, out.Name)
		if !produced[id] {
			produced[id] = true
			c.Produces = append(c.Produces, id)
		}
	}
	for _, k := range order {
		fields := usages[k]
		bindings := r.Resolve(k.ns, k.name)
		if len(bindings) == 0 {
			id := ID(k.ns, k.name)
			if produced[id] {
				notes = append(notes, fmt.Sprintf("%s is read and written by the job; kept as an output only", id))
				continue
			}
			// Kept with the fields the job reads of it, so that when a
			// contract binds the dataset later (Relink), the job becomes a
			// consumer of exactly those fields.
			c.Inputs = append(c.Inputs, fieldInputs(func() *registryv1.Input {
				return &registryv1.Input{Source: &registryv1.Input_Dataset{Dataset: id}}
			}, nil, fields)...)
			continue
		}
		for _, b := range bindings {
			c.Inputs = append(c.Inputs, subjectInputs(b, fields)...)
		}
	}
	if len(c.Inputs) == 0 {
		// A consumer reads something; a job that only writes is a source
		// of lineage, not a reader Seam must notify.
		return nil, append(notes, "the job reads no dataset other than what it writes")
	}
	return c, notes
}

// subjectInputs groups the fields a job reads of one subject (or canonical
// model) by usage: one input per usage. Without column lineage the subject
// is read whole.
func subjectInputs(b Binding, fields map[string]registryv1.UsageKind) []*registryv1.Input {
	if b.Canonical != "" {
		return fieldInputs(func() *registryv1.Input {
			return &registryv1.Input{Source: &registryv1.Input_Canonical{Canonical: b.Canonical}}
		}, nil, fields)
	}
	return fieldInputs(func() *registryv1.Input {
		return &registryv1.Input{Source: &registryv1.Input_Subject{Subject: b.Subject}}
	}, b.Field, fields)
}

// fieldInputs groups the fields read of one source by usage, each field
// named as field maps it (nil: as it is); mk makes an input of the source.
func fieldInputs(mk func() *registryv1.Input, field func(string) (string, bool), fields map[string]registryv1.UsageKind) []*registryv1.Input {
	whole := mk()
	if len(fields) == 0 {
		return []*registryv1.Input{whole}
	}
	byUsage := map[registryv1.UsageKind][]string{}
	for f, u := range fields {
		src := f
		if field != nil {
			s, ok := field(f)
			if !ok {
				return []*registryv1.Input{whole}
			}
			src = s
		}
		if !slices.Contains(byUsage[u], src) {
			byUsage[u] = append(byUsage[u], src)
		}
	}
	kinds := make([]registryv1.UsageKind, 0, len(byUsage))
	for u := range byUsage {
		kinds = append(kinds, u)
	}
	sort.Slice(kinds, func(i, j int) bool { return usageRank[kinds[i]] > usageRank[kinds[j]] })
	var out []*registryv1.Input
	for _, u := range kinds {
		fs := byUsage[u]
		sort.Strings(fs)
		in := mk()
		in.Fields, in.Usage = fs, u
		out = append(out, in)
	}
	return out
}

// owner reads the job's ownership facet: its first owner's name.
func owner(facets map[string]any) string {
	if o, ok := facets["ownership"].(map[string]any); ok {
		if owners, ok := o["owners"].([]any); ok && len(owners) > 0 {
			if first, ok := owners[0].(map[string]any); ok {
				if n, ok := first["name"].(string); ok && n != "" {
					return n
				}
			}
		}
	}
	return ""
}

// Merge folds the lineage of another event of the same run into c: inputs
// and produced datasets accumulate over the run's events.
func Merge(c, more *registryv1.Consumer) {
	for _, in := range more.GetInputs() {
		merged := false
		for _, have := range c.GetInputs() {
			if have.GetSubject() == in.GetSubject() && have.GetDataset() == in.GetDataset() && have.GetCanonical() == in.GetCanonical() && have.GetUsage() == in.GetUsage() {
				if len(have.GetFields()) > 0 && len(in.GetFields()) > 0 {
					for _, f := range in.GetFields() {
						if !slices.Contains(have.Fields, f) {
							have.Fields = append(have.Fields, f)
						}
					}
					sort.Strings(have.Fields)
				} else {
					have.Fields = nil // one of them reads the whole subject
				}
				merged = true
				break
			}
		}
		if !merged {
			c.Inputs = append(c.Inputs, in)
		}
	}
	for _, p := range more.GetProduces() {
		if !slices.Contains(c.Produces, p) {
			c.Produces = append(c.Produces, p)
		}
	}
	if more.GetDescription() != "" {
		c.Description = more.GetDescription()
	}
	if more.GetOwner() != "" {
		c.Owner = more.GetOwner()
	}
}

// Relink binds the dataset inputs of a learned consumer that r resolves
// now, as the next run of its job would: each such dataset becomes the
// subject or canonical inputs of its bindings, with the fields its column
// lineage named (kept on the dataset inputs for this). A dataset input's
// identifier is its namespace and name joined by "/" (ID); the split with
// the longest namespace that r resolves is taken. It reports whether the
// consumer changed; declared consumers are never changed.
func Relink(c *registryv1.Consumer, r Resolver) bool {
	if c.GetOrigin() != registryv1.ConsumerOrigin_CONSUMER_ORIGIN_OPENLINEAGE {
		return false
	}
	bound := map[string][]Binding{}
	for _, in := range c.GetInputs() {
		id := in.GetDataset()
		if _, seen := bound[id]; id == "" || seen || slices.Contains(c.GetProduces(), id) {
			continue
		}
		bound[id] = resolveID(r, id)
	}
	var kept []*registryv1.Input
	fields := map[string]map[string]registryv1.UsageKind{}
	whole := map[string]bool{}
	var order []string
	for _, in := range c.GetInputs() {
		id := in.GetDataset()
		if id == "" || len(bound[id]) == 0 {
			kept = append(kept, in)
			continue
		}
		if fields[id] == nil {
			fields[id] = map[string]registryv1.UsageKind{}
			order = append(order, id)
		}
		if len(in.GetFields()) == 0 {
			whole[id] = true
		}
		for _, f := range in.GetFields() {
			if u := in.GetUsage(); usageRank[u] > usageRank[fields[id][f]] || fields[id][f] == registryv1.UsageKind_USAGE_KIND_UNSPECIFIED {
				fields[id][f] = u
			}
		}
	}
	if len(order) == 0 {
		return false
	}
	linked := &registryv1.Consumer{}
	for _, id := range order {
		fs := fields[id]
		if whole[id] {
			fs = nil
		}
		for _, b := range bound[id] {
			linked.Inputs = append(linked.Inputs, subjectInputs(b, fs)...)
		}
	}
	c.Inputs = kept
	Merge(c, linked)
	return true
}

// resolveID resolves a dataset identifier (namespace "/" name), trying
// the split with the longest namespace first.
func resolveID(r Resolver, id string) []Binding {
	for i := len(id) - 1; i > 0; i-- {
		if id[i] != '/' {
			continue
		}
		if b := r.Resolve(id[:i], id[i+1:]); len(b) > 0 {
			return b
		}
	}
	return nil
}
