package infer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/shape"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Options say what counts as a change of the source rather than a few
// bad records: a deviation counts when at least MinCount records and at
// least MinShare of the records that carry the field show it. Smaller
// deviations are left as they are: those records stay held under the
// proposal too, and the proposal says how many.
type Options struct {
	MinShare float64
	MinCount int
}

// Defaults of Options.
const (
	DefaultMinShare = 0.05
	DefaultMinCount = 3
)

func (o Options) withDefaults() Options {
	if o.MinShare <= 0 {
		o.MinShare = DefaultMinShare
	}
	if o.MinCount <= 0 {
		o.MinCount = DefaultMinCount
	}
	return o
}

// Input is what a proposal is made from.
type Input struct {
	// Active is the version in force; ActiveVersion its number.
	Active        *contractv1.Contract
	ActiveVersion int32
	// Canonical is the model the active mapping targets; without it the
	// proposed mapping is not compiled.
	Canonical *contractv1.CanonicalModel
	// Namespaces are the idmap namespaces the contract names, with their
	// formats (rules and tables are not needed).
	Namespaces []*idmapv1.Namespace
	// Held are the records Seam held in the window.
	Held []Record
	// Known lists known ids per "namespace/format", which lets a UUIDv5
	// derivation of them be found.
	Known map[string][]string
	// Context are lines for the header of the proposal's YAML: where the
	// records came from, what the monitor said about the accepted ones.
	Context []string
	Options
}

// Proposal is the next contract version the held records call for.
type Proposal struct {
	// Contract is the proposed version.
	Contract      *contractv1.Contract
	ActiveVersion int32
	// Changes are its differences from the active version, each with its
	// rule id and its level under the active version's compatibility mode.
	Changes  []*registryv1.Change
	Breaking bool
	// Findings say per field what the held records showed and what
	// changed, in field order.
	Findings []*Finding
	// Migrations are the identifiers whose format changed, and what idmap
	// needs to translate them.
	Migrations []*Migration
	// Notes are what a person still has to decide.
	Notes []string
	// Profile is what the held records look like.
	Profile *Profile
	// Before and After are the active and proposed versions' checks run
	// on the held records.
	Before, After Verification
	// YAML is the proposed version as a document with comments saying
	// what was observed.
	YAML []byte
}

// Finding is what one field's values showed.
type Finding struct {
	Field string `json:"field"`
	// Observed describes the held values: presence, kinds, shapes,
	// bounds, examples.
	Observed string `json:"observed"`
	// Changes say what the proposal changes in the field's declaration
	// ("type INT64 → UUID"); empty when nothing.
	Changes []string `json:"changes,omitempty"`
	// Stays counts held records that still fail on this field under the
	// proposal: deviations too small to be a change of the source.
	Stays int `json:"stays,omitempty"`
}

// Migration is an identifier whose format changed.
type Migration struct {
	// Field is the source field (by its new name).
	Field     string `json:"field"`
	Namespace string `json:"namespace"`
	// Old is the format the active version declares; New the one the
	// source now sends.
	Old string `json:"old"`
	New string `json:"new"`
	// Target is the format the canonical field keeps (the mapping's
	// translate.to); empty when no canonical field is produced from it.
	Target string `json:"target,omitempty"`
	// CreateFormat is set when New does not exist in idmap yet.
	CreateFormat *idmapv1.Format `json:"create_format,omitempty"`
	// Rule is what the new values alone say about a rule between Old
	// and New.
	Rule *RuleFinding `json:"rule"`
	// Values are the distinct new ids the held records carry.
	Values []string `json:"-"`
}

// Propose proposes the next version of in.Active that the held records
// call for: the smallest change under which the changed records pass,
// with a mapping that keeps the canonical model (and so every consumer)
// unchanged where it can — a renamed field declared with renamed_from and
// read by its new name, an identifier in a new format translated back to
// the one the canonical field holds, a widened type cast back to the
// canonical type. Records that deviate too little to be a change of the
// source (see Options) are not accommodated; the proposal counts them.
func Propose(in Input) (*Proposal, error) {
	if in.Active == nil {
		return nil, errors.New("infer: no active contract version to propose the next one from")
	}
	if ps := contract.Validate(in.Active); len(ps) > 0 {
		return nil, fmt.Errorf("infer: the active version of %s is not valid: %w", in.Active.GetSubject(), ps)
	}
	pr := &proposer{
		in:   in,
		opts: in.Options.withDefaults(),
		cat:  newCatalog(in.Namespaces),
		next: proto.Clone(in.Active).(*contractv1.Contract),
		prof: ProfileRecords(in.Active, in.Held),
	}
	p := &Proposal{ActiveVersion: in.ActiveVersion, Profile: pr.prof}
	p.Before = pr.cat.verify(in.Active, in.Held)

	pr.renames(&pr.next.Fields, "")
	fails, err := pr.cat.fieldFailures(pr.next, in.Held)
	if err != nil {
		return nil, err
	}
	pr.fails = fails
	pr.fields(&pr.next.Fields, "", pr.prof.Fields)
	pr.mapping()
	pr.checks()

	p.Contract = pr.next
	p.Findings, p.Migrations, p.Notes = pr.findings, pr.migrations, pr.notes
	p.After = pr.cat.verify(pr.next, in.Held)
	mode := in.Active.GetCompatibility()
	for _, ch := range classify.Compare(in.Active, pr.next) {
		ch.ComparedVersion = in.ActiveVersion
		ch.Level = classify.Level(ch.GetRule(), mode)
		p.Breaking = p.Breaking || ch.Level == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING
		p.Changes = append(p.Changes, ch)
	}
	if ps := contract.Validate(pr.next); len(ps) > 0 {
		// A proposal is only as good as its loading: say what is wrong
		// rather than print a version the registry would refuse unread.
		return nil, fmt.Errorf("infer: the proposed version of %s is not valid (a bug in the inference): %w", in.Active.GetSubject(), ps)
	}
	y, err := renderYAML(p, in.Context)
	if err != nil {
		return nil, err
	}
	p.YAML = y
	return p, nil
}

