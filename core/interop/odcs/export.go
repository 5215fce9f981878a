package odcs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/interop"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// ExportOptions tune Export.
type ExportOptions struct {
	// Version is the registry's version number of the contract; it becomes
	// the ODCS version "N.0.0" unless the contract was imported from ODCS
	// and keeps its own version in a label.
	Version int32
	// JSON writes JSON instead of YAML.
	JSON bool
}

// The ODCS v3.1.0 document as Export writes it, keys in the standard's order.
type document struct {
	APIVersion        string           `yaml:"apiVersion" json:"apiVersion"`
	Kind              string           `yaml:"kind" json:"kind"`
	ID                string           `yaml:"id" json:"id"`
	Name              string           `yaml:"name,omitempty" json:"name,omitempty"`
	Version           string           `yaml:"version" json:"version"`
	Status            string           `yaml:"status" json:"status"`
	Domain            string           `yaml:"domain,omitempty" json:"domain,omitempty"`
	DataProduct       string           `yaml:"dataProduct,omitempty" json:"dataProduct,omitempty"`
	Tenant            string           `yaml:"tenant,omitempty" json:"tenant,omitempty"`
	Tags              []string         `yaml:"tags,omitempty" json:"tags,omitempty"`
	Description       *description     `yaml:"description,omitempty" json:"description,omitempty"`
	Schema            []schemaObject   `yaml:"schema" json:"schema"`
	Team              *team            `yaml:"team,omitempty" json:"team,omitempty"`
	SLAProperties     []slaProperty    `yaml:"slaProperties,omitempty" json:"slaProperties,omitempty"`
	CustomProperties  []customProperty `yaml:"customProperties,omitempty" json:"customProperties,omitempty"`
	ContractCreatedTs string           `yaml:"contractCreatedTs,omitempty" json:"contractCreatedTs,omitempty"`
}

type description struct {
	Purpose     string `yaml:"purpose,omitempty" json:"purpose,omitempty"`
	Usage       string `yaml:"usage,omitempty" json:"usage,omitempty"`
	Limitations string `yaml:"limitations,omitempty" json:"limitations,omitempty"`
}

type team struct {
	Name string `yaml:"name" json:"name"`
}

type slaProperty struct {
	Property string `yaml:"property" json:"property"`
	Value    any    `yaml:"value" json:"value"`
	Unit     string `yaml:"unit,omitempty" json:"unit,omitempty"`
}

type customProperty struct {
	Property string `yaml:"property" json:"property"`
	Value    any    `yaml:"value" json:"value"`
}

type schemaObject struct {
	ID                         string           `yaml:"id,omitempty" json:"id,omitempty"`
	Name                       string           `yaml:"name" json:"name"`
	PhysicalName               string           `yaml:"physicalName,omitempty" json:"physicalName,omitempty"`
	PhysicalType               string           `yaml:"physicalType,omitempty" json:"physicalType,omitempty"`
	BusinessName               string           `yaml:"businessName,omitempty" json:"businessName,omitempty"`
	Description                string           `yaml:"description,omitempty" json:"description,omitempty"`
	DataGranularityDescription string           `yaml:"dataGranularityDescription,omitempty" json:"dataGranularityDescription,omitempty"`
	LogicalType                string           `yaml:"logicalType" json:"logicalType"`
	Tags                       []string         `yaml:"tags,omitempty" json:"tags,omitempty"`
	Properties                 []property       `yaml:"properties" json:"properties"`
	Quality                    []quality        `yaml:"quality,omitempty" json:"quality,omitempty"`
	CustomProperties           []customProperty `yaml:"customProperties,omitempty" json:"customProperties,omitempty"`
}

type property struct {
	Name               string           `yaml:"name,omitempty" json:"name,omitempty"`
	LogicalType        string           `yaml:"logicalType,omitempty" json:"logicalType,omitempty"` // none for JSON: ODCS has no logical type for any value
	LogicalTypeOptions map[string]any   `yaml:"logicalTypeOptions,omitempty" json:"logicalTypeOptions,omitempty"`
	PhysicalType       string           `yaml:"physicalType,omitempty" json:"physicalType,omitempty"`
	Required           bool             `yaml:"required,omitempty" json:"required,omitempty"`
	PrimaryKey         bool             `yaml:"primaryKey,omitempty" json:"primaryKey,omitempty"`
	PrimaryKeyPosition int              `yaml:"primaryKeyPosition,omitempty" json:"primaryKeyPosition,omitempty"`
	Description        string           `yaml:"description,omitempty" json:"description,omitempty"`
	Properties         []property       `yaml:"properties,omitempty" json:"properties,omitempty"`
	Items              *property        `yaml:"items,omitempty" json:"items,omitempty"`
	Quality            []quality        `yaml:"quality,omitempty" json:"quality,omitempty"`
	CustomProperties   []customProperty `yaml:"customProperties,omitempty" json:"customProperties,omitempty"`
}

