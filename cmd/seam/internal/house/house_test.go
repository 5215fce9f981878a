package house_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/house"
)

// workspace is the packages of the workspace this test runs in, listed
// once for all the tests.
var workspace = sync.OnceValues(func() ([]house.Package, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for !exists(filepath.Join(dir, "go.work")) {
		up := filepath.Dir(dir)
		if up == dir {
			return nil, os.ErrNotExist
		}
		dir = up
	}
	return house.Load(dir)
})

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func loadWorkspace(t *testing.T) []house.Package {
	t.Helper()
	pkgs, err := workspace()
	if err != nil {
		t.Fatalf("listing the workspace's packages (the test runs inside the repository, below go.work): %v", err)
	}
	// The listing must hold what the rules are about, or they pass on
	// nothing.
	for _, want := range []string{"core/check", "platform/rpcerr", "services/gate", "services/registry", "cmd/seam"} {
		if !has(pkgs, house.Root+want) {
			t.Fatalf("go list gave %d packages without %s", len(pkgs), want)
		}
	}
	return pkgs
}

func has(pkgs []house.Package, path string) bool {
	for _, p := range pkgs {
		if p.ImportPath == path {
			return true
		}
	}
	return false
}

// TestImportDirections: core imports only core and proto, no service
// imports another, nothing imports the command, and no forbidden
// dependency appears, in code or tests.
func TestImportDirections(t *testing.T) {
	for _, v := range house.Violations(loadWorkspace(t)) {
		t.Error(v)
	}
}

// TestStatusOnlyInRPCErr: gRPC errors are made by platform/rpcerr, which
// gives them their details and keeps a peer's; nothing else calls
// status.Error or status.Errorf.
func TestStatusOnlyInRPCErr(t *testing.T) {
	pkgs := loadWorkspace(t)
	for _, p := range pkgs {
		if p.ImportPath == house.Root+"platform/rpcerr" {
			// The finder finds rpcerr's own calls, so an empty answer
			// elsewhere means none are there.
			if calls, err := house.StatusCalls(p); err != nil || len(calls) == 0 {
				t.Fatalf("StatusCalls(platform/rpcerr) = %v, %v; want its own status.Error calls", calls, err)
			}
		}
	}
	calls, err := house.StatusOutsideRPCErr(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		t.Errorf("%s outside platform/rpcerr: make the error with rpcerr (InvalidArgument, WithReason, Relay for a peer's, …)", c)
	}
}

// TestViolations plants wrong imports in a made-up package graph: each is
// reported, and the allowed ones are not.
func TestViolations(t *testing.T) {
	seam := func(p string) string { return house.Root + p }
	pkgs := []house.Package{
		{ImportPath: seam("core/check"), Name: "check", Imports: []string{"fmt", seam("proto/seam/contract/v1"), seam("core/record"), seam("platform/rpcerr")}},
		{ImportPath: seam("core/mapping"), Name: "mapping", Imports: []string{"net/url", "net/http"}},
		{ImportPath: seam("core/interop/interoptest"), Name: "interoptest", Imports: []string{"os", "net/http"}},
		{ImportPath: seam("core/infer [" + seam("core/infer.test") + "]"), Name: "infer", ForTest: seam("core/infer"), Imports: []string{"net"}},
		{ImportPath: seam("core/naming_test [" + seam("core/naming.test") + "]"), Name: "naming_test", ForTest: seam("core/naming"), Imports: []string{seam("services/gate")}},
		{ImportPath: seam("services/gate"), Name: "gate", Imports: []string{seam("core/check"), seam("platform/auth"), seam("services/idmap"), "github.com/pkg/errors/internal"}},
		{ImportPath: seam("services/gate [" + seam("services/gate.test") + "]"), Name: "gate", ForTest: seam("services/gate"), Imports: []string{seam("services/adapter"), seam("services/gate/gatetest")}},
		{ImportPath: seam("services/gate/gatetest"), Name: "gatetest", Imports: []string{seam("services/gate"), "net/http"}},
		{ImportPath: seam("services/adapter"), Name: "adapter", Imports: []string{seam("cmd/seam/internal/client")}},
		{ImportPath: seam("platform/server"), Name: "server", Imports: []string{seam("services/registry"), "io/ioutil"}},
		{ImportPath: seam("proto/seam/gate/v1"), Name: "gatev1", Imports: []string{"google.golang.org/grpc", seam("core/record")}},
		{ImportPath: seam("cmd/seam/internal/node"), Name: "node", Imports: []string{seam("services/gate"), seam("services/idmap"), seam("sources/postgres")}},
		{ImportPath: seam("sources/postgres"), Name: "postgres", Imports: []string{seam("services/gate"), seam("chaos")}},
		{ImportPath: "github.com/other/lib", Name: "lib", Imports: []string{"github.com/pkg/errors", seam("cmd/seam")}},
	}
	got := house.Violations(pkgs)
	want := []string{
		"core/check imports platform/rpcerr: the core library imports only core and proto",
		"core/mapping imports net/http: the core library is pure Go without I/O; do it in a service or platform",
		"core/naming_test imports services/gate: the core library imports only core and proto",
		"platform/server imports io/ioutil: deprecated since Go 1.16: use io and os",
		"platform/server imports services/registry: platform imports only proto, core and platform",
		"proto/seam/gate/v1 imports core/record: the generated protos import nothing of Seam's",
		"services/adapter imports cmd/seam/internal/client: nothing imports the command or the reliability suite",
		"services/gate imports github.com/pkg/errors/internal: use the standard errors package and fmt.Errorf with %w",
		"services/gate imports services/idmap: a service never imports another; they talk over gRPC",
		"sources/postgres imports chaos: nothing imports the command or the reliability suite",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLoadFindsAPlantedImport lists a small workspace of two Seam-named
// modules on disk whose core package imports platform, the way a slip
// would, and finds it; with the import removed, it finds nothing.
func TestLoadFindsAPlantedImport(t *testing.T) {
	dir := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		path = filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.26\n\nuse (\n\t./core\n\t./platform\n)\n")
	write("core/go.mod", "module github.com/seamdata/seam/core\n\ngo 1.26\n")
	write("platform/go.mod", "module github.com/seamdata/seam/platform\n\ngo 1.26\n")
	write("platform/rpcerr/rpcerr.go", "package rpcerr\n\nfunc Reason() string { return \"\" }\n")
	write("core/check/check.go", "package check\n\nimport \"github.com/seamdata/seam/platform/rpcerr\"\n\nvar _ = rpcerr.Reason\n")
	pkgs, err := house.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "core/check imports platform/rpcerr: the core library imports only core and proto"
	if got := house.Violations(pkgs); len(got) != 1 || got[0] != want {
		t.Fatalf("violations of the planted import: %q, want [%q]", got, want)
	}
	write("core/check/check.go", "package check\n")
	if pkgs, err = house.Load(dir); err != nil {
		t.Fatal(err)
	}
	if got := house.Violations(pkgs); len(got) != 0 {
		t.Fatalf("violations once the import is gone: %q, want none", got)
	}
}
