package classify_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/classify"
	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

func loadBase(t testing.TB) *contractv1.Contract {
	t.Helper()
	c, err := contract.LoadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.Validate(c).Err(); err != nil {
		t.Fatalf("base contract is invalid: %v", err)
	}
	return c
}

// field returns the field of c with the dotted name, failing the test when
// it does not exist so a typo in a case cannot pass silently.
func field(t testing.TB, c *contractv1.Contract, name string) *contractv1.Field {
	t.Helper()
	f := contract.Lookup(c.GetFields(), name)
	if f == nil {
		t.Fatalf("test contract has no field %q", name)
	}
	return f
}

func ptr[T any](v T) *T { return &v }

type want struct{ rule, path string }

func (w want) String() string { return w.rule + "@" + w.path }

func got(changes []*registryv1.Change) []want {
	out := make([]want, len(changes))
	for i, c := range changes {
		out[i] = want{c.GetRule(), c.GetPath()}
	}
	return out
}

// breaks restates docs/rules.md: for each rule, whether it breaks BACKWARD
// and whether it breaks FORWARD. It is written out here, not read from the
// package, so that a change to a level has to be made deliberately twice.
var breaks = map[string][2]bool{
	classify.FieldAddedOptional:         {false, false},
	classify.FieldAddedRequired:         {true, false},
	classify.FieldRemoved:               {false, true},
	classify.FieldRenamed:               {false, true},
	classify.FieldTypeChanged:           {true, true},
	classify.FieldTypeWidened:           {false, true},
	classify.FieldTypeNarrowed:          {true, false},
	classify.FieldMadeRequired:          {true, false},
	classify.FieldMadeOptional:          {false, true},
	classify.KeyChanged:                 {true, true},
	classify.IdentifierFormatChanged:    {true, true},
	classify.IdentifierNamespaceChanged: {true, true},
	classify.IdentifierAdded:            {false, false},
	classify.IdentifierRemoved:          {false, true},
	classify.EnumValueAdded:             {false, true},
	classify.EnumValueRemoved:           {true, false},
	classify.PatternChanged:             {true, true},
	classify.ConstraintTightened:        {true, false},
	classify.ConstraintRelaxed:          {false, true},
	classify.LayoutChanged:              {true, true},
	classify.DescriptionChanged:         {false, false},
	classify.CheckAdded:                 {false, false},
	classify.CheckRemoved:               {false, false},
	classify.CheckChanged:               {false, false},
	classify.MappingChanged:             {false, false},
	classify.MappingTargetChanged:       {true, true},
	classify.CompatibilityChanged:       {false, false},
	classify.NoticePeriodChanged:        {false, false},
	classify.OwnerChanged:               {false, false},
	classify.SubjectChanged:             {true, true},
	classify.LabelChanged:               {false, false},
	classify.PartitionTimeChanged:       {false, false},
}

var modes = []contractv1.Compatibility{
	contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED,
	contractv1.Compatibility_COMPATIBILITY_NONE,
	contractv1.Compatibility_COMPATIBILITY_BACKWARD,
	contractv1.Compatibility_COMPATIBILITY_BACKWARD_TRANSITIVE,
	contractv1.Compatibility_COMPATIBILITY_FORWARD,
	contractv1.Compatibility_COMPATIBILITY_FORWARD_TRANSITIVE,
	contractv1.Compatibility_COMPATIBILITY_FULL,
	contractv1.Compatibility_COMPATIBILITY_FULL_TRANSITIVE,
}

// protects says which directions a mode protects, restated from the
// schema-registry meaning; UNSPECIFIED is the BACKWARD default.
func protects(m contractv1.Compatibility) (backward, forward bool) {
	s := m.String()
	backward = strings.Contains(s, "BACKWARD") || strings.Contains(s, "FULL") || m == contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED
	forward = strings.Contains(s, "FORWARD") || strings.Contains(s, "FULL")
	return backward, forward
}

type ruleCase struct {
	name string
	// edit turns a copy of the base contract into the new version.
	edit func(t testing.TB, c *contractv1.Contract)
	// forward are the changes from base to edited, reverse from edited
	// back to base, each ordered by path then rule.
	forward, reverse []want
}