type quality struct {
	Name             string           `yaml:"name,omitempty" json:"name,omitempty"`
	Description      string           `yaml:"description,omitempty" json:"description,omitempty"`
	Type             string           `yaml:"type" json:"type"`
	Metric           string           `yaml:"metric,omitempty" json:"metric,omitempty"`
	Arguments        map[string]any   `yaml:"arguments,omitempty" json:"arguments,omitempty"`
	MustBe           *float64         `yaml:"mustBe,omitempty" json:"mustBe,omitempty"`
	Engine           string           `yaml:"engine,omitempty" json:"engine,omitempty"`
	Implementation   string           `yaml:"implementation,omitempty" json:"implementation,omitempty"`
	Severity         string           `yaml:"severity,omitempty" json:"severity,omitempty"`
	CustomProperties []customProperty `yaml:"customProperties,omitempty" json:"customProperties,omitempty"`
}

var (
	requiredRule = regexp.MustCompile(`^\s*required\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	uniqueRule   = regexp.MustCompile(`^\s*unique\(\s*([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*\)\s*$`)
	noticeDays   = regexp.MustCompile(`^(\d+)d$`)
	noticeHours  = regexp.MustCompile(`^(\d+)h$`)
)

// Export writes c as an ODCS v3.1.0 contract with one schema object. Seam
// parts without an ODCS word travel as seam* custom properties and custom
// quality rules with engine "seam", so Import gives back the same contract.
// The report notes those parts, for readers that are not Seam.
func Export(c *contractv1.Contract, opts ExportOptions) ([]byte, *interop.Report, error) {
	if problems := contract.Validate(c); len(problems) > 0 {
		return nil, nil, fmt.Errorf("export %s to ODCS: the contract is invalid: %w", c.GetSubject(), problems)
	}
	rep := &interop.Report{}
	labels := c.GetLabels()
	take := func(key string) string { return labels[key] }
	version := take(labelPrefix + "version")
	if version == "" {
		n := opts.Version
		if n <= 0 {
			n = 1
		}
		version = fmt.Sprintf("%d.0.0", n)
	}
	doc := &document{
		APIVersion:        APIVersion,
		Kind:              "DataContract",
		ID:                cmp.Or(take(labelPrefix+"id"), c.GetSubject()),
		Name:              take(labelPrefix + "name"),
		Version:           version,
		Status:            cmp.Or(take(labelPrefix+"status"), "active"),
		Domain:            take(labelPrefix + "domain"),
		DataProduct:       take(labelPrefix + "dataProduct"),
		Tenant:            take(labelPrefix + "tenant"),
		Tags:              splitTags(take(labelPrefix + "tags")),
		Team:              &team{Name: c.GetOwner()},
		ContractCreatedTs: take(labelPrefix + "contractCreatedTs"),
	}
	if d := (description{Purpose: take(labelPrefix + "purpose"), Usage: take(labelPrefix + "usage"), Limitations: take(labelPrefix + "limitations")}); d != (description{}) {
		doc.Description = &d
	}
	if n := c.GetNoticePeriod(); n != "" {
		sla := slaProperty{Property: slaNotice, Value: n}
		if m := noticeDays.FindStringSubmatch(n); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			sla.Value, sla.Unit = v, "d"
		} else if m := noticeHours.FindStringSubmatch(n); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			sla.Value, sla.Unit = v, "h"
		}
		doc.SLAProperties = []slaProperty{sla}
	}
	if comp := c.GetCompatibility(); comp != contractv1.Compatibility_COMPATIBILITY_UNSPECIFIED {
		doc.CustomProperties = append(doc.CustomProperties, customProperty{propCompatibility, contract.ShortName(comp)})
	}
	seamLabels := map[string]any{}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, customLabelPrefix):
			doc.CustomProperties = append(doc.CustomProperties, customProperty{strings.TrimPrefix(k, customLabelPrefix), labels[k]})
		case strings.HasPrefix(k, labelPrefix):
			// Written where it came from, above or on the schema object.
		default:
			seamLabels[k] = labels[k]
		}
	}
	if len(seamLabels) > 0 {
		doc.CustomProperties = append(doc.CustomProperties, customProperty{propLabels, seamLabels})
	}

	obj := schemaObject{
		ID:                         take(objectLabelPrefix + "id"),
		Name:                       take(objectLabelPrefix + "name"),
		PhysicalName:               take(objectLabelPrefix + "physicalName"),
		PhysicalType:               take(objectLabelPrefix + "physicalType"),
		BusinessName:               take(objectLabelPrefix + "businessName"),
		Description:                c.GetDescription(),
		DataGranularityDescription: take(objectLabelPrefix + "dataGranularityDescription"),
		LogicalType:                "object",
		Tags:                       splitTags(take(objectLabelPrefix + "tags")),
		CustomProperties:           []customProperty{{propSubject, c.GetSubject()}},
	}
	if obj.Name == "" {
		parts := strings.Split(c.GetSubject(), ".")
		obj.Name = parts[len(parts)-1]
	}
	if af := c.GetAdditionalFields(); af != contractv1.AdditionalFields_ADDITIONAL_FIELDS_UNSPECIFIED {
		obj.CustomProperties = append(obj.CustomProperties, customProperty{propAdditionalFields, contract.ShortName(af)})
		rep.Add("additional_fields", interop.Kept, "ODCS cannot refuse properties a schema object does not list: written as the custom property %s", propAdditionalFields)
	}
	if m := c.GetMapping(); m != nil {
		js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		if err != nil {
			return nil, nil, fmt.Errorf("export %s to ODCS: mapping: %w", c.GetSubject(), err)
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			return nil, nil, fmt.Errorf("export %s to ODCS: mapping: %w", c.GetSubject(), err)
		}
		obj.CustomProperties = append(obj.CustomProperties, customProperty{propMapping, v})
		rep.Add("mapping", interop.Kept, "ODCS has no mapping to a canonical model: written as the custom property %s", propMapping)
	}
	keyPos := map[string]int{}
	for i, k := range contract.Keys(c) {
		keyPos[k] = i + 1
	}
	ex := &exporter{rep: rep, keyPos: keyPos}
	for i, f := range c.GetFields() {
		obj.Properties = append(obj.Properties, ex.property(f, f.GetName(), fmt.Sprintf("fields[%d]", i), false))
	}
	for i, ch := range c.GetChecks() {
		q, field := ex.check(ch, fmt.Sprintf("checks[%d]", i), c)
		if field == "" {
			obj.Quality = append(obj.Quality, q)
			continue
		}
		for j := range obj.Properties {
			if obj.Properties[j].Name == field {
				obj.Properties[j].Quality = append(obj.Properties[j].Quality, q)
			}
		}
	}
	doc.Schema = []schemaObject{obj}
	var out []byte
	var err error
	if opts.JSON {
		out, err = json.MarshalIndent(doc, "", "  ")
		out = append(out, '\n')
	} else {
		out, err = yaml.Marshal(doc)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("export %s to ODCS: %w", c.GetSubject(), err)
	}
	return out, rep, nil
}

func splitTags(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

type exporter struct {
	rep    *interop.Report
	keyPos map[string]int
}

func (ex *exporter) property(f *contractv1.Field, name, path string, items bool) property {
	p := property{Description: f.GetDescription(), Required: f.GetRequired(), PhysicalType: contract.ShortName(f.GetType())}
	if !items {
		p.Name = f.GetName()
	}
	opts := map[string]any{}
	switch f.GetType() {
	case contractv1.FieldType_FIELD_TYPE_STRING:
		p.LogicalType = "string"
	case contractv1.FieldType_FIELD_TYPE_UUID:
		p.LogicalType, opts["format"] = "string", "uuid"
	case contractv1.FieldType_FIELD_TYPE_INT32:
		p.LogicalType, opts["format"] = "integer", "i32"
	case contractv1.FieldType_FIELD_TYPE_INT64:
		p.LogicalType, opts["format"] = "integer", "i64"
	case contractv1.FieldType_FIELD_TYPE_FLOAT:
		p.LogicalType, opts["format"] = "number", "f32"
	case contractv1.FieldType_FIELD_TYPE_DOUBLE:
		p.LogicalType, opts["format"] = "number", "f64"
	case contractv1.FieldType_FIELD_TYPE_DECIMAL:
		p.LogicalType = "number"
		if f.Precision != nil {
			p.PhysicalType = fmt.Sprintf("DECIMAL(%d,%d)", f.GetPrecision(), f.GetScale())
		}
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		p.LogicalType = "boolean"
	case contractv1.FieldType_FIELD_TYPE_DATE:
		p.LogicalType = "date"
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		p.LogicalType = "timestamp"
	case contractv1.FieldType_FIELD_TYPE_OBJECT:
		p.LogicalType = "object"
	case contractv1.FieldType_FIELD_TYPE_ARRAY:
		p.LogicalType = "array"
	}
	if l := f.GetLayout(); l != "" {
		if j, ok := layoutToJava(l); ok {
			opts["format"] = j
		}
		p.CustomProperties = append(p.CustomProperties, customProperty{propLayout, l})
	}
	if f.Min != nil {
		opts["minimum"] = f.GetMin()
	}
	if f.Max != nil {
		opts["maximum"] = f.GetMax()
	}
	lenMin, lenMax := "minLength", "maxLength"
	if f.GetType() == contractv1.FieldType_FIELD_TYPE_ARRAY {
		lenMin, lenMax = "minItems", "maxItems"
	}
	if f.MinLength != nil {
		opts[lenMin] = f.GetMinLength()
	}
	if f.MaxLength != nil {
		opts[lenMax] = f.GetMaxLength()
	}
	if f.GetPattern() != "" {
		opts["pattern"] = f.GetPattern()
	}
	if len(opts) > 0 {
		p.LogicalTypeOptions = opts
	}
	if pos, ok := ex.keyPos[name]; ok && f.GetKey() {
		p.PrimaryKey, p.PrimaryKeyPosition = true, pos
	}
	if id := f.GetIdentifier(); id != nil {
		p.CustomProperties = append(p.CustomProperties, customProperty{propIdentifier, contract.IdentifierString(id)})
		ex.rep.Add(path+".identifier", interop.Kept, "ODCS has no identifier namespaces: written as the custom property %s", propIdentifier)
	}
	if len(f.GetEnum()) > 0 {
		values := make([]any, len(f.GetEnum()))
		for i, e := range f.GetEnum() {
			values[i] = e
		}
		zero := 0.0
		p.Quality = append(p.Quality, quality{Type: "library", Metric: "invalidValues", Arguments: map[string]any{"validValues": values}, MustBe: &zero})
	}
	for i, m := range f.GetFields() {
		p.Properties = append(p.Properties, ex.property(m, name+"."+m.GetName(), fmt.Sprintf("%s.fields[%d]", path, i), false))
	}
	if it := f.GetItems(); it != nil {
		item := ex.property(it, name+contract.ItemsSuffix, path+".items", true)
		p.Items = &item
	}
	return p
}

func severityOf(p contractv1.Policy) string {
	switch p {
	case contractv1.Policy_POLICY_BLOCK, contractv1.Policy_POLICY_QUARANTINE:
		return "error"
	case contractv1.Policy_POLICY_ALERT:
		return "warning"
	}
	return ""
}

// check turns a declared check into an ODCS quality rule, and names the
// top-level field it belongs on ("" for the object).
func (ex *exporter) check(ch *contractv1.Check, path string, c *contractv1.Contract) (quality, string) {
	q := quality{Name: ch.GetName(), Description: ch.GetDescription(), Severity: severityOf(ch.GetPolicy())}
	if ch.GetPolicy() != contractv1.Policy_POLICY_UNSPECIFIED {
		q.CustomProperties = append(q.CustomProperties, customProperty{propPolicy, contract.ShortName(ch.GetPolicy())})
	}
	if th := ch.GetThreshold(); th != nil {
		v := map[string]any{}
		switch l := th.GetLimit().(type) {
		case *contractv1.Threshold_Count:
			v["count"] = l.Count
		case *contractv1.Threshold_Fraction:
			v["fraction"] = l.Fraction
		}
		q.CustomProperties = append(q.CustomProperties, customProperty{propThreshold, v})
	}
	zero := 0.0
	if m := requiredRule.FindStringSubmatch(ch.GetRule()); m != nil && contract.Lookup(c.GetFields(), m[1]) != nil {
		q.Type, q.Metric, q.MustBe = "library", "nullValues", &zero
		return q, m[1]
	}
	if m := uniqueRule.FindStringSubmatch(ch.GetRule()); m != nil {
		var fields []string
		for _, f := range strings.Split(m[1], ",") {
			fields = append(fields, strings.TrimSpace(f))
		}
		if !slices.ContainsFunc(fields, func(f string) bool { return contract.Lookup(c.GetFields(), f) == nil }) {
			q.Type, q.Metric, q.MustBe = "library", "duplicateValues", &zero
			if len(fields) == 1 {
				return q, fields[0]
			}
			props := make([]any, len(fields))
			for i, f := range fields {
				props[i] = f
			}
			q.Arguments = map[string]any{"properties": props}
			return q, ""
		}
	}
	q.Type, q.Engine, q.Implementation = "custom", engineSeam, ch.GetRule()
	ex.rep.Add(path, interop.Kept, "check %s has no ODCS library equivalent: written as a custom rule for engine %s", ch.GetName(), engineSeam)
	return q, ""
}