type proposer struct {
	in         Input
	opts       Options
	cat        *catalog
	next       *contractv1.Contract
	prof       *Profile
	fails      fieldFailures
	findings   []*Finding
	migrations []*Migration
	notes      []string
	// renamed maps old dotted paths to new ones.
	renamed map[string]string
}

func (pr *proposer) note(format string, args ...any) {
	pr.notes = append(pr.notes, fmt.Sprintf(format, args...))
}

// significant reports whether n deviating records out of base are a
// change of the source.
func (pr *proposer) significant(n, base int) bool {
	return n >= pr.opts.MinCount && float64(n) >= pr.opts.MinShare*float64(base)
}

func (pr *proposer) finding(path string) *Finding {
	for _, f := range pr.findings {
		if f.Field == path {
			return f
		}
	}
	f := &Finding{Field: path}
	if fp := pr.prof.Field(path); fp != nil {
		f.Observed = observed(fp)
	} else {
		f.Observed = "not seen in the held records"
	}
	pr.findings = append(pr.findings, f)
	return f
}

func (pr *proposer) change(path, format string, args ...any) {
	f := pr.finding(path)
	f.Changes = append(f.Changes, fmt.Sprintf(format, args...))
}

// renames finds, among the fields of one object, declared fields the held
// records never carry and undeclared ones they carry instead, and pairs a
// missing field with a new one whose values fit its declaration: a rename.
// The rename is declared with mapping.renamed_from, so it is not a removal
// plus an addition, and the mapping reads the new name.
func (pr *proposer) renames(fields *[]*contractv1.Field, prefix string) {
	var gone []*contractv1.Field
	for _, f := range *fields {
		path := prefix + f.GetName()
		fp := pr.prof.Field(path)
		if fp != nil && fp.Seen > 0 && fp.Present == 0 && fp.Null == 0 {
			gone = append(gone, f)
		}
		if f.GetType() == contractv1.FieldType_FIELD_TYPE_OBJECT {
			pr.renames(&f.Fields, path+".")
		}
	}
	if len(gone) == 0 {
		return
	}
	var fresh []*FieldProfile
	for _, fp := range pr.prof.membersOf(prefix) {
		if fp.Declared == nil && fp.Present > 0 && pr.significant(fp.Present, fp.Seen) {
			fresh = append(fresh, fp)
		}
	}
	type match struct {
		old   *contractv1.Field
		new   *FieldProfile
		score float64
	}
	var matches []match
	for _, old := range gone {
		for _, fp := range fresh {
			if !fits(fp, old) {
				continue
			}
			sim := nameSimilarity(old.GetName(), fp.Name)
			// An optional field is often simply not sent; that it is
			// missing says little, so only a name that resembles it makes
			// a new field its rename. A required one missing is a change.
			if !old.GetRequired() && sim < minOptionalRenameSimilarity {
				continue
			}
			matches = append(matches, match{old, fp, sim + presence(fp)})
		}
	}
	slices.SortStableFunc(matches, func(a, b match) int { return cmp.Compare(b.score, a.score) })
	usedOld, usedNew := map[*contractv1.Field]bool{}, map[*FieldProfile]bool{}
	for i, m := range matches {
		if usedOld[m.old] || usedNew[m.new] {
			continue
		}
		// Two candidates that fit equally well are a guess, not a finding.
		tie := false
		for _, o := range matches[i+1:] {
			if o.score == m.score && (o.old == m.old && !usedNew[o.new] || o.new == m.new && !usedOld[o.old]) {
				tie = true
			}
		}
		if tie {
			pr.note("%s is missing and more than one new field could be its new name; declare the rename by hand (mapping.renamed_from) if it is one", prefix+m.old.GetName())
			usedOld[m.old] = true
			continue
		}
		usedOld[m.old], usedNew[m.new] = true, true
		oldPath := prefix + m.old.GetName()
		if pr.renamed == nil {
			pr.renamed = map[string]string{}
		}
		pr.renamed[oldPath] = m.new.Path
		m.old.Name = m.new.Name
		if pr.next.Mapping == nil {
			pr.next.Mapping = &contractv1.Mapping{}
		}
		if pr.next.Mapping.RenamedFrom == nil {
			pr.next.Mapping.RenamedFrom = map[string]string{}
		}
		pr.next.Mapping.RenamedFrom[m.new.Path] = strings.TrimPrefix(oldPath, prefix)
		pr.change(m.new.Path, "renamed from %s: the held records never carry %s and carry %s with values that fit its declaration", oldPath, oldPath, m.new.Path)
	}
}

// minOptionalRenameSimilarity is how alike the names of a missing optional
// field and a new one must be (nameSimilarity) to call it a rename.
const minOptionalRenameSimilarity = 0.5

// membersOf returns the profiles of the members of the object at prefix
// ("" for the top level, "address." for a member object).
func (p *Profile) membersOf(prefix string) []*FieldProfile {
	if prefix == "" {
		return p.Fields
	}
	if f := p.Field(strings.TrimSuffix(prefix, ".")); f != nil {
		return f.Members
	}
	return nil
}