// one is a case whose edit makes one change at path: the forward rule
// from base to edited, the reverse rule back.
func one(name, path, forward, reverse string, edit func(t testing.TB, c *contractv1.Contract)) ruleCase {
	return ruleCase{name: name, edit: edit, forward: []want{{forward, path}}, reverse: []want{{reverse, path}}}
}

// retyped is a case that changes the type of the field of the dotted
// name, seen at path.
func retyped(name, fieldName string, to contractv1.FieldType, path, forward, reverse string) ruleCase {
	return one(name, path, forward, reverse, func(t testing.TB, c *contractv1.Contract) { field(t, c, fieldName).Type = to })
}

// unchanged is a case whose edit changes nothing a rule sees.
func unchanged(name string, edit func(t testing.TB, c *contractv1.Contract)) ruleCase {
	return ruleCase{name: name, edit: edit}
}

func ruleCases() []ruleCase {
	return []ruleCase{
		one("optional field added", "fields.extra", classify.FieldAddedOptional, classify.FieldRemoved, func(t testing.TB, c *contractv1.Contract) {
			c.Fields = append(c.Fields, &contractv1.Field{Name: "extra", Type: contractv1.FieldType_FIELD_TYPE_STRING})
		}),
		one("required field added", "fields.extra", classify.FieldAddedRequired, classify.FieldRemoved, func(t testing.TB, c *contractv1.Contract) {
			c.Fields = append(c.Fields, &contractv1.Field{Name: "extra", Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true})
		}),
		{
			name: "declared rename",
			edit: func(t testing.TB, c *contractv1.Contract) {
				field(t, c, "free").Name = "libre"
				c.Mapping.RenamedFrom = map[string]string{"libre": "free"}
			},
			forward: []want{{classify.FieldRenamed, "fields.libre"}},
			// The old version declares no rename back, so the reverse is a
			// removal plus an addition.
			reverse: []want{{classify.FieldAddedOptional, "fields.free"}, {classify.FieldRemoved, "fields.libre"}},
		},
		{
			name: "undeclared rename is a removal and an addition",
			edit: func(t testing.TB, c *contractv1.Contract) {
				field(t, c, "free").Name = "libre"
			},
			forward: []want{{classify.FieldRemoved, "fields.free"}, {classify.FieldAddedOptional, "fields.libre"}},
			reverse: []want{{classify.FieldAddedOptional, "fields.free"}, {classify.FieldRemoved, "fields.libre"}},
		},
		{
			name: "declared rename of a nested field with a type change",
			edit: func(t testing.TB, c *contractv1.Contract) {
				f := field(t, c, "addr.zip")
				f.Name, f.Type, f.Pattern = "postcode", contractv1.FieldType_FIELD_TYPE_INT32, ""
				c.Mapping.RenamedFrom = map[string]string{"addr.postcode": "zip"}
			},
			forward: []want{
				{classify.FieldRenamed, "fields.addr.fields.postcode"},
				{classify.ConstraintRelaxed, "fields.addr.fields.postcode.pattern"},
				{classify.FieldTypeChanged, "fields.addr.fields.postcode.type"},
			},
			reverse: []want{{classify.FieldRemoved, "fields.addr.fields.postcode"}, {classify.FieldAddedOptional, "fields.addr.fields.zip"}},
		},
		retyped("type changed", "cust", contractv1.FieldType_FIELD_TYPE_STRING, "fields.cust.type", classify.FieldTypeChanged, classify.FieldTypeChanged),
		retyped("INT64 to DOUBLE is a change, not a widening", "cust", contractv1.FieldType_FIELD_TYPE_DOUBLE, "fields.cust.type", classify.FieldTypeChanged, classify.FieldTypeChanged),
		retyped("INT32 widened to INT64", "n", contractv1.FieldType_FIELD_TYPE_INT64, "fields.n.type", classify.FieldTypeWidened, classify.FieldTypeNarrowed),
		retyped("INT32 widened to DOUBLE", "n", contractv1.FieldType_FIELD_TYPE_DOUBLE, "fields.n.type", classify.FieldTypeWidened, classify.FieldTypeNarrowed),
		retyped("FLOAT widened to DOUBLE", "ratio", contractv1.FieldType_FIELD_TYPE_DOUBLE, "fields.ratio.type", classify.FieldTypeWidened, classify.FieldTypeNarrowed),
		retyped("UUID widened to STRING", "ref", contractv1.FieldType_FIELD_TYPE_STRING, "fields.ref.type", classify.FieldTypeWidened, classify.FieldTypeNarrowed),
		retyped("array items widened", "tags[]", contractv1.FieldType_FIELD_TYPE_INT64, "fields.tags.items.type", classify.FieldTypeWidened, classify.FieldTypeNarrowed),
		one("object replaced by a string reports only the type change", "fields.addr.type", classify.FieldTypeChanged, classify.FieldTypeChanged, func(t testing.TB, c *contractv1.Contract) {
			f := field(t, c, "addr")
			f.Type, f.Fields = contractv1.FieldType_FIELD_TYPE_STRING, nil
		}),
		one("made required", "fields.free.required", classify.FieldMadeRequired, classify.FieldMadeOptional, func(t testing.TB, c *contractv1.Contract) { field(t, c, "free").Required = true }),
		one("key changed", "key", classify.KeyChanged, classify.KeyChanged, func(t testing.TB, c *contractv1.Contract) { field(t, c, "cust").Key = true }),
		{
			name: "renamed key is a rename, not a key change",
			edit: func(t testing.TB, c *contractv1.Contract) {
				field(t, c, "id").Name = "order_id"
				c.Mapping.RenamedFrom = map[string]string{"order_id": "id"}
			},
			forward: []want{{classify.FieldRenamed, "fields.order_id"}},
			reverse: []want{{classify.FieldAddedRequired, "fields.id"}, {classify.FieldRemoved, "fields.order_id"}, {classify.KeyChanged, "key"}},
		},
		one("identifier format changed", "fields.cust.identifier.format", classify.IdentifierFormatChanged, classify.IdentifierFormatChanged, func(t testing.TB, c *contractv1.Contract) { field(t, c, "cust").Identifier.Format = "uuid" }),
		one("identifier namespace changed", "fields.cust.identifier.namespace", classify.IdentifierNamespaceChanged, classify.IdentifierNamespaceChanged, func(t testing.TB, c *contractv1.Contract) { field(t, c, "cust").Identifier.Namespace = "account" }),
		one("identifier added", "fields.ref.identifier", classify.IdentifierAdded, classify.IdentifierRemoved, func(t testing.TB, c *contractv1.Contract) {
			field(t, c, "ref").Identifier = &contractv1.Identifier{Namespace: "ticket", Format: "uuid"}
		}),
		one("enum value added", "fields.s.enum", classify.EnumValueAdded, classify.EnumValueRemoved, func(t testing.TB, c *contractv1.Contract) { f := field(t, c, "s"); f.Enum = append(f.Enum, "c") }),
		unchanged("enum reordered is no change", func(t testing.TB, c *contractv1.Contract) { f := field(t, c, "s"); f.Enum = []string{"b", "a"} }),
		one("additional fields refused", "additional_fields", classify.ConstraintTightened, classify.ConstraintRelaxed, func(t testing.TB, c *contractv1.Contract) {
			c.AdditionalFields = contractv1.AdditionalFields_ADDITIONAL_FIELDS_REJECT
		}),
		unchanged("additional fields allowed explicitly is no change", func(t testing.TB, c *contractv1.Contract) {
			c.AdditionalFields = contractv1.AdditionalFields_ADDITIONAL_FIELDS_ALLOW
		}),
		one("enum introduced", "fields.free.enum", classify.ConstraintTightened, classify.ConstraintRelaxed, func(t testing.TB, c *contractv1.Contract) { field(t, c, "free").Enum = []string{"x", "y"} }),
		one("pattern changed", "fields.p.pattern", classify.PatternChanged, classify.PatternChanged, func(t testing.TB, c *contractv1.Contract) { field(t, c, "p").Pattern = "^[a-z0-9]+$" }),
		one("pattern added", "fields.free.pattern", classify.ConstraintTightened, classify.ConstraintRelaxed, func(t testing.TB, c *contractv1.Contract) { field(t, c, "free").Pattern = "^x" }),
		one("nested pattern changed", "fields.addr.fields.zip.pattern", classify.PatternChanged, classify.PatternChanged, func(t testing.TB, c *contractv1.Contract) { field(t, c, "addr.zip").Pattern = "^[0-9]{4,5}$" }),
		one("nested required field added", "fields.addr.fields.city", classify.FieldAddedRequired, classify.FieldRemoved, func(t testing.TB, c *contractv1.Contract) {
			f := field(t, c, "addr")
			f.Fields = append(f.Fields, &contractv1.Field{Name: "city", Type: contractv1.FieldType_FIELD_TYPE_STRING, Required: true})
		}),
		one("min raised", "fields.n.min", classify.ConstraintTightened, classify.ConstraintRelaxed, func(t testing.TB, c *contractv1.Contract) { field(t, c, "n").Min = ptr(1.0) }),
		one("max lowered", "fields.n.max", classify.ConstraintTightened, classify.ConstraintRelaxed, func(t testing.TB, c *contractv1.Contract) { field(t, c, "n").Max = ptr(9.5) }),
		one("max removed", "fields.n.max", classify.ConstraintRelaxed, classify.ConstraintTightened, func(t testing.TB, c *contractv1.Contract) { field(t, c, "n").Max = nil }),
		one("min added", "fields.ratio.min", classify.ConstraintTightened, classify.ConstraintRelaxed, func(t testing.TB, c *contractv1.Contract) { field(t, c, "ratio").Min = ptr(0.0) }),
		{
			name: "lengths tightened",
			edit: func(t testing.TB, c *contractv1.Contract) {
				f := field(t, c, "s")
				f.MinLength, f.MaxLength = ptr(int64(2)), ptr(int64(4))
			},
			forward: []want{{classify.ConstraintTightened, "fields.s.max_length"}, {classify.ConstraintTightened, "fields.s.min_length"}},
			reverse: []want{{classify.ConstraintRelaxed, "fields.s.max_length"}, {classify.ConstraintRelaxed, "fields.s.min_length"}},
		},
		one("layout changed", "fields.ts.layout", classify.LayoutChanged, classify.LayoutChanged, func(t testing.TB, c *contractv1.Contract) { field(t, c, "ts").Layout = "2006-01-02 15:04:05" }),
		{
			name: "descriptions changed",
			edit: func(t testing.TB, c *contractv1.Contract) {
				c.Description = "other"
				field(t, c, "ts").Description = "when it was recorded"
			},
			forward: []want{{classify.DescriptionChanged, "description"}, {classify.DescriptionChanged, "fields.ts.description"}},
			reverse: []want{{classify.DescriptionChanged, "description"}, {classify.DescriptionChanged, "fields.ts.description"}},
		},
		one("check added", "checks.cust_present", classify.CheckAdded, classify.CheckRemoved, func(t testing.TB, c *contractv1.Contract) {
			c.Checks = append(c.Checks, &contractv1.Check{Name: "cust_present", Rule: "required(cust)", Policy: contractv1.Policy_POLICY_QUARANTINE})
		}),
		{
			name: "check rule, policy, threshold and description changed",
			edit: func(t testing.TB, c *contractv1.Contract) {
				ch := c.Checks[1]
				ch.Rule = "mean_drift(n, max_relative_change: 0.2)"
				ch.Policy = contractv1.Policy_POLICY_BLOCK
				ch.Threshold = &contractv1.Threshold{Limit: &contractv1.Threshold_Fraction{Fraction: 0.01}}
				ch.Description = "n moves"
			},
			forward: []want{
				{classify.DescriptionChanged, "checks.n_drift.description"},
				{classify.CheckChanged, "checks.n_drift.policy"},
				{classify.CheckChanged, "checks.n_drift.rule"},
				{classify.CheckChanged, "checks.n_drift.threshold"},
			},
			reverse: []want{
				{classify.DescriptionChanged, "checks.n_drift.description"},
				{classify.CheckChanged, "checks.n_drift.policy"},
				{classify.CheckChanged, "checks.n_drift.rule"},
				{classify.CheckChanged, "checks.n_drift.threshold"},
			},
		},
		{
			name: "mapping field changed and added",
			edit: func(t testing.TB, c *contractv1.Contract) {
				c.Mapping.Fields["n"].Cast = &contractv1.Cast{To: contractv1.FieldType_FIELD_TYPE_INT64}
				c.Mapping.Fields["cust"] = &contractv1.FieldMapping{From: "cust"}
				c.Mapping.CanonicalVersion = 2
			},
			forward: []want{{classify.MappingChanged, "mapping.canonical_version"}, {classify.MappingChanged, "mapping.fields.cust"}, {classify.MappingChanged, "mapping.fields.n"}},
			reverse: []want{{classify.MappingChanged, "mapping.canonical_version"}, {classify.MappingChanged, "mapping.fields.cust"}, {classify.MappingChanged, "mapping.fields.n"}},
		},
		one("mapping target changed", "mapping.canonical", classify.MappingTargetChanged, classify.MappingTargetChanged, func(t testing.TB, c *contractv1.Contract) { c.Mapping.Canonical = "test.other" }),
		{
			name: "mapping added where there was none",
			edit: func(t testing.TB, c *contractv1.Contract) {
				c.Mapping = nil
			},
			forward: []want{{classify.MappingTargetChanged, "mapping.canonical"}, {classify.MappingChanged, "mapping.fields.id"}, {classify.MappingChanged, "mapping.fields.n"}},
			reverse: []want{{classify.MappingChanged, "mapping.canonical"}, {classify.MappingChanged, "mapping.fields.id"}, {classify.MappingChanged, "mapping.fields.n"}},
		},
		{
			name: "policy fields changed",
			edit: func(t testing.TB, c *contractv1.Contract) {
				c.Compatibility = contractv1.Compatibility_COMPATIBILITY_FULL
				c.NoticePeriod = "30d"
				c.Owner = "team-b"
			},
			forward: []want{{classify.CompatibilityChanged, "compatibility"}, {classify.NoticePeriodChanged, "notice_period"}, {classify.OwnerChanged, "owner"}},
			reverse: []want{{classify.CompatibilityChanged, "compatibility"}, {classify.NoticePeriodChanged, "notice_period"}, {classify.OwnerChanged, "owner"}},
		},
		unchanged("same notice written differently is no change", func(t testing.TB, c *contractv1.Contract) { c.NoticePeriod = "336h" }),
		{
			name: "labels changed",
			edit: func(t testing.TB, c *contractv1.Contract) {
				c.Labels = map[string]string{"tier": "silver", "domain": "sales"}
			},
			forward: []want{{classify.LabelChanged, "labels.domain"}, {classify.LabelChanged, "labels.tier"}},
			reverse: []want{{classify.LabelChanged, "labels.domain"}, {classify.LabelChanged, "labels.tier"}},
		},
		one("partition time declared", "partition_time", classify.PartitionTimeChanged, classify.PartitionTimeChanged, func(t testing.TB, c *contractv1.Contract) {
			c.PartitionTime = &contractv1.PartitionTime{Field: "created_at", Granularity: contractv1.Granularity_GRANULARITY_DAY, AllowedLateness: "2d"}
		}),
		one("subject changed", "subject", classify.SubjectChanged, classify.SubjectChanged, func(t testing.TB, c *contractv1.Contract) { c.Subject = "test.other" }),
		unchanged("fields reordered is no change", func(t testing.TB, c *contractv1.Contract) { slices.Reverse(c.Fields) }),
	}
}

