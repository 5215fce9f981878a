package cli_test

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/deploycheck"
	"github.com/seamdata/seam/cmd/seam/internal/deploycheck/deploychecktest"
	"github.com/seamdata/seam/core/contract"
	"go.yaml.in/yaml/v3"
)

// deployDir is deploy/ seen from this package's directory (tests run there).
const deployDir = "../../../../deploy"

// TestDockerfileBuildsStaticNonRootImage runs the build stage's command as
// a plain `go build`, checks the binary is static and carries the version,
// and checks the final stage: non-root, the default ports, /seam as the
// entrypoint and variables the binary accepts.
func TestDockerfileBuildsStaticNonRootImage(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	d := deploycheck.ParseDockerfile(string(raw))
	c := deploychecktest.New(t)

	final := d.FinalStage()
	var user, entrypoint, cmdArgs []string
	var exposed []string
	env := map[string]string{}
	for _, in := range final {
		switch in[0] {
		case "USER":
			user = []string{in[1]}
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in[1])...)
		case "ENTRYPOINT":
			entrypoint = deploycheck.JSONArray(in[1])
		case "CMD":
			cmdArgs = deploycheck.JSONArray(in[1])
		case "ENV":
			for _, kv := range deploycheck.ShellWords(in[1]) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	if len(user) == 0 || user[0] == "root" || user[0] == "0" || strings.HasPrefix(user[0], "0:") {
		t.Errorf("final stage USER = %v, want a non-root user", user)
	}
	if !slices.Equal(entrypoint, []string{"/seam"}) {
		t.Errorf("ENTRYPOINT = %q, want [\"/seam\"]", entrypoint)
	}
	sort.Strings(exposed)
	if want := []string{c.GRPCPort, c.HTTPPort}; !slices.Equal(exposed, want) {
		t.Errorf("EXPOSE %v, want the default ports %v", exposed, want)
	}
	// The image's variables reach whatever command a container runs.
	for _, args := range [][]string{cmdArgs, {"registry", "serve"}, {"idmap", "serve"}, {"adapter", "serve"}, {"gate", "serve"}} {
		ct := deploycheck.Container{Where: fmt.Sprintf("Dockerfile ENV with %q", args), Args: args, Env: maps.Clone(env)}
		if slices.Equal(args, cmdArgs) {
			ct.Where = fmt.Sprintf("Dockerfile CMD %q", args)
		}
		// Peers come from the deployment, not the image.
		if _, fs, err := c.FindCommand(args); err == nil {
			for _, p := range []string{"registry", "idmap", "adapter"} {
				if fs.Lookup(p+"-addr") != nil {
					ct.Env[cli.EnvName(p+"-addr")] = "peer:7070"
				}
			}
		}
		c.Check(ct)
	}
	for _, p := range c.Problems {
		t.Error(p)
	}

	if testing.Short() {
		t.Skip("-short: not building the image's binary")
	}
	benv, bargs, err := d.BuildCommand()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(benv, "CGO_ENABLED=0") {
		t.Errorf("build command environment %q lacks CGO_ENABLED=0; the image has no C library", benv)
	}
	out := filepath.Join(t.TempDir(), "seam")
	for i, a := range bargs {
		bargs[i] = strings.ReplaceAll(a, "${VERSION}", "v9.9.9-deploytest")
		if i > 0 && bargs[i-1] == "-o" {
			bargs[i] = out
		}
	}
	build := exec.Command("go", append([]string{"build"}, bargs...)...)
	build.Dir = filepath.Join(deployDir, "..") // the Dockerfile builds from the repository root
	build.Env = append(os.Environ(), benv...)
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %q (from the Dockerfile): %v\n%s", bargs, err, msg)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("open built binary: %v", err)
	}
	defer f.Close()
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("built binary has a .dynamic section; want a static binary (CGO_ENABLED=0)")
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("built binary asks for a dynamic loader (PT_INTERP); want a static binary")
		}
	}
	ver, err := exec.Command(out, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(ver), "v9.9.9-deploytest") {
		t.Errorf("built binary's `seam version` = %q (%v), want the -X main.version value v9.9.9-deploytest", ver, err)
	}
}