// fits reports whether the values of fp would pass field decl's type.
func fits(fp *FieldProfile, decl *contractv1.Field) bool {
	if fp.Present == 0 {
		return false
	}
	t := observedType(fp, decl)
	return t == decl.GetType() || assignableType(t, decl.GetType())
}

// assignableType is which observed types a declared type takes.
func assignableType(observed, declared contractv1.FieldType) bool {
	switch declared {
	case contractv1.FieldType_FIELD_TYPE_INT64:
		return observed == contractv1.FieldType_FIELD_TYPE_INT32
	case contractv1.FieldType_FIELD_TYPE_DOUBLE, contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DECIMAL:
		return observed == contractv1.FieldType_FIELD_TYPE_INT32 || observed == contractv1.FieldType_FIELD_TYPE_INT64
	case contractv1.FieldType_FIELD_TYPE_STRING:
		return observed == contractv1.FieldType_FIELD_TYPE_UUID || observed == contractv1.FieldType_FIELD_TYPE_DATE || observed == contractv1.FieldType_FIELD_TYPE_TIMESTAMP
	}
	return false
}

// nameSimilarity scores two names from 0 to 1 by their longest common
// substring, so customer_id and cust_id match better than customer_id
// and amount.
func nameSimilarity(a, b string) float64 {
	a, b = strings.ToLower(a), strings.ToLower(b)
	best := 0
	for i := range a {
		for j := range b {
			k := 0
			for i+k < len(a) && j+k < len(b) && a[i+k] == b[j+k] {
				k++
			}
			best = max(best, k)
		}
	}
	return float64(best) / float64(max(len(a), len(b), 1))
}

// presence is the share of objects that carry the field, to prefer a
// candidate present wherever the old field was.
func presence(fp *FieldProfile) float64 {
	if fp.Seen == 0 {
		return 0
	}
	return float64(fp.Present) / float64(fp.Seen)
}

// fields decides each declared field of one object, then declares the
// undeclared members the records carry.
func (pr *proposer) fields(fields *[]*contractv1.Field, prefix string, profiles []*FieldProfile) {
	for _, f := range *fields {
		pr.field(f, prefix+f.GetName())
	}
	for _, fp := range profiles {
		// A member already in fields was declared by a retype to OBJECT
		// in this proposal, though the active version never knew it.
		if fp.Declared != nil || pr.isRenameTarget(fp.Path) || fp.Present == 0 || declares(*fields, fp.Name) {
			continue
		}
		if !pr.significant(fp.Present, fp.Seen) {
			pr.finding(fp.Path)
			pr.note("%s appears in only %d of %d records: not declared", fp.Path, fp.Present, fp.Seen)
			continue
		}
		nf, why := pr.newField(fp, 0)
		if nf == nil {
			pr.finding(fp.Path)
			pr.note("%s is not declared: %s", fp.Path, why)
			continue
		}
		*fields = append(*fields, nf)
		pr.change(fp.Path, "added as an optional %s", contract.ShortName(nf.GetType()))
	}
}

func declares(fields []*contractv1.Field, name string) bool {
	return slices.ContainsFunc(fields, func(f *contractv1.Field) bool { return f.GetName() == name })
}

func (pr *proposer) isRenameTarget(path string) bool {
	for _, n := range pr.renamed {
		if n == path {
			return true
		}
	}
	return false
}

// newField declares a field the active version does not know, from its
// values: optional, of the observed type, without constraints (a sample
// is no ground to refuse other values later).
func (pr *proposer) newField(fp *FieldProfile, depth int) (*contractv1.Field, string) {
	if depth > maxNesting {
		return nil, "nested too deep to infer"
	}
	f := &contractv1.Field{Name: fp.Name, Type: observedType(fp, nil)}
	switch f.Type {
	case contractv1.FieldType_FIELD_TYPE_UNSPECIFIED:
		return nil, "its values are all null"
	case contractv1.FieldType_FIELD_TYPE_OBJECT:
		for _, m := range fp.Members {
			if m.Present == 0 {
				continue
			}
			if mf, _ := pr.newField(m, depth+1); mf != nil {
				f.Fields = append(f.Fields, mf)
			}
		}
		if len(f.Fields) == 0 {
			return nil, "its objects have no members with values"
		}
	case contractv1.FieldType_FIELD_TYPE_ARRAY:
		it := fp.Items
		if it == nil || it.Present == 0 {
			return nil, "its arrays are all empty, so their element type is unknown"
		}
		items, why := pr.newField(it, depth+1)
		if items == nil {
			return nil, "its elements: " + why
		}
		items.Name = ""
		f.Items = items
	}
	return f, ""
}