func TestCompareRulesBothDirections(t *testing.T) {
	t.Parallel()
	base := loadBase(t)
	for _, tc := range ruleCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			edited := proto.Clone(base).(*contractv1.Contract)
			tc.edit(t, edited)
			if g := got(classify.Compare(base, edited)); !slices.Equal(g, tc.forward) {
				t.Errorf("Compare(base, edited) = %v, want %v", g, tc.forward)
			}
			if g := got(classify.Compare(edited, base)); !slices.Equal(g, tc.reverse) {
				t.Errorf("Compare(edited, base) = %v, want %v", g, tc.reverse)
			}
		})
	}
}

func TestEveryRuleIsCoveredBothWays(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, tc := range ruleCases() {
		for _, w := range slices.Concat(tc.forward, tc.reverse) {
			seen[w.rule] = true
		}
	}
	for _, r := range classify.Rules() {
		if !seen[r.ID] {
			t.Errorf("rule %s is exercised by no case in ruleCases", r.ID)
		}
		if _, ok := breaks[r.ID]; !ok {
			t.Errorf("rule %s has no expected levels in the breaks table", r.ID)
		}
	}
	if len(breaks) != len(classify.Rules()) {
		t.Errorf("breaks table has %d rules, package has %d", len(breaks), len(classify.Rules()))
	}
}

