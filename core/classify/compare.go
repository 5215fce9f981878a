package classify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Compare lists every difference between the contract versions old and new,
// one change per difference, ordered by path then rule. Levels are left
// unspecified: they depend on the compatibility mode (see Classify and
// Level). Field order is not a difference, since records are keyed by name.
// When a field's type changes between OBJECT or ARRAY and anything else, its
// members are not compared: the type change already covers them.
func Compare(old, new *contractv1.Contract) []*registryv1.Change {
	c := &comparer{renames: renames(new)}
	c.contract(old, new)
	sortChanges(c.changes)
	return c.changes
}

type comparer struct {
	changes []*registryv1.Change
	// renames maps a field's dotted name in new to its dotted name in old.
	renames map[string]string
}

func (c *comparer) add(rule, path, oldValue, newValue, format string, args ...any) {
	c.changes = append(c.changes, &registryv1.Change{
		Rule:     rule,
		Path:     path,
		OldValue: oldValue,
		NewValue: newValue,
		Message:  fmt.Sprintf(format, args...),
	})
}

func sortChanges(changes []*registryv1.Change) {
	slices.SortStableFunc(changes, func(a, b *registryv1.Change) int {
		return cmp.Or(
			strings.Compare(a.GetPath(), b.GetPath()),
			strings.Compare(a.GetRule(), b.GetRule()),
			cmp.Compare(a.GetComparedVersion(), b.GetComparedVersion()),
			strings.Compare(a.GetOldValue(), b.GetOldValue()),
			strings.Compare(a.GetNewValue(), b.GetNewValue()),
		)
	})
}

// renames reads new's mapping.renamed_from into dotted new name -> dotted
// old name. A plain old name of a nested field is taken to be in the same
// object as the new name.
func renames(new *contractv1.Contract) map[string]string {
	from := new.GetMapping().GetRenamedFrom()
	if len(from) == 0 {
		return nil
	}
	out := make(map[string]string, len(from))
	for newName, oldName := range from {
		if i := strings.LastIndexByte(newName, '.'); i >= 0 && !strings.Contains(oldName, ".") {
			oldName = newName[:i+1] + oldName
		}
		out[newName] = oldName
	}
	return out
}

func (c *comparer) contract(old, new *contractv1.Contract) {
	if o, n := old.GetSubject(), new.GetSubject(); o != n {
		c.add(SubjectChanged, "subject", o, n, "subject changes from %q to %q; versions of different subjects are not comparable", o, n)
	}
	if o, n := old.GetOwner(), new.GetOwner(); o != n {
		c.add(OwnerChanged, "owner", o, n, "owner changes from %q to %q", o, n)
	}
	if o, n := old.GetDescription(), new.GetDescription(); o != n {
		c.add(DescriptionChanged, "description", o, n, "contract description changes")
	}
	if o, n := old.GetCompatibility(), new.GetCompatibility(); o != n {
		os, ns := contract.ShortName(o), contract.ShortName(n)
		c.add(CompatibilityChanged, "compatibility", os, ns, "compatibility changes from %s to %s; later versions are classified under %s", os, ns, ns)
	}
	c.notice(old.GetNoticePeriod(), new.GetNoticePeriod())
	c.additionalFields(old.GetAdditionalFields(), new.GetAdditionalFields())
	c.labels(old.GetLabels(), new.GetLabels())
	c.partitionTime(old.GetPartitionTime(), new.GetPartitionTime())
	c.fields(old.GetFields(), new.GetFields(), "fields", "")
	c.keys(old, new)
	c.checks(old.GetChecks(), new.GetChecks())
	c.mapping(old.GetMapping(), new.GetMapping())
}

// additionalFields compares what happens to undeclared fields: refusing
// them (QUARANTINE or REJECT) where they were allowed is a tightened
// constraint, since old records that carried extras now fail; allowing them
// again is a relaxed one. QUARANTINE and REJECT refuse the same records and
// differ only in policy.
func (c *comparer) additionalFields(o, n contractv1.AdditionalFields) {
	refuses := func(a contractv1.AdditionalFields) bool {
		return a == contractv1.AdditionalFields_ADDITIONAL_FIELDS_QUARANTINE || a == contractv1.AdditionalFields_ADDITIONAL_FIELDS_REJECT
	}
	name := func(a contractv1.AdditionalFields) string {
		if a == contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED {
			return "ALLOW"
		}
		return contract.ShortName(a)
	}
	os, ns := name(o), name(n)
	switch {
	case os == ns:
	case refuses(n) && !refuses(o):
		c.add(ConstraintTightened, "additional_fields", os, ns, "additional_fields changes from %s to %s; records that carry undeclared fields, valid before, now fail", os, ns)
	case refuses(o) && !refuses(n):
		c.add(ConstraintRelaxed, "additional_fields", os, ns, "additional_fields changes from %s to %s; records may now carry fields old readers do not expect", os, ns)
	default:
		c.add(CheckChanged, "additional_fields", os, ns, "additional_fields changes from %s to %s: the same records are refused, under another policy", os, ns)
	}
}