// observedType is the type the field's present values have. decl, when
// given, is the declared field: a type that still holds every value is
// kept (integers in a DOUBLE field stay DOUBLE).
func observedType(fp *FieldProfile, decl *contractv1.Field) contractv1.FieldType {
	k, _ := fp.majorityKind()
	dt := decl.GetType()
	switch k {
	case kindInteger, kindNumber:
		switch {
		case dt == contractv1.FieldType_FIELD_TYPE_DECIMAL:
			return dt
		case fp.Kinds[kindNumber] > 0 || fp.Kinds[kindString] > 0 && fp.Decimals == fp.Kinds[kindString]:
			if fp.Kinds[kindString] > 0 {
				return contractv1.FieldType_FIELD_TYPE_DECIMAL
			}
			if dt == contractv1.FieldType_FIELD_TYPE_FLOAT && fp.MaxNum <= math.MaxFloat32 && fp.MinNum >= -math.MaxFloat32 {
				return dt
			}
			return contractv1.FieldType_FIELD_TYPE_DOUBLE
		case dt == contractv1.FieldType_FIELD_TYPE_DOUBLE || dt == contractv1.FieldType_FIELD_TYPE_FLOAT:
			return dt
		case dt == contractv1.FieldType_FIELD_TYPE_INT32 && fp.IntsFitInt32:
			return dt
		}
		return contractv1.FieldType_FIELD_TYPE_INT64
	case kindString:
		sh, _ := fp.majorityShape()
		switch {
		case contract.IsNumeric(dt) && fp.Decimals == fp.Kinds[kindString] && fp.Decimals > 0:
			return contractv1.FieldType_FIELD_TYPE_DECIMAL
		case sh == shape.UUID && dt != contractv1.FieldType_FIELD_TYPE_STRING:
			return contractv1.FieldType_FIELD_TYPE_UUID
		case sh == shape.Timestamp && dt != contractv1.FieldType_FIELD_TYPE_STRING:
			return contractv1.FieldType_FIELD_TYPE_TIMESTAMP
		case sh == shape.Date && dt != contractv1.FieldType_FIELD_TYPE_STRING:
			return contractv1.FieldType_FIELD_TYPE_DATE
		}
		return contractv1.FieldType_FIELD_TYPE_STRING
	case kindBool:
		return contractv1.FieldType_FIELD_TYPE_BOOL
	case kindObject:
		return contractv1.FieldType_FIELD_TYPE_OBJECT
	case kindArray:
		return contractv1.FieldType_FIELD_TYPE_ARRAY
	}
	return contractv1.FieldType_FIELD_TYPE_UNSPECIFIED
}

// field decides one declared field (by its new name) from its values and
// the checks it failed.
func (pr *proposer) field(f *contractv1.Field, path string) {
	fp := pr.prof.Field(path)
	pr.finding(path)
	if fp == nil || fp.Seen == 0 {
		return
	}
	fails := pr.fails[path]
	missing := fp.Seen - fp.Present
	if f.GetRequired() && pr.significant(missing, fp.Seen) {
		if f.GetKey() {
			pr.note("key field %s is missing or null in %d of %d records; a key stays required, so those records stay held", path, missing, fp.Seen)
			pr.finding(path).Stays += fails[check.KindRequired]
		} else {
			f.Required = false
			pr.change(path, "optional: missing or null in %d of %d records", missing, fp.Seen)
			pr.requiredCanonical(path)
		}
	} else if n := fails[check.KindRequired] + fails[check.KindNotNull]; n > 0 {
		pr.finding(path).Stays += n
	}
	if fp.Present == 0 {
		return
	}
	idChanged := false
	if n := fails[check.KindType]; pr.significant(n, fp.Present) {
		nt := observedType(fp, f)
		if f.GetIdentifier() != nil {
			pr.identifier(f, path, fp, nt)
			idChanged = true
		} else if nt != f.GetType() && nt != contractv1.FieldType_FIELD_TYPE_UNSPECIFIED {
			pr.retypeOrHold(f, path, fp, nt, n)
		}
	} else if n > 0 {
		pr.finding(path).Stays += n
	}
	if !idChanged && f.GetIdentifier() != nil {
		if n := fails[check.KindFormat] + fails[check.KindPattern]; pr.significant(n, fp.Present) {
			pr.identifier(f, path, fp, f.GetType())
			idChanged = true
		}
	}
	if !idChanged {
		pr.constraints(f, path, fp, fails)
	}
	switch {
	case f.GetType() == contractv1.FieldType_FIELD_TYPE_OBJECT:
		pr.fields(&f.Fields, path+".", fp.Members)
	case f.GetType() == contractv1.FieldType_FIELD_TYPE_ARRAY && f.GetItems() != nil && fp.Items != nil:
		pr.items(f.GetItems(), path+contract.ItemsSuffix, fp.Items)
	}
}

// items decides an array's element declaration like a field's.
func (pr *proposer) items(it *contractv1.Field, path string, fp *FieldProfile) {
	fails := pr.fails[path]
	pr.finding(path)
	if n := fails[check.KindType]; pr.significant(n, fp.Present) {
		if nt := observedType(fp, it); nt != it.GetType() && nt != contractv1.FieldType_FIELD_TYPE_UNSPECIFIED {
			pr.retypeOrHold(it, path, fp, nt, n)
		}
	}
	pr.constraints(it, path, fp, fails)
	if it.GetType() == contractv1.FieldType_FIELD_TYPE_OBJECT {
		pr.fields(&it.Fields, path+".", fp.Members)
	}
}

// retypeOrHold retypes a field whose n records failed on type, unless
// no valid contract can declare the new type there: a key cannot become
// an object or an array, and an object field needs members with values.
// Then the proposal says why and the n records stay held for a person to
// decide.
func (pr *proposer) retypeOrHold(f *contractv1.Field, path string, fp *FieldProfile, nt contractv1.FieldType, n int) {
	why := ""
	switch {
	case f.GetKey() && (nt == contractv1.FieldType_FIELD_TYPE_OBJECT || nt == contractv1.FieldType_FIELD_TYPE_ARRAY):
		why = fmt.Sprintf("key field %s now carries %s values, and a key must be a single value", path, contract.ShortName(nt))
	case nt == contractv1.FieldType_FIELD_TYPE_OBJECT:
		if nf, reason := pr.newField(fp, 0); nf == nil {
			why = fmt.Sprintf("%s now carries objects, but %s, so no declaration can be inferred", path, reason)
		}
	}
	if why == "" {
		pr.retype(f, path, fp, nt)
		return
	}
	pr.note("%s; those %d records stay held", why, n)
	pr.finding(path).Stays += n
}