func TestClassifyEveryMode(t *testing.T) {
	t.Parallel()
	base := loadBase(t)
	for _, tc := range ruleCases() {
		edited := proto.Clone(base).(*contractv1.Contract)
		tc.edit(t, edited)
		for _, dir := range []struct {
			name     string
			old, new *contractv1.Contract
			want     []want
		}{{"forward", base, edited, tc.forward}, {"reverse", edited, base, tc.reverse}} {
			for _, mode := range modes {
				t.Run(fmt.Sprintf("%s/%s/%s", tc.name, dir.name, mode), func(t *testing.T) {
					t.Parallel()
					backward, forward := protects(mode)
					res := classify.Classify([]*contractv1.Contract{dir.old}, dir.new, mode)
					if g := got(res.Changes); !slices.Equal(g, dir.want) {
						t.Fatalf("changes = %v, want %v", g, dir.want)
					}
					wantBreaking := false
					for _, ch := range res.Changes {
						b := breaks[ch.GetRule()]
						wantLevel := registryv1.ChangeLevel_CHANGE_LEVEL_ADDITIVE
						if backward && b[0] || forward && b[1] {
							wantLevel = registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING
							wantBreaking = true
						}
						if ch.GetLevel() != wantLevel {
							t.Errorf("%s@%s level = %s, want %s", ch.GetRule(), ch.GetPath(), ch.GetLevel(), wantLevel)
						}
						if ch.GetComparedVersion() != 1 {
							t.Errorf("%s@%s compared version = %d, want 1", ch.GetRule(), ch.GetPath(), ch.GetComparedVersion())
						}
						if ch.GetMessage() == "" {
							t.Errorf("%s@%s has no message", ch.GetRule(), ch.GetPath())
						}
					}
					if res.Breaking != wantBreaking {
						t.Errorf("Breaking = %v, want %v", res.Breaking, wantBreaking)
					}
				})
			}
		}
	}
}