func (c *comparer) notice(o, n string) {
	if o == n {
		return
	}
	od, oerr := contract.ParseNoticePeriod(o)
	nd, nerr := contract.ParseNoticePeriod(n)
	switch {
	case oerr != nil || nerr != nil:
		c.add(NoticePeriodChanged, "notice_period", o, n, "notice period changes from %q to %q", o, n)
	case od < nd:
		c.add(NoticePeriodChanged, "notice_period", o, n, "notice period grows from %s to %s; later breaking versions need more notice", od, nd)
	case od > nd:
		c.add(NoticePeriodChanged, "notice_period", o, n, "notice period shrinks from %s to %s; consumers get less warning of later breaking versions", od, nd)
	}
	// Equal durations written differently ("14d", "336h") are no change.
}

func (c *comparer) labels(o, n map[string]string) {
	for _, k := range unionKeys(o, n) {
		ov, oin := o[k]
		nv, nin := n[k]
		path := "labels." + k
		switch {
		case !oin:
			c.add(LabelChanged, path, "", nv, "label %q added", k)
		case !nin:
			c.add(LabelChanged, path, ov, "", "label %q removed", k)
		case ov != nv:
			c.add(LabelChanged, path, ov, nv, "label %q changes from %q to %q", k, ov, nv)
		}
	}
}

