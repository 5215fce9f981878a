package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// readDoc reads a file of the repository's docs; outside the repository
// (a module copied alone) the test skips and says so.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Skipf("%s is not beside this module (%v); the test runs in the repository only", path, err)
	}
	return string(b)
}

// sections splits a Markdown document by its "### " headings.
func sections(doc string) map[string]string {
	out := map[string]string{}
	parts := strings.Split("\n"+doc, "\n### ")
	for _, p := range parts[1:] {
		heading, body, _ := strings.Cut(p, "\n")
		if i := strings.Index(body, "\n## "); i >= 0 {
			body = body[:i]
		}
		out[strings.TrimSpace(heading)] = body
	}
	return out
}

// messages lists the messages reachable from the documents people write,
// and the enums they use, from the descriptors: what the loader accepts.
func messages() ([]protoreflect.MessageDescriptor, []protoreflect.EnumDescriptor) {
	var msgs []protoreflect.MessageDescriptor
	var enums []protoreflect.EnumDescriptor
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if md.ParentFile().Package() == "google.protobuf" || slices.Contains(msgs, md) {
			return
		}
		msgs = append(msgs, md)
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			switch fd.Kind() {
			case protoreflect.MessageKind:
				walk(fd.Message())
			case protoreflect.EnumKind:
				if !slices.Contains(enums, fd.Enum()) {
					enums = append(enums, fd.Enum())
				}
			}
		}
	}
	walk((&contractv1.Contract{}).ProtoReflect().Descriptor())
	walk((&contractv1.CanonicalModel{}).ProtoReflect().Descriptor())
	return msgs, enums
}

var attributeRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")

// TestContractReference keeps docs/contract.md complete and honest: every
// attribute of every message the loader accepts, every enum value, every
// check rule with its form and arguments, and every one_of shape is
// documented; nothing documented is unknown; every example loads.
func TestContractReference(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/contract.md")
	secs := sections(doc)

	msgs, enums := messages()
	for _, md := range msgs {
		body, ok := secs[string(md.Name())]
		if !ok {
			t.Errorf("docs/contract.md has no section \"### %s\"", md.Name())
			continue
		}
		var want []string
		for i := range md.Fields().Len() {
			want = append(want, string(md.Fields().Get(i).Name()))
		}
		for _, name := range want {
			if !strings.Contains(body, "| `"+name+"` |") {
				t.Errorf("docs/contract.md section %s lacks a row for attribute %q", md.Name(), name)
			}
		}
		for _, m := range attributeRow.FindAllStringSubmatch(body, -1) {
			if !slices.Contains(want, m[1]) {
				t.Errorf("docs/contract.md section %s documents %q, which %s does not have", md.Name(), m[1], md.FullName())
			}
		}
	}
	for _, ed := range enums {
		body, ok := secs[string(ed.Name())]
		if !ok {
			t.Errorf("docs/contract.md has no section \"### %s\"", ed.Name())
			continue
		}
		prefix := strings.TrimSuffix(string(ed.Values().Get(0).Name()), "UNSPECIFIED")
		for i := 1; i < ed.Values().Len(); i++ {
			short := strings.TrimPrefix(string(ed.Values().Get(i).Name()), prefix)
			if !strings.Contains(body, "`"+short+"`") {
				t.Errorf("docs/contract.md section %s does not name value %s", ed.Name(), short)
			}
		}
	}

	ref := referenceContract(t, doc)
	var names []string
	for _, r := range check.Rules() {
		names = append(names, r.Name)
		body, ok := secs["`"+r.Name+"`"]
		if !ok {
			t.Errorf("docs/contract.md has no section \"### `%s`\"", r.Name)
			continue
		}
		if !strings.Contains(body, "Form: `"+r.Form+"`") {
			t.Errorf("docs/contract.md section %s does not give the form `%s`", r.Name, r.Form)
		}
		var args []string
		for _, a := range r.Named {
			args = append(args, a.Name)
			if !strings.Contains(body, "| `"+a.Name+"` | "+a.Kind.String()+" | ") {
				t.Errorf("docs/contract.md section %s lacks the row of argument %s (kind %s)", r.Name, a.Name, a.Kind)
			}
			row := "| `" + a.Name + "` | " + a.Kind.String() + " | "
			if !strings.Contains(body, row+a.Default+" |") && !strings.Contains(body, row+"`"+a.Default+"` |") {
				t.Errorf("docs/contract.md section %s gives argument %s another default than %s", r.Name, a.Name, a.Default)
			}
		}
		for _, m := range attributeRow.FindAllStringSubmatch(body, -1) {
			if r.Name != "one_of" && !slices.Contains(args, m[1]) {
				t.Errorf("docs/contract.md section %s documents argument %q, which the rule does not take", r.Name, m[1])
			}
		}
		ex := regexp.MustCompile("(?m)^Example: `(.+?)`").FindStringSubmatch(body)
		if ex == nil {
			t.Errorf("docs/contract.md section %s has no \"Example: `…`\" line", r.Name)
			continue
		}
		if err := compileRule(ref, ex[1]); err != nil {
			t.Errorf("the example of %s does not compile on the reference contract: %v", r.Name, err)
		}
	}
	for heading := range secs {
		if name, ok := strings.CutPrefix(heading, "`"); ok && !slices.Contains(names, strings.TrimSuffix(name, "`")) {
			t.Errorf("docs/contract.md documents rule %s, which the check compiler does not have", heading)
		}
	}
	for _, shape := range check.ShapeNames() {
		if !strings.Contains(secs["`one_of`"], "| `"+shape+"` |") {
			t.Errorf("docs/contract.md section one_of does not document shape %s", shape)
		}
	}
}