// TestClassifyTransitive has v2 make a field required (as if registered
// under NONE) and v3 only document it: the latest-only modes see a
// description change, the transitive ones also see, relative to v1, the
// change v2 made, and level it by their direction.
func TestClassifyTransitive(t *testing.T) {
	t.Parallel()
	v1 := loadBase(t)
	v2 := proto.Clone(v1).(*contractv1.Contract)
	field(t, v2, "free").Required = true // breaking BACKWARD, accepted under NONE earlier
	v3 := proto.Clone(v2).(*contractv1.Contract)
	field(t, v3, "free").Description = "now documented"
	history := []*contractv1.Contract{v1, v2}

	tests := []struct {
		mode         contractv1.Compatibility
		wantChanges  []string
		wantBreaking bool
	}{
		{contractv1.Compatibility_COMPATIBILITY_BACKWARD, []string{"v2 DESCRIPTION_CHANGED@fields.free.description ADDITIVE"}, false},
		{contractv1.Compatibility_COMPATIBILITY_BACKWARD_TRANSITIVE, []string{
			"v1 DESCRIPTION_CHANGED@fields.free.description ADDITIVE",
			"v2 DESCRIPTION_CHANGED@fields.free.description ADDITIVE",
			"v1 FIELD_MADE_REQUIRED@fields.free.required BREAKING",
		}, true},
		{contractv1.Compatibility_COMPATIBILITY_FORWARD_TRANSITIVE, []string{
			"v1 DESCRIPTION_CHANGED@fields.free.description ADDITIVE",
			"v2 DESCRIPTION_CHANGED@fields.free.description ADDITIVE",
			"v1 FIELD_MADE_REQUIRED@fields.free.required ADDITIVE",
		}, false},
		{contractv1.Compatibility_COMPATIBILITY_FULL_TRANSITIVE, []string{
			"v1 DESCRIPTION_CHANGED@fields.free.description ADDITIVE",
			"v2 DESCRIPTION_CHANGED@fields.free.description ADDITIVE",
			"v1 FIELD_MADE_REQUIRED@fields.free.required BREAKING",
		}, true},
		{contractv1.Compatibility_COMPATIBILITY_NONE, []string{"v2 DESCRIPTION_CHANGED@fields.free.description ADDITIVE"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			t.Parallel()
			res := classify.Classify(history, v3, tt.mode)
			var g []string
			for _, ch := range res.Changes {
				g = append(g, fmt.Sprintf("v%d %s@%s %s", ch.GetComparedVersion(), ch.GetRule(), ch.GetPath(),
					strings.TrimPrefix(ch.GetLevel().String(), "CHANGE_LEVEL_")))
			}
			if !slices.Equal(g, tt.wantChanges) {
				t.Errorf("changes = %q, want %q", g, tt.wantChanges)
			}
			if res.Breaking != tt.wantBreaking {
				t.Errorf("Breaking = %v, want %v", res.Breaking, tt.wantBreaking)
			}
		})
	}
}

