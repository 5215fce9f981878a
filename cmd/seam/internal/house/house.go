// Package house checks the workspace's own layout, so the import
// directions and the one error path the design relies on are checked by
// a test rather than by hope: the core library imports only core and
// proto, no service imports another, no forbidden dependency appears, and
// gRPC statuses are made in platform/rpcerr alone. It lives in the
// command's module because that module sees every other one.
package house

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Root is the import path every Seam module lies under.
const Root = "github.com/seamdata/seam/"

// Package is what go list -json says of one package.
type Package struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	ForTest    string
	Imports    []string
	GoFiles    []string
	CgoFiles   []string
}

// path is the package's import path without go list's " [x.test]"
// suffix of a package compiled for a test.
func (p Package) path() string { return plain(p.ImportPath) }

func plain(path string) string {
	if i := strings.Index(path, " ["); i >= 0 {
		return path[:i]
	}
	return path
}

// test reports whether p is compiled only for tests: a package's tests,
// its external _test package, or the generated test main.
func (p Package) test() bool {
	return p.ForTest != "" || strings.HasSuffix(p.path(), "_test") || strings.HasSuffix(p.path(), ".test")
}

// Load runs go list -deps -test -json over every module of the workspace
// at dir (the folder holding go.work, or one module) and returns every
// package it lists: Seam's, their tests and all they depend on.
func Load(dir string) ([]Package, error) {
	mods, err := goCmd(dir, "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-deps", "-test", "-json=ImportPath,Name,Dir,Standard,ForTest,Imports,GoFiles,CgoFiles"}
	for _, m := range strings.Fields(string(mods)) {
		args = append(args, filepath.Join(m, "..."))
	}
	out, err := goCmd(dir, args...)
	if err != nil {
		return nil, err
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list -json: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if work := filepath.Join(dir, "go.work"); exists(work) {
		// This workspace, whatever GOWORK the caller's environment names.
		cmd.Env = append(os.Environ(), "GOWORK="+work)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %w: %s", strings.Join(args[:2], " "), dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// area is the part of the workspace a Seam import path lies in: "core",
// "proto", "platform", "cmd", "chaos", "connectors", "sources", or
// "services/<name>"; "" for a path outside Seam.
func area(path string) string {
	rest, ok := strings.CutPrefix(plain(path), Root)
	if !ok {
		return ""
	}
	top, sub, _ := strings.Cut(rest, "/")
	if top == "services" {
		name, _, _ := strings.Cut(sub, "/")
		top += "/" + name
	}
	// A package's tests (x_test, and the generated x.test) are of its area.
	return strings.TrimSuffix(strings.TrimSuffix(top, ".test"), "_test")
}

// mayImport says which Seam areas each area may import besides itself;
// an area not listed may import any. The core library is pure Go shared
// by every service, so it reaches only the generated protos; services
// talk to each other over gRPC, never by importing one another; only the
// command (and the tools around it) sit above the services. A service's
// tests (test) may import another service, to run it as a real peer
// behind a real gRPC server rather than a fake.
func mayImport(from, to string, test bool) bool {
	if from == to {
		return true
	}
	if test && strings.HasPrefix(from, "services/") && strings.HasPrefix(to, "services/") {
		return true
	}
	switch {
	case from == "proto":
		return false
	case from == "core":
		return to == "proto"
	case from == "platform":
		return to == "proto" || to == "core"
	case strings.HasPrefix(from, "services/"):
		return to == "proto" || to == "core" || to == "platform"
	case from == "connectors":
		return to == "proto" || to == "core" || to == "platform"
	}
	// cmd, chaos and sources sit on top; none of them imports the command
	// or the reliability suite.
	return to != "cmd" && to != "chaos"
}

// forbiddenImports are packages no Seam package imports, with what to use
// instead.
var forbiddenImports = map[string]string{
	"io/ioutil":                     "deprecated since Go 1.16: use io and os",
	"github.com/pkg/errors":         "use the standard errors package and fmt.Errorf with %w",
	"github.com/golang/protobuf":    "superseded: use google.golang.org/protobuf",
	"github.com/mattn/go-sqlite3":   "needs cgo: Seam builds without a C compiler on modernc.org/sqlite",
	"github.com/lib/pq":             "Seam's PostgreSQL driver is github.com/jackc/pgx/v5",
	"github.com/gogo/protobuf":      "unmaintained: use google.golang.org/protobuf",
	"github.com/satori/go.uuid":     "unmaintained: use github.com/google/uuid",
	"github.com/sirupsen/logrus":    "Seam logs with log/slog",
	"go.uber.org/zap":               "Seam logs with log/slog",
	"github.com/stretchr/testify":   "Seam's tests use the standard testing package",
	"github.com/golang/mock/gomock": "Seam tests against real peers over bufconn, not mocks",
}

// noIO are packages (with the packages under them) the core library's own
// code, not its tests or test helpers, may not import: it is pure Go
// without I/O. net is the network itself; net/url and net/netip, which
// only parse, are allowed.
var noIO = []string{"net/http", "net/rpc", "net/smtp", "os/exec", "database/sql", "google.golang.org/grpc", "log/slog"}

func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// helper reports whether a Seam package is a test helper package
// (<pkg>test, as STYLE.md puts them): built only into tests.
func helper(p Package) bool {
	return strings.HasSuffix(p.Name, "test") && p.Name != "test"
}

// Violations returns, sorted, every import of pkgs that breaks the
// workspace's rules, each saying which package imports what and why it
// may not.
func Violations(pkgs []Package) []string {
	seen := map[string]bool{}
	var out []string
	add := func(msg string) {
		if !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	for _, p := range pkgs {
		from := area(p.path())
		if from == "" {
			continue
		}
		for _, imp := range p.Imports {
			imp = plain(imp)
			if to := area(imp); to != "" && !mayImport(from, to, p.test()) {
				add(fmt.Sprintf("%s imports %s: %s", strings.TrimPrefix(p.path(), Root), strings.TrimPrefix(imp, Root), why(from, to)))
			}
			for bad, instead := range forbiddenImports {
				if under(imp, bad) {
					add(fmt.Sprintf("%s imports %s: %s", strings.TrimPrefix(p.path(), Root), imp, instead))
				}
			}
			if from == "core" && !p.test() && !helper(p) {
				if imp == "net" || slices.ContainsFunc(noIO, func(bad string) bool { return under(imp, bad) }) {
					add(fmt.Sprintf("%s imports %s: the core library is pure Go without I/O; do it in a service or platform", strings.TrimPrefix(p.path(), Root), imp))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func why(from, to string) string {
	switch {
	case from == "core":
		return "the core library imports only core and proto"
	case from == "proto":
		return "the generated protos import nothing of Seam's"
	case strings.HasPrefix(from, "services/") && strings.HasPrefix(to, "services/"):
		return "a service never imports another; they talk over gRPC"
	case to == "cmd" || to == "chaos":
		return "nothing imports the command or the reliability suite"
	}
	return fmt.Sprintf("%s imports only proto, core and platform", from)
}

// StatusOutsideRPCErr returns where Seam's own (non-test, non-generated)
// Go code calls status.Error or status.Errorf of google.golang.org/grpc/status
// outside platform/rpcerr, as "file:line". Every gRPC error is made by
// rpcerr, which gives it its details (reason, field violations) and keeps
// a peer's; test helper packages (<pkg>test), which play peers that fail
// as a transport would, are not Seam's answers and are left out.
func StatusOutsideRPCErr(pkgs []Package) ([]string, error) {
	var out []string
	for _, p := range pkgs {
		if area(p.path()) == "" || p.test() || helper(p) || under(p.path(), Root+"platform/rpcerr") {
			continue
		}
		calls, err := StatusCalls(p)
		if err != nil {
			return nil, err
		}
		out = append(out, calls...)
	}
	sort.Strings(out)
	return out, nil
}

// StatusCalls returns where p's non-generated Go files call status.Error
// or status.Errorf of google.golang.org/grpc/status, as "file:line".
func StatusCalls(p Package) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	for _, name := range append(append([]string(nil), p.GoFiles...), p.CgoFiles...) {
		file := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if ast.IsGenerated(f) {
			continue
		}
		local := ""
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "google.golang.org/grpc/status" {
				local = "status"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Error" && sel.Sel.Name != "Errorf") {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
				out = append(out, fmt.Sprintf("%s: %s.%s", fset.Position(sel.Pos()), local, sel.Sel.Name))
			}
			return true
		})
	}
	return out, nil
}
