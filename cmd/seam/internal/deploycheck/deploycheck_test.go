package deploycheck_test

import (
	"strings"
	"testing"

	"github.com/seamdata/seam/cmd/seam/internal/deploycheck"
	"github.com/seamdata/seam/cmd/seam/internal/deploycheck/deploychecktest"
)

// TestDeployCheckerCatchesDrift feeds the checker files that drifted from
// the binary and wants each drift reported: a checker that passes
// everything would make the tests above worthless.
func TestDeployCheckerCatchesDrift(t *testing.T) {
	t.Parallel()
	const good = `
services:
  registry:
    image: seam:dev
    command: ["registry", "serve"]
    environment: {SEAM_GRPC_ADDR: "0.0.0.0:7070", SEAM_STORE: "postgres://db/seam", SEAM_IDMAP_ADDR: "idmap:7070"}
    ports: ["7070:7070"]
    healthcheck:
      test: ["CMD", "/grpc_health_probe", "-addr=127.0.0.1:7070", "-service=seam.registry.v1.RegistryService"]
  gate:
    image: seam:dev
    command: ["gate", "serve", "--log-level", "debug"]
    environment: {SEAM_REGISTRY_ADDR: "dns:///registry:7070", SEAM_IDMAP_ADDR: "idmap:7070", SEAM_ADAPTER_ADDR: "adapter:7070"}
`
	tests := []struct {
		name, old, new, want string
	}{
		{"unchanged", "", "", ""},
		{"renamed flag", "--log-level", "--loglevel", "has no flag --loglevel"},
		{"bad flag value", `"debug"]`, `"debug", "--shutdown-timeout", "soon"]`, "--shutdown-timeout"},
		{"unknown subcommand", `["registry", "serve"]`, `["registry", "run"]`, "is a group"},
		{"variable of no flag", "SEAM_STORE:", "SEAM_STORE_URL:", "SEAM_STORE_URL is not a flag"},
		{"variable of another command", "SEAM_STORE:", "SEAM_ADAPTER_ADDR:", "SEAM_ADAPTER_ADDR is not a flag"},
		{"wrong port", `"7070:7070"`, `"7070:9090"`, "publishes port 9090"},
		{"wrong health name", "-service=seam.registry.v1.RegistryService", "-service=seam.registry.v1.Registry", "reports \"seam.registry.v1.RegistryService\""},
		{"peer that is not a service", "dns:///registry:7070", "dns:///regsitry:7070", "not a service of this file"},
		{"missing peer", `, SEAM_ADAPTER_ADDR: "adapter:7070"`, "", "calls adapter"},
		{"healthcheck with curl", `"/grpc_health_probe", "-addr=127.0.0.1:7070", "-service=seam.registry.v1.RegistryService"`, `"curl", "-f", "http://127.0.0.1:8080/healthz"`, "does not have"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := good
			if tt.old != "" {
				if !strings.Contains(src, tt.old) {
					t.Fatalf("test case edits %q, which the good file does not hold", tt.old)
				}
				src = strings.Replace(src, tt.old, tt.new, 1)
			}
			docs, err := deploycheck.DecodeYAMLDocs([]byte(src), tt.name)
			if err != nil {
				t.Fatal(err)
			}
			c := deploychecktest.New(t)
			// compose peers idmap and adapter are not in this file; only
			// registry is checked by name.
			c.Compose("compose.yaml", t.TempDir(), docs[0], "COPY --from=build /out/grpc-health-probe /grpc_health_probe")
			var relevant []string
			for _, p := range c.Problems {
				if !strings.Contains(p, `"idmap"`) && !strings.Contains(p, `"adapter"`) {
					relevant = append(relevant, p)
				}
			}
			got := strings.Join(relevant, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("problems:\n%s\nwant none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("problems:\n%s\nwant one containing %q", got, tt.want)
			}
		})
	}
}