func TestClassifyFirstVersionHasNoChanges(t *testing.T) {
	t.Parallel()
	res := classify.Classify(nil, loadBase(t), contractv1.Compatibility_COMPATIBILITY_FULL_TRANSITIVE)
	if len(res.Changes) != 0 || res.Breaking {
		t.Errorf("Classify(no history) = %d changes, breaking %v; want 0, false", len(res.Changes), res.Breaking)
	}
}

func TestCompareValues(t *testing.T) {
	t.Parallel()
	base := loadBase(t)
	edited := proto.Clone(base).(*contractv1.Contract)
	field(t, edited, "n").Min = ptr(2.5)
	field(t, edited, "cust").Identifier.Format = "uuid"
	edited.Mapping.Fields["n"].Translate = &contractv1.Translate{From: "a/x", To: "a/y"}
	var g []string
	for _, ch := range classify.Compare(base, edited) {
		g = append(g, fmt.Sprintf("%s %q -> %q", ch.GetPath(), ch.GetOldValue(), ch.GetNewValue()))
	}
	w := []string{
		`fields.cust.identifier.format "legacy-int" -> "uuid"`,
		`fields.n.min "0" -> "2.5"`,
		`mapping.fields.n "{\"from\":\"n\"}" -> "{\"from\":\"n\",\"translate\":{\"from\":\"a/x\",\"to\":\"a/y\"}}"`,
	}
	if !slices.Equal(g, w) {
		t.Errorf("values:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func TestUnknownRuleIsBreaking(t *testing.T) {
	t.Parallel()
	if g := classify.Level("NOT_A_RULE", contractv1.Compatibility_COMPATIBILITY_NONE); g != registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
		t.Errorf("Level(unknown rule) = %s, want BREAKING", g)
	}
	if g := classify.Level(classify.FieldRemoved, contractv1.Compatibility(99)); g != registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
		t.Errorf("Level(FIELD_REMOVED, unknown mode) = %s, want BREAKING (strictest mode)", g)
	}
}