// retype gives a field the type its values now have, dropping the
// constraints the new type cannot carry.
func (pr *proposer) retype(f *contractv1.Field, path string, fp *FieldProfile, nt contractv1.FieldType) {
	old := f.GetType()
	f.Type = nt
	var dropped []string
	if nt != contractv1.FieldType_FIELD_TYPE_STRING {
		if f.Pattern != "" {
			dropped, f.Pattern = append(dropped, "pattern"), ""
		}
		if len(f.Enum) > 0 {
			dropped, f.Enum = append(dropped, "enum"), nil
		}
	}
	if nt != contractv1.FieldType_FIELD_TYPE_STRING && nt != contractv1.FieldType_FIELD_TYPE_ARRAY && (f.MinLength != nil || f.MaxLength != nil) {
		dropped, f.MinLength, f.MaxLength = append(dropped, "length"), nil, nil
	}
	if !contract.IsNumeric(nt) && (f.Min != nil || f.Max != nil) {
		dropped, f.Min, f.Max = append(dropped, "min/max"), nil, nil
	}
	if nt != contractv1.FieldType_FIELD_TYPE_TIMESTAMP && nt != contractv1.FieldType_FIELD_TYPE_DATE && f.Layout != "" {
		dropped, f.Layout = append(dropped, "layout"), ""
	}
	if nt == contractv1.FieldType_FIELD_TYPE_TIMESTAMP && f.Layout == "" && old != nt {
		f.Layout = "RFC3339"
	}
	if nt != contractv1.FieldType_FIELD_TYPE_OBJECT && len(f.Fields) > 0 {
		dropped, f.Fields = append(dropped, "fields"), nil
	}
	if nt != contractv1.FieldType_FIELD_TYPE_ARRAY && f.Items != nil {
		dropped, f.Items = append(dropped, "items"), nil
	}
	switch nt {
	case contractv1.FieldType_FIELD_TYPE_OBJECT:
		if nf, _ := pr.newField(fp, 0); nf != nil {
			f.Fields = nf.Fields
		}
	case contractv1.FieldType_FIELD_TYPE_ARRAY:
		if nf, _ := pr.newField(fp, 0); nf != nil {
			f.Items = nf.Items
		} else {
			f.Items = &contractv1.Field{Type: contractv1.FieldType_FIELD_TYPE_STRING}
			pr.note("%s became an array whose elements were never seen; its items are declared STRING, check that", path)
		}
	}
	msg := fmt.Sprintf("type %s → %s", contract.ShortName(old), contract.ShortName(nt))
	if len(dropped) > 0 {
		msg += " (drops " + strings.Join(dropped, ", ") + ", which " + contract.ShortName(nt) + " cannot carry)"
	}
	pr.change(path, "%s", msg)
}

// constraints relaxes the pattern, enum, bounds and lengths that a
// significant share of the values broke, to what the values show.
func (pr *proposer) constraints(f *contractv1.Field, path string, fp *FieldProfile, fails map[check.Kind]int) {
	stays := 0
	if n := fails[check.KindPattern]; n > 0 {
		if pr.significant(n, fp.Present) {
			pr.repattern(f, path, fp)
		} else {
			stays += n
		}
	}
	if n := fails[check.KindEnum]; n > 0 {
		var add []string
		if !fp.DistinctOverflow {
			for _, v := range slices.Sorted(maps.Keys(fp.Distinct)) {
				if !slices.Contains(f.Enum, v) && fp.Distinct[v] >= pr.opts.MinCount {
					add = append(add, v)
				}
			}
		}
		added := 0
		for _, v := range add {
			added += fp.Distinct[v]
		}
		switch {
		case len(add) > 0:
			f.Enum = append(f.Enum, add...)
			pr.change(path, "enum gains %s (seen in %d records)", strings.Join(add, ", "), added)
			pr.enumValues(path, add)
			stays += n - added
		case fp.DistinctOverflow && pr.significant(n, fp.Present):
			f.Enum = nil
			pr.change(path, "enum dropped: %d records carry values outside it, among more than %d distinct values", n, maxDistinct)
		default:
			stays += n
		}
	}
	if n := fails[check.KindRange]; n > 0 {
		if pr.significant(n, fp.Present) && fp.Numbers > 0 {
			if f.Min != nil && fp.MinNum < *f.Min {
				pr.change(path, "min %s → %s (the smallest value seen)", num(*f.Min), num(fp.MinNum))
				f.Min = proto.Float64(fp.MinNum)
			}
			if f.Max != nil && fp.MaxNum > *f.Max {
				pr.change(path, "max %s → %s (the largest value seen)", num(*f.Max), num(fp.MaxNum))
				f.Max = proto.Float64(fp.MaxNum)
			}
		} else {
			stays += n
		}
	}
	if n := fails[check.KindLength]; n > 0 {
		if pr.significant(n, fp.Present) && fp.MinLen >= 0 && f.GetType() == contractv1.FieldType_FIELD_TYPE_STRING {
			if f.MinLength != nil && int64(fp.MinLen) < *f.MinLength {
				pr.change(path, "min_length %d → %d", *f.MinLength, fp.MinLen)
				f.MinLength = proto.Int64(int64(fp.MinLen))
			}
			if f.MaxLength != nil && int64(fp.MaxLen) > *f.MaxLength {
				pr.change(path, "max_length %d → %d", *f.MaxLength, fp.MaxLen)
				f.MaxLength = proto.Int64(int64(fp.MaxLen))
			}
		} else {
			stays += n
		}
	}
	pr.finding(path).Stays += stays
}