// partitionTime reports a declared, changed or removed partition time, one
// change per attribute. It changes how the gate places, seals and dates
// partitions, not what a record holds, so it never breaks readers.
func (c *comparer) partitionTime(o, n *contractv1.PartitionTime) {
	if proto.Equal(o, n) {
		return
	}
	describe := func(pt *contractv1.PartitionTime) string {
		if pt == nil {
			return ""
		}
		return fmt.Sprintf("%s by %s, lateness %q", pt.GetField(), contract.ShortName(pt.GetGranularity()), pt.GetAllowedLateness())
	}
	switch {
	case o == nil:
		c.add(PartitionTimeChanged, "partition_time", "", describe(n), "partition time declared: %s; partitions are placed, sealed and dated by it", describe(n))
	case n == nil:
		c.add(PartitionTimeChanged, "partition_time", describe(o), "", "partition time removed; partitions are named by their senders and versions apply by wall clock")
	default:
		for _, d := range []struct{ path, o, n string }{
			{"partition_time.field", o.GetField(), n.GetField()},
			{"partition_time.granularity", contract.ShortName(o.GetGranularity()), contract.ShortName(n.GetGranularity())},
			{"partition_time.allowed_lateness", o.GetAllowedLateness(), n.GetAllowedLateness()},
		} {
			if d.o != d.n {
				c.add(PartitionTimeChanged, d.path, d.o, d.n, "%s changes from %q to %q", d.path, d.o, d.n)
			}
		}
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func joinName(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// fields compares two lists of sibling fields. path is the change path of
// the list ("fields", "fields.address.fields"); prefix is the dotted record
// name of their parent ("" at the top, "address").
func (c *comparer) fields(old, new []*contractv1.Field, path, prefix string) {
	oldByName := make(map[string]*contractv1.Field, len(old))
	for _, f := range old {
		if _, dup := oldByName[f.GetName()]; !dup {
			oldByName[f.GetName()] = f
		}
	}
	newByName := make(map[string]*contractv1.Field, len(new))
	for _, f := range new {
		if _, dup := newByName[f.GetName()]; !dup {
			newByName[f.GetName()] = f
		}
	}
	matched := make(map[string]bool, len(old))
	for _, nf := range new {
		name := nf.GetName()
		if newByName[name] != nf {
			continue // a duplicate name; Validate reports it
		}
		fpath := path + "." + name
		if of, ok := oldByName[name]; ok {
			matched[name] = true
			c.field(of, nf, fpath, joinName(prefix, name))
			continue
		}
		if oldName, ok := c.renamedFrom(joinName(prefix, name), prefix); ok {
			if of, ok := oldByName[oldName]; ok && !matched[oldName] && newByName[oldName] == nil {
				matched[oldName] = true
				c.add(FieldRenamed, fpath, oldName, name, "field %s is renamed to %s (declared by mapping.renamed_from); readers of the old version do not know the new name", oldName, name)
				c.field(of, nf, fpath, joinName(prefix, name))
				continue
			}
		}
		if nf.GetRequired() {
			c.add(FieldAddedRequired, fpath, "", fieldSummary(nf), "required field %s added; records valid under the old version lack it", name)
		} else {
			c.add(FieldAddedOptional, fpath, "", fieldSummary(nf), "optional field %s added", name)
		}
	}
	for _, of := range old {
		name := of.GetName()
		if matched[name] || oldByName[name] != of {
			continue
		}
		c.add(FieldRemoved, path+"."+name, fieldSummary(of), "", "field %s removed; consumers reading it stop getting values (declare mapping.renamed_from if it was renamed)", name)
	}
}

// renamedFrom returns the old plain name of the field with the dotted new
// name, when the rename stays inside the same parent.
func (c *comparer) renamedFrom(newName, prefix string) (string, bool) {
	oldName, ok := c.renames[newName]
	if !ok {
		return "", false
	}
	if prefix != "" {
		rest, inParent := strings.CutPrefix(oldName, prefix+".")
		if !inParent {
			return "", false
		}
		oldName = rest
	}
	if strings.Contains(oldName, ".") {
		return "", false
	}
	return oldName, true
}

func fieldSummary(f *contractv1.Field) string {
	if f.GetRequired() {
		return contract.ShortName(f.GetType()) + " required"
	}
	return contract.ShortName(f.GetType()) + " optional"
}

// widenings are the type changes after which every old value is still a
// valid value of the new type, with the same JSON representation. INT64 to
// DOUBLE is not one: integers beyond 2^53 lose precision.
var widenings = map[[2]contractv1.FieldType]bool{
	{contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64}:  true,
	{contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_DOUBLE}: true,
	{contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE}: true,
	{contractv1.FieldType_FIELD_TYPE_UUID, contractv1.FieldType_FIELD_TYPE_STRING}:  true,
}

// field compares one field present in both versions; path is the change
// path of the field ("fields.address.fields.zip") and name its dotted
// record name.
func (c *comparer) field(of, nf *contractv1.Field, path, name string) {
	ot, nt := of.GetType(), nf.GetType()
	if ot != nt {
		os, ns := contract.ShortName(ot), contract.ShortName(nt)
		switch {
		case widenings[[2]contractv1.FieldType{ot, nt}], nt == contractv1.FieldType_FIELD_TYPE_JSON:
			// A JSON field takes every value of every type as it is sent.
			c.add(FieldTypeWidened, path+".type", os, ns, "%s widens from %s to %s; every old value is still valid, but readers of the old version may reject new values", name, os, ns)
		case widenings[[2]contractv1.FieldType{nt, ot}], ot == contractv1.FieldType_FIELD_TYPE_JSON:
			c.add(FieldTypeNarrowed, path+".type", os, ns, "%s narrows from %s to %s; old values may not fit the new type", name, os, ns)
		default:
			c.add(FieldTypeChanged, path+".type", os, ns, "%s changes type from %s to %s; values of one type fail the other's type check", name, os, ns)
		}
	}
	if ot == contractv1.FieldType_FIELD_TYPE_DECIMAL && nt == contractv1.FieldType_FIELD_TYPE_DECIMAL {
		c.decimal(of, nf, path, name)
	}
	switch o, n := of.GetRequired(), nf.GetRequired(); {
	case !o && n:
		c.add(FieldMadeRequired, path+".required", "false", "true", "%s becomes required; old records may lack it", name)
	case o && !n:
		c.add(FieldMadeOptional, path+".required", "true", "false", "%s becomes optional; readers of the old version expect it in every record", name)
	}
	c.identifier(of.GetIdentifier(), nf.GetIdentifier(), path, name)
	c.enum(of.GetEnum(), nf.GetEnum(), path, name)
	c.pattern(of.GetPattern(), nf.GetPattern(), path, name)
	c.bound(opt(of.Min), opt(nf.Min), true, path, name, "min")
	c.bound(opt(of.Max), opt(nf.Max), false, path, name, "max")
	c.bound(ptrFloat(of.MinLength), ptrFloat(nf.MinLength), true, path, name, "min_length")
	c.bound(ptrFloat(of.MaxLength), ptrFloat(nf.MaxLength), false, path, name, "max_length")
	if o, n := of.GetLayout(), nf.GetLayout(); o != n {
		c.add(LayoutChanged, path+".layout", o, n, "%s changes time layout from %q to %q; values written in one layout do not parse in the other", name, o, n)
	}
	if o, n := of.GetDescription(), nf.GetDescription(); o != n {
		c.add(DescriptionChanged, path+".description", o, n, "description of %s changes", name)
	}
	if (ot == contractv1.FieldType_FIELD_TYPE_OBJECT || ot == contractv1.FieldType_FIELD_TYPE_JSON) && ot == nt {
		c.fields(of.GetFields(), nf.GetFields(), path+".fields", name)
	}
	if (ot == contractv1.FieldType_FIELD_TYPE_ARRAY || ot == contractv1.FieldType_FIELD_TYPE_JSON) && ot == nt &&
		of.GetItems() != nil && nf.GetItems() != nil {
		c.field(of.GetItems(), nf.GetItems(), path+".items", name+contract.ItemsSuffix)
	}
}

// decimalDigits are a DECIMAL's integer digits and scale; bounded is
// false when it declares no precision (any number of digits).
func decimalDigits(f *contractv1.Field) (intDigits, scale int32, bounded bool) {
	if f.Precision == nil {
		return 0, 0, false
	}
	return f.GetPrecision() - f.GetScale(), f.GetScale(), true
}

// decimalText names a DECIMAL's digits as SQL would: DECIMAL(12,4).
func decimalText(f *contractv1.Field) string {
	if f.Precision == nil {
		return "DECIMAL"
	}
	return fmt.Sprintf("DECIMAL(%d,%d)", f.GetPrecision(), f.GetScale())
}

// decimal compares the precision and scale of a DECIMAL field, which are
// part of its type: fewer integer digits or fewer digits after the point
// narrow it (an old value may not fit), more widen it, and fewer of one
// with more of the other change it.
func (c *comparer) decimal(of, nf *contractv1.Field, path, name string) {
	oi, os, ob := decimalDigits(of)
	ni, ns, nb := decimalDigits(nf)
	if ob == nb && oi == ni && os == ns {
		return
	}
	ot, nt := decimalText(of), decimalText(nf)
	narrows := nb && (!ob || ni < oi || ns < os)
	widens := ob && (!nb || ni > oi || ns > os)
	switch {
	case narrows && widens:
		c.add(FieldTypeChanged, path+".precision", ot, nt, "%s changes from %s to %s; values of one may not fit the other (integer digits %d→%d, scale %d→%d)", name, ot, nt, oi, ni, os, ns)
	case narrows:
		c.add(FieldTypeNarrowed, path+".precision", ot, nt, "%s narrows from %s to %s; old values may not fit (they would be rounded or refused)", name, ot, nt)
	default:
		c.add(FieldTypeWidened, path+".precision", ot, nt, "%s widens from %s to %s; every old value still fits, but readers of the old version may reject new values", name, ot, nt)
	}
}

// ptrFloat converts a length bound for bound; it returns a value pair
// rather than a pointer so unchanged bounds allocate nothing.
func ptrFloat(p *int64) optFloat {
	if p == nil {
		return optFloat{}
	}
	return optFloat{float64(*p), true}
}

type optFloat struct {
	v  float64
	ok bool
}

func opt(p *float64) optFloat {
	if p == nil {
		return optFloat{}
	}
	return optFloat{*p, true}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// bound compares a lower (isMin) or upper bound. Adding a bound or moving it
// inwards tightens; removing it or moving it outwards relaxes.
func (c *comparer) bound(o, n optFloat, isMin bool, base, name, what string) {
	if !o.ok && !n.ok || o.ok && n.ok && o.v == n.v {
		return
	}
	path := base + "." + what
	switch {
	case !o.ok:
		c.add(ConstraintTightened, path, "", formatNumber(n.v), "%s gains %s %s; old values may violate it", name, what, formatNumber(n.v))
	case !n.ok:
		c.add(ConstraintRelaxed, path, formatNumber(o.v), "", "%s drops %s %s; readers of the old version may reject new values", name, what, formatNumber(o.v))
	case (n.v > o.v) == isMin:
		c.add(ConstraintTightened, path, formatNumber(o.v), formatNumber(n.v), "%s tightens %s from %s to %s; old values may violate it", name, what, formatNumber(o.v), formatNumber(n.v))
	default:
		c.add(ConstraintRelaxed, path, formatNumber(o.v), formatNumber(n.v), "%s relaxes %s from %s to %s; readers of the old version may reject new values", name, what, formatNumber(o.v), formatNumber(n.v))
	}
}

func (c *comparer) pattern(o, n, base, name string) {
	if o == n {
		return
	}
	path := base + ".pattern"
	switch {
	case o == "":
		c.add(ConstraintTightened, path, "", n, "%s gains pattern %q; old values may not match it", name, n)
	case n == "":
		c.add(ConstraintRelaxed, path, o, "", "%s drops pattern %q; readers of the old version may reject new values", name, o)
	default:
		c.add(PatternChanged, path, o, n, "%s changes pattern from %q to %q; values matching one need not match the other", name, o, n)
	}
}

func (c *comparer) enum(o, n []string, base, name string) {
	if slices.Equal(o, n) {
		return
	}
	path := base + ".enum"
	switch {
	case len(o) == 0:
		c.add(ConstraintTightened, path, "", strings.Join(n, ","), "%s is restricted to %s; old values may be outside it", name, strings.Join(n, ", "))
		return
	case len(n) == 0:
		c.add(ConstraintRelaxed, path, strings.Join(o, ","), "", "%s is no longer restricted to %s; readers of the old version may reject new values", name, strings.Join(o, ", "))
		return
	}
	inOld := make(map[string]bool, len(o))
	for _, v := range o {
		inOld[v] = true
	}
	inNew := make(map[string]bool, len(n))
	for _, v := range n {
		inNew[v] = true
	}
	for _, v := range n {
		if !inOld[v] {
			inOld[v] = true // report a value listed twice once
			c.add(EnumValueAdded, path, "", v, "%s gains enum value %q; readers of the old version may reject it", name, v)
		}
	}
	for _, v := range o {
		if !inNew[v] {
			inNew[v] = true
			c.add(EnumValueRemoved, path, v, "", "%s loses enum value %q; old records may carry it", name, v)
		}
	}
}

func (c *comparer) identifier(o, n *contractv1.Identifier, base, name string) {
	if o.GetNamespace() == n.GetNamespace() && o.GetFormat() == n.GetFormat() && (o == nil) == (n == nil) {
		return
	}
	path := base + ".identifier"
	os, ns := contract.IdentifierString(o), contract.IdentifierString(n)
	switch {
	case o == nil:
		c.add(IdentifierAdded, path, "", ns, "%s is declared an identifier %s", name, ns)
	case n == nil:
		c.add(IdentifierRemoved, path, os, "", "%s is no longer an identifier %s; joins and translations on it lose their guarantee", name, os)
	default:
		if o.GetNamespace() != n.GetNamespace() {
			c.add(IdentifierNamespaceChanged, path+".namespace", o.GetNamespace(), n.GetNamespace(), "%s identifies a %s instead of a %s; joins across versions would match unrelated entities", name, n.GetNamespace(), o.GetNamespace())
		}
		if o.GetFormat() != n.GetFormat() {
			c.add(IdentifierFormatChanged, path+".format", o.GetFormat(), n.GetFormat(), "%s changes identifier format from %s to %s; joins on it stop matching unless idmap translates", name, os, ns)
		}
	}
}

// keys reports a change of the key set, comparing old key names through the
// declared renames so a renamed key is not also a key change.
func (c *comparer) keys(old, new *contractv1.Contract) {
	oldKeys := contract.Keys(old)
	newKeys := contract.Keys(new)
	back := make(map[string]string, len(c.renames))
	for n, o := range c.renames {
		back[o] = n
	}
	renamed := make([]string, len(oldKeys))
	for i, k := range oldKeys {
		if n, ok := back[k]; ok {
			k = n
		}
		renamed[i] = k
	}
	a := slices.Sorted(slices.Values(renamed))
	b := slices.Sorted(slices.Values(newKeys))
	if !slices.Equal(a, b) {
		o, n := strings.Join(oldKeys, ","), strings.Join(newKeys, ",")
		c.add(KeyChanged, "key", o, n, "record key changes from (%s) to (%s); deduplication and upserts identify records differently", o, n)
	}
}

func (c *comparer) checks(old, new []*contractv1.Check) {
	oldByName := make(map[string]*contractv1.Check, len(old))
	for _, ch := range old {
		oldByName[ch.GetName()] = ch
	}
	newByName := make(map[string]*contractv1.Check, len(new))
	for _, ch := range new {
		newByName[ch.GetName()] = ch
	}
	for _, name := range unionKeys(oldByName, newByName) {
		o, n := oldByName[name], newByName[name]
		path := "checks." + name
		switch {
		case o == nil:
			c.add(CheckAdded, path, "", checkSummary(n), "check %s added: %s", name, checkSummary(n))
		case n == nil:
			c.add(CheckRemoved, path, checkSummary(o), "", "check %s removed", name)
		default:
			if o.GetRule() != n.GetRule() {
				c.add(CheckChanged, path+".rule", o.GetRule(), n.GetRule(), "check %s changes rule from %s to %s", name, o.GetRule(), n.GetRule())
			}
			if o.GetPolicy() != n.GetPolicy() {
				op, np := contract.ShortName(o.GetPolicy()), contract.ShortName(n.GetPolicy())
				c.add(CheckChanged, path+".policy", op, np, "check %s changes policy from %s to %s", name, op, np)
			}
			if !proto.Equal(o.GetThreshold(), n.GetThreshold()) {
				ot, nt := thresholdSummary(o.GetThreshold()), thresholdSummary(n.GetThreshold())
				c.add(CheckChanged, path+".threshold", ot, nt, "check %s changes threshold from %s to %s", name, cmp.Or(ot, "none"), cmp.Or(nt, "none"))
			}
			if o.GetDescription() != n.GetDescription() {
				c.add(DescriptionChanged, path+".description", o.GetDescription(), n.GetDescription(), "description of check %s changes", name)
			}
		}
	}
}

func checkSummary(ch *contractv1.Check) string {
	return ch.GetRule() + " " + contract.ShortName(ch.GetPolicy())
}

func thresholdSummary(t *contractv1.Threshold) string {
	switch l := t.GetLimit().(type) {
	case *contractv1.Threshold_Count:
		return "count " + strconv.FormatInt(l.Count, 10)
	case *contractv1.Threshold_Fraction:
		return "fraction " + formatNumber(l.Fraction)
	}
	return ""
}

// mapping compares the mappings to the canonical model. renamed_from is not
// compared: it describes one step between two versions and is reported as
// FIELD_RENAMED.
func (c *comparer) mapping(o, n *contractv1.Mapping) {
	switch oc, nc := o.GetCanonical(), n.GetCanonical(); {
	case oc == nc:
	case oc == "":
		c.add(MappingChanged, "mapping.canonical", oc, nc, "records are now mapped to canonical model %s", nc)
	default:
		c.add(MappingTargetChanged, "mapping.canonical", oc, nc, "records are mapped to %s instead of %s; consumers of %s stop getting this source", cmp.Or(nc, "none"), oc, oc)
	}
	if ov, nv := o.GetCanonicalVersion(), n.GetCanonicalVersion(); ov != nv {
		c.add(MappingChanged, "mapping.canonical_version", versionSummary(ov), versionSummary(nv), "mapping pins canonical version %s instead of %s", versionSummary(nv), versionSummary(ov))
	}
	of, nf := o.GetFields(), n.GetFields()
	for _, name := range unionKeys(of, nf) {
		om, nm := of[name], nf[name]
		if om != nil && nm != nil && proto.Equal(om, nm) {
			continue
		}
		path := "mapping.fields." + name
		os, ns := mappingSummary(om), mappingSummary(nm)
		switch {
		case om == nil:
			c.add(MappingChanged, path, "", ns, "canonical field %s is now mapped", name)
		case nm == nil:
			c.add(MappingChanged, path, os, "", "canonical field %s is no longer mapped", name)
		default:
			c.add(MappingChanged, path, os, ns, "canonical field %s is produced differently", name)
		}
	}
}

func versionSummary(v int32) string {
	if v == 0 {
		return "latest"
	}
	return strconv.Itoa(int(v))
}

// mappingSummary renders a field mapping as compact JSON with sorted keys.
// protojson output is deliberately unstable in its spacing, so it is
// re-encoded to keep change values reproducible.
func mappingSummary(m *contractv1.FieldMapping) string {
	if m == nil {
		return ""
	}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		// Only invalid UTF-8 fails, and a summary is for reading: keep the
		// change (it is real) and show the text form, which cannot fail.
		return prototext.MarshalOptions{}.Format(m)
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return string(js)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(js)
	}
	return string(out)
}