func TestCompareNilContracts(t *testing.T) {
	t.Parallel()
	base := loadBase(t)
	if g := classify.Compare(nil, nil); len(g) != 0 {
		t.Errorf("Compare(nil, nil) = %v, want no changes", got(g))
	}
	res := classify.Classify([]*contractv1.Contract{nil}, base, contractv1.Compatibility_COMPATIBILITY_FULL)
	if len(res.Changes) != 0 || res.Breaking {
		t.Errorf("Classify(history of nil) = %v, want nothing (nil versions are skipped)", got(res.Changes))
	}
	if g := classify.Compare(nil, base); len(g) == 0 {
		t.Errorf("Compare(nil, base) found no changes, want every field added")
	}
}

// A changed partition time is one change per attribute that changed.
func TestPartitionTimeAttributes(t *testing.T) {
	t.Parallel()
	pt := func(g contractv1.Granularity, late string) *contractv1.Contract {
		return &contractv1.Contract{Subject: "bank.payments", PartitionTime: &contractv1.PartitionTime{Field: "booked_at", Granularity: g, AllowedLateness: late}}
	}
	changes := classify.Compare(pt(contractv1.Granularity_GRANULARITY_DAY, "2d"), pt(contractv1.Granularity_GRANULARITY_HOUR, "2d"))
	if len(changes) != 1 || changes[0].GetRule() != classify.PartitionTimeChanged || changes[0].GetPath() != "partition_time.granularity" ||
		changes[0].GetOldValue() != "DAY" || changes[0].GetNewValue() != "HOUR" {
		t.Fatalf("changes = %v, want one PARTITION_TIME_CHANGED of partition_time.granularity DAY -> HOUR", changes)
	}
	if changes := classify.Compare(pt(contractv1.Granularity_GRANULARITY_DAY, "2d"), pt(contractv1.Granularity_GRANULARITY_DAY, "2d")); len(changes) != 0 {
		t.Fatalf("an unchanged partition time gave %v", changes)
	}
}