// repattern replaces a pattern most values broke by the shape they have.
func (pr *proposer) repattern(f *contractv1.Field, path string, fp *FieldProfile) {
	old := f.Pattern
	sh, n := fp.majorityShape()
	pat := shapePattern(sh)
	if pat == "" || !pr.significant(n, fp.Present) {
		f.Pattern = ""
		pr.change(path, "pattern %q dropped: the values follow no single shape", old)
		return
	}
	f.Pattern = pat
	pr.change(path, "pattern %q → %q (%s, as %d of %d values are)", old, pat, sh, n, fp.Present)
}

// shapePattern is the pattern of a shape, "" for shapes no pattern says.
func shapePattern(sh string) string {
	switch {
	case sh == shape.UUID:
		return uuidPattern
	case sh == shape.Digits:
		return "^[0-9]+$"
	case sh == shape.Decimal:
		return "^[+-]?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?$"
	case sh == shape.Date:
		return "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
	case isTemplate(sh):
		pat, err := templatePattern(sh)
		if err != nil {
			return ""
		}
		return pat
	}
	return ""
}

// identifier handles an identifier whose values moved to another shape:
// the field declares the format they now have (an existing one of the
// namespace, or one to create), and the mapping translates them back.
func (pr *proposer) identifier(f *contractv1.Field, path string, fp *FieldProfile, nt contractv1.FieldType) {
	id := f.GetIdentifier()
	ns := id.GetNamespace()
	kind, pattern, sh := idmapv1.FormatKind_FORMAT_KIND_STRING, "", ""
	k, _ := fp.majorityKind()
	switch k {
	case kindInteger:
		kind = idmapv1.FormatKind_FORMAT_KIND_INT
		sh = "integer"
	case kindString:
		var n int
		sh, n = fp.majorityShape()
		switch {
		case sh == shape.UUID:
			kind = idmapv1.FormatKind_FORMAT_KIND_UUID
		case pr.significant(n, fp.Present):
			pattern = shapePattern(sh)
		}
	default:
		pr.note("identifier %s now carries %s values, which no idmap format holds; it is left as it is", path, kindNames[k])
		return
	}
	format := pr.findFormat(ns, kind, pattern, fp.IDs)
	var create *idmapv1.Format
	if format == nil {
		create = &idmapv1.Format{Name: pr.formatName(ns, kind, sh), Kind: kind, Pattern: pattern,
			Description: fmt.Sprintf("%s ids as %s sends them since its version %d (%s)", ns, pr.next.GetSubject(), pr.in.ActiveVersion, sh)}
		pr.cat.add(ns, create)
		format = create
	}
	oldType, oldFmt := f.GetType(), id.GetFormat()
	switch kind {
	case idmapv1.FormatKind_FORMAT_KIND_INT:
		f.Type = contractv1.FieldType_FIELD_TYPE_INT64
		if oldType == contractv1.FieldType_FIELD_TYPE_INT32 && fp.IntsFitInt32 {
			f.Type = oldType
		}
		f.Pattern, f.Enum, f.MinLength, f.MaxLength = "", nil, nil, nil
	case idmapv1.FormatKind_FORMAT_KIND_UUID:
		if oldType == contractv1.FieldType_FIELD_TYPE_STRING && nt == contractv1.FieldType_FIELD_TYPE_STRING {
			if f.Pattern != "" {
				f.Pattern = uuidPattern
			}
		} else {
			f.Type = contractv1.FieldType_FIELD_TYPE_UUID
			f.Pattern, f.Enum, f.MinLength, f.MaxLength = "", nil, nil, nil
		}
		f.Min, f.Max = nil, nil
	default:
		f.Type = contractv1.FieldType_FIELD_TYPE_STRING
		// The format's pattern already checks the shape (ID_INVALID); the
		// field keeps a pattern of its own only where it had one.
		if f.Pattern != "" {
			f.Pattern = pattern
		}
		f.Min, f.Max, f.Enum = nil, nil, nil
	}
	f.Identifier = &contractv1.Identifier{Namespace: ns, Format: format.GetName()}
	if oldType != f.GetType() {
		pr.change(path, "type %s → %s", contract.ShortName(oldType), contract.ShortName(f.GetType()))
	}
	pr.change(path, "identifier %s/%s → %s/%s (%s)", ns, oldFmt, ns, format.GetName(), sh)
	m := &Migration{Field: path, Namespace: ns, Old: oldFmt, New: format.GetName(), CreateFormat: create, Values: fp.IDs}
	if of := pr.cat.format(ns, oldFmt); of != nil {
		m.Rule = RuleFromValues(ns, of, format, fp.IDs, pr.in.Known[ns+"/"+oldFmt], nil)
	} else {
		m.Rule = &RuleFinding{Why: fmt.Sprintf("idmap namespace %q with format %q was not given, so no rule was looked for", ns, oldFmt)}
	}
	pr.migrations = append(pr.migrations, m)
}

// findFormat returns a format of the namespace that holds every value:
// of the kind, and for text one whose pattern every value matches.
func (pr *proposer) findFormat(ns string, kind idmapv1.FormatKind, pattern string, values []string) *idmapv1.Format {
	var loose *idmapv1.Format
	for _, f := range pr.cat.namespaces[ns].GetFormats() {
		if f.GetKind() != kind {
			continue
		}
		cf, err := idrule.NewFormat("format", f)
		if err != nil {
			continue
		}
		all := len(values) > 0
		for _, v := range values {
			if !cf.Valid(v) {
				all = false
				break
			}
		}
		switch {
		case !all:
		case kind != idmapv1.FormatKind_FORMAT_KIND_STRING || f.GetPattern() == pattern:
			return f
		case f.GetPattern() != "":
			return f
		case loose == nil:
			loose = f
		}
	}
	if loose != nil && pattern == "" {
		return loose
	}
	return nil
}

