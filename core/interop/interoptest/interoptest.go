// Package interoptest finds the shared corpus of public standards (ODCS
// contracts and schemas, the OpenLineage spec and events) for tests,
// validates documents against JSON Schemas from it, and checks that an
// import refuses what it must.
package interoptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// CorpusEnv overrides where the corpus is; by default it is shared/corpus
// beside the repository (../shared/corpus from the repository root, or
// ../../shared/corpus from a worktree).
const CorpusEnv = "SEAM_CORPUS_DIR"

// CorpusDir returns the corpus folder, or skips the test saying where it
// looked and how to point at it.
func CorpusDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(CorpusEnv); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%s=%s: %v", CorpusEnv, dir, err)
		}
		return dir
	}
	root, err := repoRoot()
	if err != nil {
		missing(t, fmt.Sprintf("corpus of public standards not found (%v); set %s", err, CorpusEnv))
	}
	// The corpus sits in shared/ beside the repository; a git worktree one
	// level deeper finds it one more level up.
	for _, up := range []string{"..", filepath.Join("..", "..")} {
		dir := filepath.Join(root, up, "shared", "corpus")
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
	}
	missing(t, fmt.Sprintf("corpus of public standards not found at %s; set %s to its folder to run this test", filepath.Join(root, "..", "shared", "corpus"), CorpusEnv))
	return ""
}

// missing fails the test under CI (CI=true), where the corpus is always
// checked out beside the repository, and skips it elsewhere.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// repoRoot walks up from the working directory to the folder with go.work.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory")
		}
		dir = parent
	}
}

// Schemas compiles JSON Schemas read from files. Every file is registered
// under its own $id (and its path), so schemas that refer to each other by
// URL (OpenLineage's facets refer to the spec) resolve offline.
type Schemas struct {
	c *jsonschema.Compiler
}

// NewSchemas loads the schema files.
func NewSchemas(t testing.TB, files ...string) *Schemas {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		url := "file://" + filepath.ToSlash(f)
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m, ok := doc.(map[string]any); ok {
			if id, ok := m["$id"].(string); ok && id != url {
				if err := c.AddResource(id, doc); err != nil {
					t.Fatalf("%s as %s: %v", f, id, err)
				}
			}
		}
	}
	return &Schemas{c: c}
}

// AssertFormat makes format keywords (date-time, uri, uuid…) assertions
// rather than annotations for the schemas compiled after it.
func (s *Schemas) AssertFormat() *Schemas {
	s.c.AssertFormat()
	return s
}

// Compile returns the schema at url: a file path given to NewSchemas, an
// $id, either with a "#/..." pointer.
func (s *Schemas) Compile(t testing.TB, url string) *jsonschema.Schema {
	t.Helper()
	if !strings.Contains(url, "://") {
		url = "file://" + filepath.ToSlash(url)
	}
	sch, err := s.c.Compile(url)
	if err != nil {
		t.Fatalf("compile schema %s: %v", url, err)
	}
	return sch
}

// ValidateYAML checks a YAML or JSON document against a schema and returns
// the validation error, nil when the document is valid.
func ValidateYAML(sch *jsonschema.Schema, doc []byte) error {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("as JSON: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// Refusal is a document an import must refuse, and a part of the error
// that says why.
type Refusal struct {
	Name, Doc, Want string
}

// Refuses runs importDoc with opts on each refusal's document, in parallel
// subtests, and wants an error that contains Want.
func Refuses[Opts, Result any](t *testing.T, importDoc func([]byte, Opts) (Result, error), opts Opts, refusals []Refusal) {
	t.Helper()
	for _, r := range refusals {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel()
			if _, err := importDoc([]byte(r.Doc), opts); err == nil || !strings.Contains(err.Error(), r.Want) {
				t.Errorf("got error %v, want one saying %q", err, r.Want)
			}
		})
	}
}
