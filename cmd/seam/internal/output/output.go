// Package output prints what seam commands answer: aligned tables for
// people, JSON with proto field names for scripts, and the small
// formatting rules (times, enums, rates, "-" for nothing) every command
// shares.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The output formats of -o.
const (
	Table = "table"
	JSON  = "json"
)

var (
	indented = protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}
	// Line encodes a message as one line of JSON with proto field names.
	Line = protojson.MarshalOptions{UseProtoNames: true}
)

// Proto writes m as indented JSON with proto field names.
func Proto(w io.Writer, m proto.Message) error { return writeProto(w, indented, m) }

// ProtoLine writes m as one line of JSON: a line of an NDJSON stream.
func ProtoLine(w io.Writer, m proto.Message) error { return writeProto(w, Line, m) }

func writeProto(w io.Writer, o protojson.MarshalOptions, m proto.Message) error {
	b, err := MarshalProto(o, m)
	if err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// Value writes a plain Go value as indented JSON.
func Value(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Tab writes aligned columns.
type Tab struct{ tw *tabwriter.Writer }

// NewTable starts a table with its header row.
func NewTable(w io.Writer, header ...string) *Tab {
	t := &Tab{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.Row(header...)
	return t
}

// Row adds one row.
func (t *Tab) Row(cols ...string) { fmt.Fprintln(t.tw, strings.Join(cols, "\t")) }

// Flush writes the aligned table.
func (t *Tab) Flush() error { return t.tw.Flush() }

// Time renders a timestamp in UTC, RFC 3339; "-" when absent.
func Time(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// Enum renders an enum value without its type prefix.
func Enum(e interface{ String() string }, prefix string) string {
	return strings.TrimPrefix(e.String(), prefix)
}

// OrDash returns s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// YesNo renders a flag column: "yes" or "-".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}

// Rate renders a fraction as a percentage; "-" when there is none.
func Rate(r float64) string {
	if r < 0 || math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", r*100)
}

// Locked returns w behind a mutex, for a command whose log and progress
// lines come from several goroutines onto one stream.
func Locked(w io.Writer) io.Writer { return &lockedWriter{w: w} }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