// formatName names a format to create: "uuid", "int", or the letters of
// a template's fixed text ("ACC-{digits:8}" gives "acc-code"), made unique
// in the namespace.
func (pr *proposer) formatName(ns string, kind idmapv1.FormatKind, sh string) string {
	base := "code"
	switch kind {
	case idmapv1.FormatKind_FORMAT_KIND_UUID:
		base = "uuid"
	case idmapv1.FormatKind_FORMAT_KIND_INT:
		base = "int"
	default:
		var b strings.Builder
		for _, r := range strings.ToLower(sh) {
			if r == '{' {
				break
			}
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				b.WriteRune(r)
			} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
		if s := strings.Trim(b.String(), "-"); s != "" && s[0] >= 'a' && s[0] <= 'z' && len(s) <= 40 {
			base = s + "-code"
		}
	}
	name := base
	for i := 2; pr.cat.format(ns, name) != nil; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// requiredCanonical notes a canonical field that is required but now
// produced from an optional source field without a default.
func (pr *proposer) requiredCanonical(path string) {
	if pr.in.Canonical == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(pr.next.GetMapping().GetFields())) {
		fm := pr.next.Mapping.Fields[name]
		if fm.GetFrom() != path || fm.GetDefault() != nil {
			continue
		}
		if cf := contract.Lookup(pr.in.Canonical.GetFields(), name); cf.GetRequired() {
			pr.note("canonical field %s is required and is produced from %s, which is now optional: records without it stay held unless mapping.fields.%s gets a default", name, path, name)
		}
	}
}

// enumValues maps new enum values of a source field whose mapping
// translates values: to the same value when the canonical field allows
// it, otherwise a person must say.
func (pr *proposer) enumValues(path string, add []string) {
	for _, name := range slices.Sorted(maps.Keys(pr.next.GetMapping().GetFields())) {
		fm := pr.next.Mapping.Fields[name]
		if fm.GetFrom() != path || len(fm.GetValues()) == 0 {
			continue
		}
		var canon []string
		if pr.in.Canonical != nil {
			canon = contract.Lookup(pr.in.Canonical.GetFields(), name).GetEnum()
		}
		for _, v := range add {
			if slices.Contains(canon, v) {
				fm.Values[v] = v
				continue
			}
			pr.note("mapping.fields.%s.values needs an entry for %s's new value %q (the canonical field does not allow it as it is)", name, path, v)
		}
	}
}

// mapping rewrites the mapping for renames and identifier migrations,
// then compiles it against the canonical model and casts where a changed
// source type no longer fits the canonical one.
func (pr *proposer) mapping() {
	m := pr.next.GetMapping()
	if m == nil {
		if len(pr.migrations) > 0 || len(pr.renamed) > 0 {
			pr.note("the active version has no mapping, so none is proposed; records pass the gate only with one")
		}
		return
	}
	for _, name := range slices.Sorted(maps.Keys(m.GetFields())) {
		fm := m.Fields[name]
		if from := fm.GetFrom(); from != "" {
			fm.From = pr.renamedPath(from)
		}
	}
	for _, mg := range pr.migrations {
		pr.translate(m, mg)
	}
	if pr.in.Canonical == nil {
		pr.note("the canonical model was not given, so the proposed mapping was not compiled")
		return
	}
	for round := 0; round < 2; round++ {
		_, problems, err := mapping.Draft(pr.next, pr.in.Canonical, m.GetCanonicalVersion(), pr.cat)
		if err != nil {
			pr.note("compiling the proposed mapping failed: %v", err)
			return
		}
		fixed := false
		for _, p := range problems {
			name, ok := strings.CutPrefix(p.Path, "mapping.fields.")
			name, ok2 := strings.CutSuffix(name, ".from")
			fm := m.GetFields()[name]
			if round == 0 && ok && ok2 && p.Reason == mapping.ReasonTypeMismatch && fm != nil && fm.GetCast() == nil && fm.GetTranslate() == nil {
				cf := contract.Lookup(pr.in.Canonical.GetFields(), name)
				fm.Cast = &contractv1.Cast{To: cf.GetType()}
				pr.change(fm.GetFrom(), "mapping casts it to %s for canonical field %s, which consumers keep reading as before", contract.ShortName(cf.GetType()), name)
				fixed = true
				continue
			}
			if round == 1 || !fixed {
				pr.note("mapping: %s", p)
			}
		}
		if !fixed {
			return
		}
	}
}

func (pr *proposer) renamedPath(path string) string {
	for old, nw := range pr.renamed {
		if path == old {
			return nw
		}
		if rest, ok := strings.CutPrefix(path, old+"."); ok {
			return nw + "." + rest
		}
	}
	return path
}

