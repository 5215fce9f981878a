// Package interop converts contracts written in other standards (the Open
// Data Contract Standard, JSON Schema) into Seam contracts and back. Every
// conversion returns a Report of what did not carry over exactly, so nothing
// is dropped silently; a strict conversion turns those losses into an error.
package interop

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Format is a language a contract document is written in.
type Format int

// Formats a contract document may be written in.
const (
	FormatUnknown Format = iota
	// FormatSeam is Seam's own YAML or JSON contract.
	FormatSeam
	// FormatODCS is an Open Data Contract Standard v3 contract.
	FormatODCS
	// FormatJSONSchema is a JSON Schema (draft 2020-12 or draft-07) of one record.
	FormatJSONSchema
	// FormatAvro is an Avro schema of one record.
	FormatAvro
)

var formatNames = map[Format]string{FormatSeam: "seam", FormatODCS: "odcs", FormatJSONSchema: "jsonschema", FormatAvro: "avro"}

// String returns the name the CLI and the API use: seam, odcs or jsonschema.
func (f Format) String() string {
	if n, ok := formatNames[f]; ok {
		return n
	}
	return "unknown"
}

// ParseFormat reads a format name: seam, odcs or jsonschema (also
// "json-schema"), in any case.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "seam":
		return FormatSeam, nil
	case "odcs":
		return FormatODCS, nil
	case "jsonschema", "json-schema", "json_schema":
		return FormatJSONSchema, nil
	}
	return FormatUnknown, fmt.Errorf("unknown contract format %q; want seam, odcs or jsonschema", s)
}

// FormatOf decides a file's format by its name, the way the CLI does:
// "*.odcs.yaml", "*.odcs.yml" and "*.odcs.json" are ODCS; "*.schema.json"
// and "*.jsonschema.json" are JSON Schema; anything else is Seam's own.
func FormatOf(name string) Format {
	base := strings.ToLower(filepath.Base(name))
	for _, ext := range []string{".odcs.yaml", ".odcs.yml", ".odcs.json"} {
		if strings.HasSuffix(base, ext) {
			return FormatODCS
		}
	}
	for _, ext := range []string{".schema.json", ".jsonschema.json", ".jsonschema"} {
		if strings.HasSuffix(base, ext) {
			return FormatJSONSchema
		}
	}
	return FormatSeam
}

// Kind says what happened to one part of a foreign document.
type Kind int

// Kinds of note. Dropped and Approximated are losses: a strict conversion
// refuses a document that has any. Kept and Caveat are not losses.
const (
	// Dropped: Seam has no equivalent; the part is not carried over.
	Dropped Kind = iota + 1
	// Approximated: carried over with a different meaning, stricter or
	// looser than the original; the message says how.
	Approximated
	// Kept: carried over as a contract label, metadata Seam stores and
	// exports again but does not act on.
	Kept
	// Caveat: carried over as the same rule, but Seam reads JSON values by
	// rules every Seam contract shares, which differ from the original
	// standard's at an edge the message names (an integer written 12.0).
	// Nothing in the document could be written otherwise to avoid it, so
	// it is not a loss; the message says which records the verdicts
	// differ on.
	Caveat
)

// String returns the kind as reports print it.
func (k Kind) String() string {
	switch k {
	case Dropped:
		return "DROPPED"
	case Approximated:
		return "APPROXIMATED"
	case Kept:
		return "KEPT"
	case Caveat:
		return "CAVEAT"
	}
	return "UNKNOWN"
}

// Loss reports whether the kind counts against a strict conversion.
func (k Kind) Loss() bool { return k == Dropped || k == Approximated }

// Note is one part of a document that did not carry over exactly.
type Note struct {
	// Path locates the part in the source document, for example
	// "schema[0].properties[2].classification" or "properties.email.format".
	Path    string
	Kind    Kind
	Message string
}

// String renders the note as "KIND path: message".
func (n Note) String() string {
	return fmt.Sprintf("%s %s: %s", n.Kind, n.Path, n.Message)
}

// Report lists the notes of one conversion in document order.
type Report struct {
	Notes []Note
}

// Add appends a note.
func (r *Report) Add(path string, kind Kind, format string, args ...any) {
	r.Notes = append(r.Notes, Note{Path: path, Kind: kind, Message: fmt.Sprintf(format, args...)})
}

// Losses returns the notes that are losses (Dropped or Approximated).
func (r *Report) Losses() []Note {
	var out []Note
	for _, n := range r.Notes {
		if n.Kind.Loss() {
			out = append(out, n)
		}
	}
	return out
}

// Strict returns a *LossError when the report has losses, nil otherwise.
func (r *Report) Strict(format Format) error {
	if losses := r.Losses(); len(losses) > 0 {
		return &LossError{Format: format, Notes: losses}
	}
	return nil
}

// StrictIf is Strict(format) for a strict conversion and nil otherwise:
// how every import ends.
func (r *Report) StrictIf(strict bool, format Format) error {
	if !strict {
		return nil
	}
	return r.Strict(format)
}

// ImportOptions tune an import that makes one contract from a schema.
type ImportOptions struct {
	// Source names the document in messages, usually its file name.
	Source string
	// Subject and Owner of the contract, which a schema does not name.
	Subject, Owner string
	// Strict refuses the schema (a *LossError) when the import reports a
	// loss.
	Strict bool
}

// Result is what an import that makes one contract gives: the contract
// and the report of what did not carry over.
type Result struct {
	Contract *contractv1.Contract
	Report   Report
}

// LossError is a strict conversion refused because parts of the document
// have no exact Seam equivalent.
type LossError struct {
	Format Format
	Notes  []Note
}

// Error names how many parts were lost and lists them.
func (e *LossError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "strict %s conversion refused: %d part(s) have no exact Seam equivalent (convert without strict mode to accept them as reported):", e.Format, len(e.Notes))
	for _, n := range e.Notes {
		b.WriteString("\n  ")
		b.WriteString(n.String())
	}
	return b.String()
}

// Error is a document that cannot be converted at all: malformed, not of
// the expected standard, or describing nothing Seam can check.
type Error struct {
	// Source names the document, usually its file name.
	Source string
	// Line and Column locate the problem (1-based); 0 when unknown.
	Line, Column int
	// Path is the place in the document; empty for the whole document.
	Path    string
	Message string
	Err     error
}

// Error renders "source:line:col: path: message", as a contract's own
// load errors read.
func (e *Error) Error() string {
	le := contract.LoadError{Source: e.Source, Line: e.Line, Column: e.Column, Path: e.Path, Message: e.Message}
	return le.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ErrorAt is an Error about v, at its line, column and path (about the
// whole document when v is nil), with the message format and args make.
func ErrorAt(source string, v *Value, format string, args ...any) *Error {
	e := &Error{Source: source, Message: fmt.Sprintf(format, args...)}
	if v != nil {
		e.Line, e.Column, e.Path = v.Line, v.Column, v.Path
	}
	return e
}

// HasConstraints reports whether f declares a constraint on its values (a
// pattern, an enum, a range or a length): what an importer cannot leave
// on an array's items as declared, since the gate checks only the type of
// each element.
func HasConstraints(f *contractv1.Field) bool {
	return f.GetPattern() != "" || len(f.GetEnum()) > 0 || f.Min != nil || f.Max != nil || f.MinLength != nil || f.MaxLength != nil
}
