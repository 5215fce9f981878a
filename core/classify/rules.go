package classify

import (
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Rule ids. They are stable: CI scripts and consumers match on them.
const (
	FieldAddedOptional         = "FIELD_ADDED_OPTIONAL"
	FieldAddedRequired         = "FIELD_ADDED_REQUIRED"
	FieldRemoved               = "FIELD_REMOVED"
	FieldRenamed               = "FIELD_RENAMED"
	FieldTypeChanged           = "FIELD_TYPE_CHANGED"
	FieldTypeWidened           = "FIELD_TYPE_WIDENED"
	FieldTypeNarrowed          = "FIELD_TYPE_NARROWED"
	FieldMadeRequired          = "FIELD_MADE_REQUIRED"
	FieldMadeOptional          = "FIELD_MADE_OPTIONAL"
	KeyChanged                 = "KEY_CHANGED"
	IdentifierFormatChanged    = "IDENTIFIER_FORMAT_CHANGED"
	IdentifierNamespaceChanged = "IDENTIFIER_NAMESPACE_CHANGED"
	IdentifierAdded            = "IDENTIFIER_ADDED"
	IdentifierRemoved          = "IDENTIFIER_REMOVED"
	EnumValueAdded             = "ENUM_VALUE_ADDED"
	EnumValueRemoved           = "ENUM_VALUE_REMOVED"
	PatternChanged             = "PATTERN_CHANGED"
	ConstraintTightened        = "CONSTRAINT_TIGHTENED"
	ConstraintRelaxed          = "CONSTRAINT_RELAXED"
	LayoutChanged              = "LAYOUT_CHANGED"
	DescriptionChanged         = "DESCRIPTION_CHANGED"
	CheckAdded                 = "CHECK_ADDED"
	CheckRemoved               = "CHECK_REMOVED"
	CheckChanged               = "CHECK_CHANGED"
	MappingChanged             = "MAPPING_CHANGED"
	MappingTargetChanged       = "MAPPING_TARGET_CHANGED"
	CompatibilityChanged       = "COMPATIBILITY_CHANGED"
	NoticePeriodChanged        = "NOTICE_PERIOD_CHANGED"
	OwnerChanged               = "OWNER_CHANGED"
	SubjectChanged             = "SUBJECT_CHANGED"
	LabelChanged               = "LABEL_CHANGED"
	PartitionTimeChanged       = "PARTITION_TIME_CHANGED"
)

// Rule is one kind of change and the directions in which it breaks readers.
//
// For record contracts the directions mean, as in schema registries:
// BreaksBackward: a consumer written against the new version may fail on a
// record that was valid under the old one (old data, replays and backfills
// read through the new contract). BreaksForward: a consumer still written
// against the old version may fail on, or silently lose, a record valid
// under the new one (new data read by consumers that have not upgraded).
type Rule struct {
	ID             string
	BreaksBackward bool
	BreaksForward  bool
	// Summary says in one line what the rule detects.
	Summary string
}

// ruleTable is the single source of the rule levels; docs/rules.md is
// checked against it by a test. It is never modified.
var ruleTable = [...]Rule{
	{FieldAddedOptional, false, false, "an optional field was added"},
	{FieldAddedRequired, true, false, "a required field was added"},
	{FieldRemoved, false, true, "a field was removed (without a declared rename)"},
	{FieldRenamed, false, true, "a field was renamed, declared by mapping.renamed_from"},
	{FieldTypeChanged, true, true, "a field's type changed to one that cannot hold every old value and vice versa"},
	{FieldTypeWidened, false, true, "a field's type changed to one that holds every old value (INT32→INT64, INT32→DOUBLE, FLOAT→DOUBLE, UUID→STRING, a DECIMAL's precision or scale grown)"},
	{FieldTypeNarrowed, true, false, "the reverse of a widening"},
	{FieldMadeRequired, true, false, "an optional field became required"},
	{FieldMadeOptional, false, true, "a required field became optional"},
	{KeyChanged, true, true, "the set of key fields changed"},
	{IdentifierFormatChanged, true, true, "an identifier's idmap format changed"},
	{IdentifierNamespaceChanged, true, true, "an identifier's idmap namespace changed"},
	{IdentifierAdded, false, false, "a field was declared an identifier"},
	{IdentifierRemoved, false, true, "a field stopped being an identifier"},
	{EnumValueAdded, false, true, "a value was added to an enum"},
	{EnumValueRemoved, true, false, "a value was removed from an enum"},
	{PatternChanged, true, true, "a pattern was replaced by a different one"},
	{ConstraintTightened, true, false, "a constraint (min, max, min_length, max_length, pattern, enum, additional_fields) was added or narrowed"},
	{ConstraintRelaxed, false, true, "a constraint was removed or widened"},
	{LayoutChanged, true, true, "the time layout of a TIMESTAMP or DATE field changed"},
	{DescriptionChanged, false, false, "a description changed"},
	{CheckAdded, false, false, "a check was added"},
	{CheckRemoved, false, false, "a check was removed"},
	{CheckChanged, false, false, "a check's rule, policy or threshold changed"},
	{MappingChanged, false, false, "how a canonical field is produced changed, or a mapping was added"},
	{MappingTargetChanged, true, true, "the mapping targets another canonical model, or was removed"},
	{CompatibilityChanged, false, false, "the compatibility mode changed"},
	{NoticePeriodChanged, false, false, "the notice period changed"},
	{OwnerChanged, false, false, "the owning team changed"},
	{SubjectChanged, true, true, "the versions belong to different subjects"},
	{LabelChanged, false, false, "a label was added, removed or changed"},
	{PartitionTimeChanged, false, false, "the partition time (field, granularity or allowed lateness) was declared, changed or removed"},
}

// ruleIndex finds a rule's position in ruleTable by id. It is never modified.
var ruleIndex = func() map[string]int {
	m := make(map[string]int, len(ruleTable))
	for i, r := range ruleTable {
		m[r.ID] = i
	}
	return m
}()

// Rules returns every rule in documentation order.
func Rules() []Rule { return append([]Rule(nil), ruleTable[:]...) }

// Lookup returns the rule with the given id.
func Lookup(id string) (Rule, bool) {
	i, ok := ruleIndex[id]
	if !ok {
		return Rule{}, false
	}
	return ruleTable[i], true
}

// directions says which directions a compatibility mode protects and
// whether it compares against every earlier version. An unspecified mode is
// BACKWARD, the schema-registry default; an unknown one is treated as the
// strictest, FULL_TRANSITIVE, so a corrupt setting never lets a break pass.
func directions(mode contractv1.Compatibility) (backward, forward, transitive bool) {
	switch mode {
	case contractv1.Compatibility_COMPATIBILITY_NONE:
		return false, false, false
	case contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED, contractv1.Compatibility_COMPATIBILITY_BACKWARD:
		return true, false, false
	case contractv1.Compatibility_COMPATIBILITY_BACKWARD_TRANSITIVE:
		return true, false, true
	case contractv1.Compatibility_COMPATIBILITY_FORWARD:
		return false, true, false
	case contractv1.Compatibility_COMPATIBILITY_FORWARD_TRANSITIVE:
		return false, true, true
	case contractv1.Compatibility_COMPATIBILITY_FULL:
		return true, true, false
	default:
		return true, true, true
	}
}

// Level is the level of a change with rule id under mode. An unknown rule id
// is BREAKING: a change nobody has judged safe is not assumed to be.
func Level(id string, mode contractv1.Compatibility) registryv1.ChangeLevel {
	r, ok := Lookup(id)
	if !ok {
		return registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING
	}
	backward, forward, _ := directions(mode)
	if backward && r.BreaksBackward || forward && r.BreaksForward {
		return registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING
	}
	return registryv1.ChangeLevel_CHANGE_LEVEL_ADDITIVE
}