// referenceContract is the first contract of the document, which rule
// examples are compiled against.
func referenceContract(t *testing.T, doc string) *contractv1.Contract {
	t.Helper()
	for _, block := range yamlBlocks(doc) {
		if strings.Contains(block, "subject:") {
			c, err := contract.Load([]byte(block), "docs/contract.md")
			if err != nil {
				t.Fatalf("the reference contract does not load: %v", err)
			}
			return c
		}
	}
	t.Fatal("docs/contract.md has no contract example")
	return nil
}

func compileRule(c *contractv1.Contract, rule string) error {
	withRule := &contractv1.Contract{Subject: c.GetSubject(), Fields: c.GetFields(), AdditionalFields: c.GetAdditionalFields(),
		Checks: append(slices.Clone(c.GetChecks()), &contractv1.Check{Name: "example", Rule: rule})}
	_, err := check.Compile(withRule)
	return err
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

func yamlBlocks(doc string) []string {
	var out []string
	for _, m := range yamlBlock.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReferenceExamplesLoad loads every YAML example of docs/contract.md as
// what it is (contract, canonical model or consumer), validates it, and
// compiles a contract's checks and its mapping into the documented model.
func TestReferenceExamplesLoad(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/contract.md")
	var contracts []*contractv1.Contract
	models := map[string]*contractv1.CanonicalModel{}
	for i, block := range yamlBlocks(doc) {
		switch {
		case strings.Contains(block, "subject:"):
			c, err := contract.Load([]byte(block), "docs/contract.md")
			if err != nil {
				t.Fatalf("contract example %d: %v", i, err)
			}
			if p := contract.Validate(c); len(p) > 0 {
				t.Errorf("contract example %d is invalid: %v", i, p)
			}
			if _, err := check.Compile(c); err != nil {
				t.Errorf("contract example %d: checks: %v", i, err)
			}
			contracts = append(contracts, c)
		case strings.Contains(block, "inputs:"):
			var c registryv1.Consumer
			if err := contract.Decode([]byte(block), "docs/contract.md", &c); err != nil {
				t.Errorf("consumer example %d: %v", i, err)
			}
		default:
			m, err := contract.LoadCanonicalModel([]byte(block), "docs/contract.md")
			if err != nil {
				t.Fatalf("canonical model example %d: %v", i, err)
			}
			if p := contract.ValidateCanonicalModel(m); len(p) > 0 {
				t.Errorf("canonical model example %d is invalid: %v", i, p)
			}
			models[m.GetName()] = m
		}
	}
	if len(contracts) == 0 {
		t.Fatal("docs/contract.md has no contract example")
	}
	for _, c := range contracts {
		if _, err := mapping.CompileVersion(c, models[c.GetMapping().GetCanonical()], 1, nil); err != nil {
			t.Errorf("the mapping of %s does not compile into %s: %v", c.GetSubject(), c.GetMapping().GetCanonical(), err)
		}
	}
}

// ruleText finds check rules written in the docs: `rule: "…"`,
// `rule: name(…)` and "Example: `…`" lines.
var ruleText = regexp.MustCompile("rule: \"([^\"]+)\"|rule: ([a-z_]+\\([^)]*\\))|(?m)^Example: `([a-z_]+\\(.*?\\))`")

// TestEveryDocumentedRuleLoads compiles every check rule written in the
// repository's documentation against the contract it is about (the
// reference bank feed or the shop.orders example).
func TestEveryDocumentedRuleLoads(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/contract.md")
	candidates := []*contractv1.Contract{referenceContract(t, doc), examples.ShopOrdersV1(), examples.ShopOrdersV2()}
	found := 0
	for _, path := range []string{"docs/contract.md", "docs/rules.md", "README.md", "deploy/README.md",
		"docs/walkthrough.md", "docs/incident.md", "docs/operations.md", "docs/configuration.md",
		"docs/standards.md", "docs/architecture.md", "docs/development.md", "docs/measurements.md"} {
		for _, m := range ruleText.FindAllStringSubmatch(readDoc(t, path), -1) {
			rule := m[1] + m[2] + m[3]
			found++
			var errs []string
			for _, c := range candidates {
				err := compileRule(c, rule)
				if err == nil {
					errs = nil
					break
				}
				errs = append(errs, c.GetSubject()+": "+err.Error())
			}
			if errs != nil {
				t.Errorf("%s: rule %q does not compile: %s", path, rule, strings.Join(errs, "; "))
			}
		}
	}
	if found < 20 {
		t.Fatalf("found %d rules in the docs; the pattern no longer finds them", found)
	}
}

// TestEveryExampleContractLoads loads the contracts kept in the repository
// as files: the examples and the classifier's test contract.
func TestEveryExampleContractLoads(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../classify/testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("found %v; want the examples and the classifier's contract", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "subject:") {
			m, err := contract.LoadCanonicalModel(data, f)
			if err != nil {
				t.Errorf("%s: %v", f, err)
			} else if p := contract.ValidateCanonicalModel(m); len(p) > 0 {
				t.Errorf("%s is invalid: %v", f, p)
			}
			continue
		}
		c, err := contract.Load(data, f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if p := contract.Validate(c); len(p) > 0 {
			t.Errorf("%s is invalid: %v", f, p)
		}
		if _, err := check.Compile(c); err != nil {
			t.Errorf("%s: checks: %v", f, err)
		}
	}
}