// translate makes every canonical field produced from a migrated
// identifier translate the new format back to what the field holds.
func (pr *proposer) translate(m *contractv1.Mapping, mg *Migration) {
	newRef := mg.Namespace + "/" + mg.New
	for _, name := range slices.Sorted(maps.Keys(m.GetFields())) {
		fm := m.Fields[name]
		if fm.GetFrom() != mg.Field {
			continue
		}
		target := mg.Namespace + "/" + mg.Old
		if tr := fm.GetTranslate(); tr != nil {
			target = tr.GetTo()
		} else if pr.in.Canonical != nil {
			if id := contract.Lookup(pr.in.Canonical.GetFields(), name).GetIdentifier(); id != nil {
				target = contract.IdentifierString(id)
			}
		}
		ns, format, _ := strings.Cut(target, "/")
		if ns != mg.Namespace {
			pr.note("canonical field %s holds %s ids, another namespace than %s: no translation is proposed", name, target, mg.Namespace)
			continue
		}
		if target == newRef {
			fm.Translate = nil
			continue
		}
		fm.Translate = &contractv1.Translate{From: newRef, To: target}
		fm.Cast = nil
		if mg.Target != "" && mg.Target != format {
			pr.note("%s feeds canonical fields holding %s and %s ids; idmap needs a route from %s to each", mg.Field, mg.Target, format, mg.New)
		}
		mg.Target = format
		if r := mg.Rule; r != nil && r.Rule == nil && r.Reason != "" && format != mg.Old {
			// The values alone told nothing: the pairs to ask for are
			// those of the translation the mapping needs, new→target.
			r.Why = noRuleWhy(mg.Namespace, mg.New, format, r.Reason)
		}
		pr.change(mg.Field, "mapping translates %s back to %s for canonical field %s, which consumers keep reading as before", newRef, target, name)
		if format != mg.Old && mg.Rule != nil && mg.Rule.Rule != nil {
			pr.note("the rule found for %s connects %s and %s, but canonical field %s holds %s: idmap translates in one step, so %s→%s needs a rule or table of its own",
				mg.Field, mg.Old, mg.New, name, format, mg.New, format)
		}
	}
}

// identRef matches a field name in a check rule, not as part of a longer
// name or a dotted path.
func identRef(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`)
}

// checks renames fields in check rules, then drops any check the
// proposed fields no longer let compile (saying why).
func (pr *proposer) checks() {
	for _, ch := range pr.next.GetChecks() {
		for _, old := range slices.Sorted(maps.Keys(pr.renamed)) {
			re := identRef(old)
			for re.MatchString(ch.Rule) {
				ch.Rule = re.ReplaceAllString(ch.Rule, "${1}"+pr.renamed[old]+"${2}")
			}
		}
	}
	for {
		_, err := pr.cat.compileChecks(pr.next)
		var ce *check.Error
		var list interface{ Unwrap() []error }
		switch {
		case err == nil:
			return
		case errors.As(err, &list):
			ce = firstCheckError(list.Unwrap())
		default:
			errors.As(err, &ce)
		}
		i := checkIndex(ce)
		if i < 0 || i >= len(pr.next.Checks) {
			pr.note("the proposed checks do not compile: %v", err)
			return
		}
		dropped := pr.next.Checks[i]
		pr.next.Checks = slices.Delete(pr.next.Checks, i, i+1)
		pr.note("check %s (%s) no longer compiles on the proposed fields (%s): dropped; write it again for the new fields if it is still wanted", dropped.GetName(), dropped.GetRule(), ce.Msg)
	}
}

func firstCheckError(errs []error) *check.Error {
	for _, e := range errs {
		var ce *check.Error
		if errors.As(e, &ce) && checkIndex(ce) >= 0 {
			return ce
		}
	}
	return nil
}

// checkIndex reads i from a compile error at "checks[i]…".
func checkIndex(ce *check.Error) int {
	if ce == nil {
		return -1
	}
	var i int
	if _, err := fmt.Sscanf(ce.Path, "checks[%d]", &i); err != nil {
		return -1
	}
	return i
}

func num(f float64) string { return fmt.Sprintf("%g", f) }

// observed describes a field's held values in one line.
func observed(fp *FieldProfile) string {
	if fp.Seen == 0 {
		return "not seen in the held records"
	}
	if fp.Present == 0 && fp.Null == 0 {
		return fmt.Sprintf("absent from all %d", fp.Seen)
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("present in %d of %d", fp.Present, fp.Seen))
	if fp.Null > 0 {
		parts = append(parts, fmt.Sprintf("null in %d", fp.Null))
	}
	var kinds []string
	for k, n := range fp.Kinds {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %s", kindNames[k], share(n, fp.Present)))
		}
	}
	if len(kinds) > 0 {
		parts = append(parts, strings.Join(kinds, ", "))
	}
	if fp.Kinds[kindString] > 0 {
		sh, n := fp.majorityShape()
		if sh != "" && sh != shape.String {
			parts = append(parts, fmt.Sprintf("shape %s in %s", sh, share(n, fp.Kinds[kindString])))
		}
		if !fp.DistinctOverflow && len(fp.Distinct) <= 10 && len(fp.Distinct) > 0 && (sh == shape.String || sh == "") {
			// A few words repeated: an enumeration's values.
			parts = append(parts, "values "+strings.Join(slices.Sorted(maps.Keys(fp.Distinct)), ", "))
		}
		if fp.MinLen >= 0 {
			parts = append(parts, fmt.Sprintf("length %d..%d", fp.MinLen, fp.MaxLen))
		}
	}
	if fp.Numbers > 0 {
		parts = append(parts, fmt.Sprintf("range %s..%s", num(fp.MinNum), num(fp.MaxNum)))
	}
	if len(fp.Examples) > 0 {
		parts = append(parts, "e.g. "+strings.Join(fp.Examples, ", "))
	}
	return strings.Join(parts, "; ")
}

func share(n, of int) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.4g%%", 100*float64(n)/float64(of))
}