// TestDeployFilesMatchTheBinary parses every YAML file under deploy/ and
// checks each seam command line, flag, SEAM_* variable, port, health probe
// and peer address against the real command tree, so renaming a flag or a
// service fails here.
func TestDeployFilesMatchTheBinary(t *testing.T) {
	t.Parallel()
	c := deploychecktest.New(t)
	dockerText, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	k8s := deploycheck.NewK8sObjects()
	var files []string
	err = filepath.WalkDir(deployDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, path := range files {
		rel, _ := filepath.Rel(deployDir, path)
		where := "deploy/" + filepath.ToSlash(rel)
		docs, err := deploycheck.ReadYAMLDocs(path)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		for _, doc := range docs {
			switch {
			case deploycheck.Str(doc, "kind") == "Kustomization":
				c.Kustomization(where, filepath.Dir(path), doc)
				kinds["Kustomization"]++
			case deploycheck.Str(doc, "kind") != "":
				k8s.Add(where, doc)
				kinds[deploycheck.Str(doc, "kind")]++
			case deploycheck.Obj(doc, "services") != nil:
				c.Compose(where, filepath.Dir(path), doc, string(dockerText))
				kinds["compose"]++
			case deploycheck.Obj(doc, "receivers") != nil:
				kinds["collector"]++ // checked from the compose file that mounts it
			case deploycheck.List(doc, "groups") != nil:
				kinds["rules"]++ // Prometheus rules: node's TestRulesAndDashboard parses them and checks their metrics
			case deploycheck.List(doc, "tests") != nil && deploycheck.List(doc, "rule_files") != nil:
				kinds["rule tests"]++ // promtool's tests of the rules: node's TestRulesPromtool runs them
			case deploycheck.List(doc, "scrape_configs") != nil:
				kinds["prometheus"]++
			case deploycheck.List(doc, "datasources") != nil || deploycheck.List(doc, "providers") != nil:
				kinds["grafana"]++
			case deploycheck.Str(doc, "subject") != "":
				if _, err := contract.Load(mustYAML(t, doc), where); err != nil {
					t.Errorf("%s: not a valid contract: %v", where, err)
				}
				kinds["contract"]++
			case deploycheck.List(doc, "fields") != nil:
				if _, err := contract.LoadCanonicalModel(mustYAML(t, doc), where); err != nil {
					t.Errorf("%s: not a valid canonical model: %v", where, err)
				}
				kinds["canonical"]++
			default:
				t.Errorf("%s: not a compose file, Kubernetes object, collector config, contract or canonical model; teach this test to check it", where)
			}
		}
	}
	c.K8s(k8s)
	for _, p := range c.Problems {
		t.Error(p)
	}
	// The test must have seen what deploy/ is meant to hold, or it checks
	// nothing when files move.
	for _, k := range []string{"compose", "collector", "rules", "prometheus", "grafana", "Deployment", "Service", "PodDisruptionBudget", "Secret", "ConfigMap", "Job", "Kustomization"} {
		if kinds[k] == 0 {
			t.Errorf("deploy/ has no %s (saw %v)", k, kinds)
		}
	}
	if kinds["Deployment"] < len(deploycheck.HealthNames) {
		t.Errorf("deploy/ has %d Deployments, want one per service (%d)", kinds["Deployment"], len(deploycheck.HealthNames))
	}
}

func mustYAML(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKustomizeRenderedOverlayMatchesTheBinary renders the example overlay
// with kubectl, when it is installed, and checks the result: what patches
// and generators produce is what a cluster runs.
func TestKustomizeRenderedOverlayMatchesTheBinary(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: the rendered overlay is not checked (the raw files are, by TestDeployFilesMatchTheBinary)")
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(deployDir, "k8s", "overlays", "example")).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize overlays/example: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	docs, err := deploycheck.DecodeYAMLDocs(out, "kustomize output")
	if err != nil {
		t.Fatal(err)
	}
	c := deploychecktest.New(t)
	o := deploycheck.NewK8sObjects()
	deployments := 0
	for _, d := range docs {
		o.Add("overlays/example (rendered)", d)
		if deploycheck.Str(d, "kind") == "Deployment" {
			deployments++
			for _, ct := range deploycheck.List(deploycheck.Obj(deploycheck.Obj(deploycheck.Obj(d, "spec"), "template"), "spec"), "containers") {
				if img := deploycheck.Str(ct, "image"); !deploycheck.IsSeamImage(img) || !strings.Contains(img, ":") {
					t.Errorf("rendered Deployment %s runs image %q, want the seam image pinned by the overlay", deploycheck.Str(deploycheck.Obj(d, "metadata"), "name"), img)
				}
			}
		}
	}
	c.K8s(o)
	for _, p := range c.Problems {
		t.Error(p)
	}
	if deployments != len(deploycheck.HealthNames) {
		t.Errorf("rendered overlay has %d Deployments, want %d", deployments, len(deploycheck.HealthNames))
	}
}