// A DECIMAL's precision and scale are part of its type: fewer digits
// narrow it (breaking under BACKWARD), more widen it (additive there), and
// fewer of one with more of the other change it.
func TestDecimalPrecisionAndScale(t *testing.T) {
	t.Parallel()
	dec := func(p, s *int32) *contractv1.Contract {
		return &contractv1.Contract{Subject: "s", Owner: "o", Fields: []*contractv1.Field{
			{Name: "id", Type: contractv1.FieldType_FIELD_TYPE_INT64, Required: true, Key: true},
			{Name: "amount", Type: contractv1.FieldType_FIELD_TYPE_DECIMAL, Precision: p, Scale: s},
		}}
	}
	for _, tc := range []struct {
		name     string
		from, to *contractv1.Contract
		rule     string
		breaking bool
	}{
		{"numeric(12,4) to numeric(8,1)", dec(ptr[int32](12), ptr[int32](4)), dec(ptr[int32](8), ptr[int32](1)), classify.FieldTypeNarrowed, true},
		{"numeric(8,1) to numeric(12,4)", dec(ptr[int32](8), ptr[int32](1)), dec(ptr[int32](12), ptr[int32](4)), classify.FieldTypeWidened, false},
		{"numeric(12,4) to numeric(12,2): fewer decimals, more integer digits", dec(ptr[int32](12), ptr[int32](4)), dec(ptr[int32](12), ptr[int32](2)), classify.FieldTypeChanged, true},
		{"numeric(10,2) to numeric(10,4): more decimals, fewer integer digits", dec(ptr[int32](10), ptr[int32](2)), dec(ptr[int32](10), ptr[int32](4)), classify.FieldTypeChanged, true},
		{"numeric(10,2) to numeric(12,2)", dec(ptr[int32](10), ptr[int32](2)), dec(ptr[int32](12), ptr[int32](2)), classify.FieldTypeWidened, false},
		{"numeric to numeric(10,2)", dec(nil, nil), dec(ptr[int32](10), ptr[int32](2)), classify.FieldTypeNarrowed, true},
		{"numeric(10,2) to numeric", dec(ptr[int32](10), ptr[int32](2)), dec(nil, nil), classify.FieldTypeWidened, false},
		{"numeric(10) is numeric(10,0)", dec(ptr[int32](10), nil), dec(ptr[int32](10), ptr[int32](0)), "", false},
	} {
		res := classify.Classify([]*contractv1.Contract{tc.from}, tc.to, contractv1.Compatibility_COMPATIBILITY_BACKWARD)
		g := got(res.Changes)
		if tc.rule == "" {
			if len(g) != 0 {
				t.Errorf("%s: changes %v, want none", tc.name, g)
			}
			continue
		}
		want := []want{{tc.rule, "fields.amount.precision"}}
		if !slices.Equal(g, want) || res.Breaking != tc.breaking {
			t.Errorf("%s: changes %v breaking %v, want %v breaking %v", tc.name, g, res.Breaking, want, tc.breaking)
		}
	}
}
