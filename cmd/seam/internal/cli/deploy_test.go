package cli_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/core/contract"
)

// deployDir is deploy/ seen from this package's directory (tests run there).
const deployDir = "../../../../deploy"

// healthNames are the gRPC health service names each serving command
// reports, from the generated service descriptors, so a renamed proto
// service fails here and not in a cluster.
var healthNames = func() map[string]string {
	m := map[string]string{}
	for _, s := range node.ServiceNames {
		m[s] = node.HealthName(s)
	}
	return m
}()

// deployChecker checks deploy files against the real command tree. Every
// problem names the file and the place in it, and says what would pass.
type deployChecker struct {
	problems []string
	// grpcPort and httpPort are the ports of the --grpc-addr and
	// --http-addr defaults, read from the binary's own flags.
	grpcPort, httpPort string
}

func newDeployChecker(t *testing.T) *deployChecker {
	t.Helper()
	serve, _, err := findSeamCommand([]string{"gate", "serve"})
	if err != nil {
		t.Fatalf("the command tree has no `seam gate serve`: %v", err)
	}
	c := &deployChecker{}
	for name, dst := range map[string]*string{"grpc-addr": &c.grpcPort, "http-addr": &c.httpPort} {
		f := serve.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("`seam gate serve` has no --%s", name)
		}
		_, port, err := net.SplitHostPort(f.DefValue)
		if err != nil {
			t.Fatalf("--%s default %q: %v", name, f.DefValue, err)
		}
		*dst = port
	}
	if c.grpcPort != "7070" || c.httpPort != "8080" {
		t.Fatalf("default ports are gRPC %s and HTTP %s; deploy/ and its docs assume 7070 and 8080", c.grpcPort, c.httpPort)
	}
	return c
}

func (c *deployChecker) fail(where, format string, args ...any) {
	c.problems = append(c.problems, where+": "+fmt.Sprintf(format, args...))
}

// findSeamCommand walks a fresh command tree along args (the arguments
// after the binary's name) and returns the command they run and the flag
// set it parses, with the root's persistent flags.
func findSeamCommand(args []string) (*cobra.Command, *pflag.FlagSet, error) {
	cmd := cli.NewRoot(nil, "")
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			fs := commandFlags(cmd)
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			var f *pflag.Flag
			if strings.HasPrefix(a, "--") {
				f = fs.Lookup(name)
			} else if len(name) == 1 {
				f = fs.ShorthandLookup(name)
			}
			if f == nil {
				return cmd, fs, fmt.Errorf("`%s` has no flag %s", cmd.CommandPath(), a)
			}
			if !hasValue && f.NoOptDefVal == "" {
				if i+1 >= len(args) {
					return cmd, fs, fmt.Errorf("flag %s of `%s` needs a value", a, cmd.CommandPath())
				}
				i++
				value = args[i]
			} else if !hasValue {
				value = f.NoOptDefVal
			}
			if err := f.Value.Set(value); err != nil {
				return cmd, fs, fmt.Errorf("flag %s=%q of `%s`: %w", a, value, cmd.CommandPath(), err)
			}
			continue
		}
		if len(positional) == 0 {
			if sub := subcommand(cmd, a); sub != nil {
				cmd = sub
				continue
			}
		}
		positional = append(positional, a)
	}
	if !cmd.Runnable() {
		return cmd, commandFlags(cmd), fmt.Errorf("`%s` is a group, not a command; give one of its subcommands", cmd.CommandPath())
	}
	if err := cmd.ValidateArgs(positional); err != nil {
		return cmd, commandFlags(cmd), fmt.Errorf("`%s` arguments %q: %w", cmd.CommandPath(), positional, err)
	}
	return cmd, commandFlags(cmd), nil
}

func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, s := range cmd.Commands() {
		if s.Name() == name || slices.Contains(s.Aliases, name) {
			return s
		}
	}
	return nil
}

// commandFlags is every flag cmd accepts: its own and the inherited ones.
func commandFlags(cmd *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(cmd.InheritedFlags())
	return fs
}

// seamContainer is one container running the seam binary, from compose or
// Kubernetes, reduced to what the checks need.
type seamContainer struct {
	where string
	args  []string
	// env maps variable names to values; a value from a Secret is
	// secretValue, since it cannot be checked here.
	env map[string]string
	// ports are the container-side ports it publishes.
	ports []string
	// probes are the gRPC health checks: port and service name.
	probes []grpcProbe
}

type grpcProbe struct {
	where, port, service string
}

const secretValue = "\x00secret"

// check runs every check of one container against the command its
// arguments select.
func (c *deployChecker) check(ct seamContainer) {
	cmd, fs, err := findSeamCommand(ct.args)
	if err != nil {
		c.fail(ct.where, "command line %q: %v", ct.args, err)
		return
	}
	byEnv := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) { byEnv[cli.EnvName(f.Name)] = f })
	names := make([]string, 0, len(ct.env))
	for k := range ct.env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasPrefix(name, cli.EnvPrefix) {
			continue
		}
		f := byEnv[name]
		if f == nil {
			c.fail(ct.where, "%s is not a flag of `%s` (its variables are %s)", name, cmd.CommandPath(), strings.Join(sortedKeys(byEnv), ", "))
			continue
		}
		if v := ct.env[name]; v != secretValue {
			if err := f.Value.Set(v); err != nil {
				c.fail(ct.where, "%s=%q is not a valid --%s: %v", name, v, f.Name, err)
			}
		}
	}

	service := ""
	if cmd.Name() == "serve" {
		service = cmd.Parent().Name()
	}
	// What the process will listen on: flags and variables both land in
	// fs, which started from the binary's defaults.
	grpcPort, httpPort := c.listenPort(ct, fs, "grpc-addr"), c.listenPort(ct, fs, "http-addr")
	if (service != "" || cmd.Name() == "up") && ct.ports != nil {
		for _, p := range ct.ports {
			if p != grpcPort && p != httpPort {
				c.fail(ct.where, "publishes port %s, but `%s` listens on gRPC %s and HTTP %s", p, cmd.CommandPath(), grpcPort, httpPort)
			}
		}
		if !slices.Contains(ct.ports, grpcPort) {
			c.fail(ct.where, "does not publish the gRPC port %s", grpcPort)
		}
	}
	for _, p := range ct.probes {
		if p.port != grpcPort {
			c.fail(p.where, "gRPC health probe on port %s, but the process serves gRPC on %s", p.port, grpcPort)
		}
		switch {
		case service != "" && p.service != healthNames[service]:
			c.fail(p.where, "health probe asks for service %q; `seam %s serve` reports %q", p.service, service, healthNames[service])
		case service == "" && p.service != "" && !slices.Contains(sortedValues(healthNames), p.service):
			c.fail(p.where, "health probe asks for service %q, which no Seam service reports (%s)", p.service, strings.Join(sortedValues(healthNames), ", "))
		}
	}
	if service != "" {
		for _, peer := range node.Peers(service) {
			if fs.Lookup(peer+"-addr").Value.String() == "" {
				c.fail(ct.where, "`seam %s serve` calls %s but %s is not set", service, peer, cli.EnvName(peer+"-addr"))
			}
		}
	}
}

func (c *deployChecker) listenPort(ct seamContainer, fs *pflag.FlagSet, flag string) string {
	f := fs.Lookup(flag)
	if f == nil {
		return ""
	}
	addr := f.Value.String()
	if addr == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		c.fail(ct.where, "--%s %q is not host:port: %v", flag, addr, err)
	}
	return port
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	return vs
}

// isSeamImage reports whether image is the seam image, under whatever
// registry and tag: its last path element is "seam".
func isSeamImage(image string) bool {
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	name, _, _ = strings.Cut(name, "@")
	name, _, _ = strings.Cut(name, ":")
	return name == "seam"
}

// readYAMLDocs decodes every document of a YAML file.
func readYAMLDocs(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeYAMLDocs(data, path)
}

func decodeYAMLDocs(data []byte, source string) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func obj(v any, key string) map[string]any {
	m, _ := v.(map[string]any)
	r, _ := m[key].(map[string]any)
	return r
}

func list(v any, key string) []any {
	m, _ := v.(map[string]any)
	r, _ := m[key].([]any)
	return r
}

func str(v any, key string) string {
	m, _ := v.(map[string]any)
	switch x := m[key].(type) {
	case string:
		return x
	case int, bool, float64:
		return fmt.Sprint(x)
	}
	return ""
}

func strs(v []any) []string {
	out := make([]string, 0, len(v))
	for _, x := range v {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// composeVar matches ${NAME}, ${NAME:-default} and ${NAME-default}.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}`)

// interpolate resolves compose variables to their defaults, as `docker
// compose up` does with nothing set, and $$ to $.
func interpolate(s string) string {
	s = strings.ReplaceAll(s, "$$", "\x00dollar")
	s = composeVar.ReplaceAllString(s, "$2")
	return strings.ReplaceAll(s, "\x00dollar", "$")
}

// checkCompose checks a compose file: the seam services' commands,
// variables, ports and health checks, the peers they name, and that the
// tracing endpoint is the collector's receiver.
func (c *deployChecker) checkCompose(path, dir string, doc map[string]any, dockerfile string) {
	services := obj(doc, "services")
	if len(services) == 0 {
		c.fail(path, "no services")
		return
	}
	for _, name := range sortedKeys(services) {
		svc := services[name]
		where := fmt.Sprintf("%s: services.%s", path, name)
		if !isSeamImage(interpolate(str(svc, "image"))) {
			continue
		}
		ct := seamContainer{where: where, env: map[string]string{}}
		switch v := svc.(map[string]any)["command"].(type) {
		case []any:
			ct.args = strs(v)
		case string:
			ct.args = strings.Fields(v)
		case nil:
			ct.args = []string{"up"} // the image's CMD
		}
		for i, a := range ct.args {
			ct.args[i] = interpolate(a)
		}
		if ep := list(svc, "entrypoint"); ep != nil && !slices.Equal(strs(ep), []string{"/seam"}) {
			c.fail(where, "entrypoint %v replaces /seam; the checks assume the image's ENTRYPOINT", ep)
		}
		switch env := svc.(map[string]any)["environment"].(type) {
		case map[string]any:
			for k, v := range env {
				ct.env[k] = interpolate(fmt.Sprint(v))
			}
		case []any:
			for _, kv := range strs(env) {
				k, v, _ := strings.Cut(kv, "=")
				ct.env[k] = interpolate(v)
			}
		}
		if ports := list(svc, "ports"); ports != nil {
			ct.ports = []string{}
		}
		for _, p := range strs(list(svc, "ports")) {
			p = interpolate(p)
			p, _, _ = strings.Cut(p, "/")
			ct.ports = append(ct.ports, p[strings.LastIndex(p, ":")+1:])
		}
		if hc := obj(svc, "healthcheck"); hc != nil {
			test := strs(list(hc, "test"))
			c.checkComposeHealth(where+".healthcheck", test, &ct, dockerfile)
		}
		c.check(ct)
		for _, peer := range []string{"registry", "idmap", "adapter"} {
			if addr, ok := ct.env[cli.EnvName(peer+"-addr")]; ok {
				c.checkComposePeer(where, peer, addr, services)
			}
		}
		if ep := ct.env["OTEL_EXPORTER_OTLP_ENDPOINT"]; ep != "" {
			c.checkCollectorEndpoint(where, ep, services, dir)
		}
	}
}

// checkComposeHealth accepts a gRPC health probe of the image or an HTTP
// GET of /healthz or /readyz, and rejects anything the image cannot run.
func (c *deployChecker) checkComposeHealth(where string, test []string, ct *seamContainer, dockerfile string) {
	if len(test) < 2 || (test[0] != "CMD" && test[0] != "CMD-SHELL") {
		c.fail(where, "test %q: use [\"CMD\", …]; the image has no shell", test)
		return
	}
	switch filepath.Base(test[1]) {
	case "grpc_health_probe":
		if !strings.Contains(dockerfile, test[1]) {
			c.fail(where, "runs %s, which deploy/Dockerfile does not put in the image", test[1])
		}
		var probe grpcProbe
		probe.where = where
		for _, a := range test[2:] {
			if v, ok := strings.CutPrefix(a, "-addr="); ok {
				_, port, err := net.SplitHostPort(v)
				if err != nil {
					c.fail(where, "-addr=%s: %v", v, err)
				}
				probe.port = port
			}
			if v, ok := strings.CutPrefix(a, "-service="); ok {
				probe.service = v
			}
		}
		ct.probes = append(ct.probes, probe)
	default:
		c.fail(where, "test %q runs %s, which the seam image does not have (it holds /seam and /grpc_health_probe only)", test, test[1])
	}
}

// checkComposePeer checks that a peer address names a compose service
// that runs that peer, on its gRPC port.
func (c *deployChecker) checkComposePeer(where, peer, addr string, services map[string]any) {
	for _, target := range strings.Split(addr, ",") {
		target = strings.TrimPrefix(strings.TrimSpace(target), "dns:///")
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			c.fail(where, "%s=%q: %v", cli.EnvName(peer+"-addr"), addr, err)
			continue
		}
		svc, ok := services[host]
		if !ok {
			c.fail(where, "%s names %q, which is not a service of this file", cli.EnvName(peer+"-addr"), host)
			continue
		}
		args := strs(list(svc, "command"))
		if !slices.Equal(args, []string{peer, "serve"}) && !slices.Equal(args, []string{"up"}) {
			c.fail(where, "%s names %q, which runs %q, not `seam %s serve`", cli.EnvName(peer+"-addr"), host, args, peer)
		}
		if port != c.grpcPort {
			c.fail(where, "%s uses port %s; services serve gRPC on %s", cli.EnvName(peer+"-addr"), port, c.grpcPort)
		}
	}
}

// checkCollectorEndpoint checks that OTEL_EXPORTER_OTLP_ENDPOINT is a
// compose service whose mounted collector config receives OTLP on that port.
func (c *deployChecker) checkCollectorEndpoint(where, endpoint string, services map[string]any, dir string) {
	hostport := endpoint[strings.Index(endpoint, "://")+3:]
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		c.fail(where, "OTEL_EXPORTER_OTLP_ENDPOINT=%q: %v", endpoint, err)
		return
	}
	svc, ok := services[host]
	if !ok {
		c.fail(where, "OTEL_EXPORTER_OTLP_ENDPOINT names %q, which is not a service of this file", host)
		return
	}
	for _, v := range strs(list(svc, "volumes")) {
		src, _, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(src, "./") {
			continue
		}
		docs, err := readYAMLDocs(filepath.Join(dir, src))
		if err != nil || len(docs) == 0 {
			c.fail(where, "collector config %s: %v", src, err)
			return
		}
		grpcEP := str(obj(obj(obj(docs[0], "receivers"), "otlp"), "protocols")["grpc"], "endpoint")
		if _, p, _ := net.SplitHostPort(grpcEP); p != port {
			c.fail(where, "OTEL_EXPORTER_OTLP_ENDPOINT uses port %s; %s receives OTLP/gRPC on %q", port, src, grpcEP)
		}
		return
	}
	c.fail(where, "OTEL_EXPORTER_OTLP_ENDPOINT names %q, which mounts no collector config", host)
}

// k8sObjects indexes Kubernetes objects by kind and name.
type k8sObjects struct {
	docs       []k8sDoc
	configMaps map[string]map[string]string // name → merged data
	services   map[string]map[string]any
}

type k8sDoc struct {
	where string
	doc   map[string]any
}

func newK8sObjects() *k8sObjects {
	return &k8sObjects{configMaps: map[string]map[string]string{}, services: map[string]map[string]any{}}
}

func (o *k8sObjects) add(where string, doc map[string]any) {
	o.docs = append(o.docs, k8sDoc{where, doc})
	name := str(obj(doc, "metadata"), "name")
	switch str(doc, "kind") {
	case "ConfigMap":
		if o.configMaps[name] == nil {
			o.configMaps[name] = map[string]string{}
		}
		for k, v := range obj(doc, "data") {
			o.configMaps[name][k] = fmt.Sprint(v)
		}
	case "Service":
		o.services[name] = doc
	}
}

// checkK8s checks every pod template's seam containers, the Services'
// ports and the headless Services peers are told to use.
func (c *deployChecker) checkK8s(o *k8sObjects) {
	for _, d := range o.docs {
		kind := str(d.doc, "kind")
		where := fmt.Sprintf("%s: %s/%s", d.where, kind, str(obj(d.doc, "metadata"), "name"))
		var pod map[string]any
		switch kind {
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
			pod = obj(obj(obj(d.doc, "spec"), "template"), "spec")
		case "Service":
			c.checkK8sService(where, d.doc)
			continue
		default:
			continue
		}
		var containers []any
		containers = append(containers, list(pod, "initContainers")...)
		containers = append(containers, list(pod, "containers")...)
		for _, ctv := range containers {
			name := str(ctv, "name")
			cwhere := where + " container " + name
			image := str(ctv, "image")
			if image != "" && !isSeamImage(image) {
				continue
			}
			if image == "" {
				// A strategic-merge patch: checked in the rendered output.
				continue
			}
			if cmd := strs(list(ctv, "command")); len(cmd) > 0 && !slices.Equal(cmd, []string{"/seam"}) {
				c.fail(cwhere, "command %q replaces /seam", cmd)
			}
			ct := seamContainer{where: cwhere, args: strs(list(ctv, "args")), env: map[string]string{}}
			if len(ct.args) == 0 {
				ct.args = []string{"up"}
			}
			for _, ef := range list(ctv, "envFrom") {
				ref := str(obj(ef, "configMapRef"), "name")
				if ref == "" {
					c.fail(cwhere, "envFrom other than a configMapRef cannot be checked; use env with secretKeyRef for secrets")
					continue
				}
				data, ok := o.configMaps[ref]
				if !ok {
					c.fail(cwhere, "envFrom names ConfigMap %q, which is not defined", ref)
				}
				for k, v := range data {
					ct.env[k] = v
				}
			}
			for _, e := range list(ctv, "env") {
				if obj(e, "valueFrom") != nil {
					ct.env[str(e, "name")] = secretValue
				} else {
					ct.env[str(e, "name")] = str(e, "value")
				}
			}
			if ports := list(ctv, "ports"); ports != nil {
				ct.ports = []string{}
				for _, p := range ports {
					ct.ports = append(ct.ports, str(p, "containerPort"))
				}
			}
			for _, pk := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
				probe := obj(ctv, pk)
				if probe == nil {
					continue
				}
				g := obj(probe, "grpc")
				if g == nil {
					c.fail(cwhere+" "+pk, "use a grpc probe on the health service (port %s)", c.grpcPort)
					continue
				}
				ct.probes = append(ct.probes, grpcProbe{where: cwhere + " " + pk, port: str(g, "port"), service: str(g, "service")})
			}
			if kind == "Deployment" && (obj(ctv, "readinessProbe") == nil || obj(ctv, "livenessProbe") == nil) {
				c.fail(cwhere, "needs a readinessProbe and a livenessProbe")
			}
			if obj(obj(ctv, "resources"), "requests") == nil {
				c.fail(cwhere, "has no resource requests")
			}
			c.check(ct)
			for _, peer := range []string{"registry", "idmap", "adapter"} {
				if addr := ct.env[cli.EnvName(peer+"-addr")]; addr != "" && addr != secretValue {
					c.checkK8sPeer(cwhere, peer, addr, o)
				}
			}
		}
	}
}

// checkK8sService checks that a Service forwards the gRPC port to the
// pods' gRPC port.
func (c *deployChecker) checkK8sService(where string, svc map[string]any) {
	for _, p := range list(obj(svc, "spec"), "ports") {
		port, target := str(p, "port"), str(p, "targetPort")
		switch {
		case str(p, "name") == "grpc" && (port != c.grpcPort || (target != "grpc" && target != c.grpcPort)):
			c.fail(where, "port grpc is %s → %s, want %s → grpc", port, target, c.grpcPort)
		case str(p, "name") == "http" && (port != c.httpPort || (target != "http" && target != c.httpPort)):
			c.fail(where, "port http is %s → %s, want %s → http", port, target, c.httpPort)
		}
	}
}

// checkK8sPeer checks that a dns:/// peer address names a headless
// Service selecting that peer's pods, on the gRPC port.
func (c *deployChecker) checkK8sPeer(where, peer, addr string, o *k8sObjects) {
	target, ok := strings.CutPrefix(addr, "dns:///")
	if !ok {
		c.fail(where, "%s=%q: use dns:///<headless service>:%s so calls spread over every replica", cli.EnvName(peer+"-addr"), addr, c.grpcPort)
		return
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		c.fail(where, "%s=%q: %v", cli.EnvName(peer+"-addr"), addr, err)
		return
	}
	name, _, _ := strings.Cut(host, ".")
	svc, ok := o.services[name]
	if !ok {
		c.fail(where, "%s names Service %q, which is not defined", cli.EnvName(peer+"-addr"), name)
		return
	}
	if str(obj(svc, "spec"), "clusterIP") != "None" {
		c.fail(where, "%s names Service %q, which is not headless (clusterIP: None), so one connection would pin one pod", cli.EnvName(peer+"-addr"), name)
	}
	if got := str(obj(obj(svc, "spec"), "selector"), "app.kubernetes.io/component"); got != peer {
		c.fail(where, "%s names Service %q, which selects component %q, not %s", cli.EnvName(peer+"-addr"), name, got, peer)
	}
	if port != c.grpcPort {
		c.fail(where, "%s uses port %s; services serve gRPC on %s", cli.EnvName(peer+"-addr"), port, c.grpcPort)
	}
}

// dockerfile is the parsed deploy/Dockerfile: its instructions with
// continuation lines joined.
type dockerfile struct {
	text         string
	instructions [][2]string // keyword, rest
}

func parseDockerfile(text string) dockerfile {
	d := dockerfile{text: text}
	sc := bufio.NewScanner(strings.NewReader(text))
	var cur strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		kw, rest, _ := strings.Cut(cur.String(), " ")
		d.instructions = append(d.instructions, [2]string{strings.ToUpper(kw), strings.TrimSpace(rest)})
		cur.Reset()
	}
	return d
}

// finalStage returns the instructions after the last FROM.
func (d dockerfile) finalStage() [][2]string {
	last := 0
	for i, in := range d.instructions {
		if in[0] == "FROM" {
			last = i
		}
	}
	return d.instructions[last:]
}

// shellWords splits a shell command line, honouring quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in || cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// buildCommand returns the environment and arguments of the build stage's
// `go build` of ./cmd/seam.
func (d dockerfile) buildCommand() (env, args []string, err error) {
	for _, in := range d.instructions {
		if in[0] != "RUN" || !strings.Contains(in[1], "go build") || !strings.Contains(in[1], "./cmd/seam") {
			continue
		}
		words := shellWords(in[1])
		for len(words) > 0 && strings.HasPrefix(words[0], "--mount=") {
			words = words[1:]
		}
		for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
			env = append(env, words[0])
			words = words[1:]
		}
		if len(words) < 2 || words[0] != "go" || words[1] != "build" {
			return nil, nil, fmt.Errorf("RUN %s: want [VAR=value…] go build …", in[1])
		}
		return env, words[2:], nil
	}
	return nil, nil, errors.New("no RUN … go build … ./cmd/seam in the build stage")
}

func jsonArray(s string) []string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") {
		return strings.Fields(s)
	}
	var out []string
	for _, w := range strings.Split(strings.Trim(s, "[]"), ",") {
		w = strings.TrimSpace(w)
		if uq, err := strconv.Unquote(w); err == nil {
			out = append(out, uq)
		}
	}
	return out
}

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
	d := parseDockerfile(string(raw))
	c := newDeployChecker(t)

	final := d.finalStage()
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
			entrypoint = jsonArray(in[1])
		case "CMD":
			cmdArgs = jsonArray(in[1])
		case "ENV":
			for _, kv := range shellWords(in[1]) {
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
	if want := []string{c.grpcPort, c.httpPort}; !slices.Equal(exposed, want) {
		t.Errorf("EXPOSE %v, want the default ports %v", exposed, want)
	}
	// The image's variables reach whatever command a container runs.
	for _, args := range [][]string{cmdArgs, {"registry", "serve"}, {"idmap", "serve"}, {"adapter", "serve"}, {"gate", "serve"}} {
		ct := seamContainer{where: fmt.Sprintf("Dockerfile ENV with %q", args), args: args, env: maps.Clone(env)}
		if slices.Equal(args, cmdArgs) {
			ct.where = fmt.Sprintf("Dockerfile CMD %q", args)
		}
		// Peers come from the deployment, not the image.
		if _, fs, err := findSeamCommand(args); err == nil {
			for _, p := range []string{"registry", "idmap", "adapter"} {
				if fs.Lookup(p+"-addr") != nil {
					ct.env[cli.EnvName(p+"-addr")] = "peer:7070"
				}
			}
		}
		c.check(ct)
	}
	for _, p := range c.problems {
		t.Error(p)
	}

	if testing.Short() {
		t.Skip("-short: not building the image's binary")
	}
	benv, bargs, err := d.buildCommand()
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
	c := newDeployChecker(t)
	dockerText, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	k8s := newK8sObjects()
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
		docs, err := readYAMLDocs(path)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		for _, doc := range docs {
			switch {
			case str(doc, "kind") == "Kustomization":
				c.checkKustomization(where, filepath.Dir(path), doc)
				kinds["Kustomization"]++
			case str(doc, "kind") != "":
				k8s.add(where, doc)
				kinds[str(doc, "kind")]++
			case obj(doc, "services") != nil:
				c.checkCompose(where, filepath.Dir(path), doc, string(dockerText))
				kinds["compose"]++
			case obj(doc, "receivers") != nil:
				kinds["collector"]++ // checked from the compose file that mounts it
			case str(doc, "subject") != "":
				if _, err := contract.Load(mustYAML(t, doc), where); err != nil {
					t.Errorf("%s: not a valid contract: %v", where, err)
				}
				kinds["contract"]++
			case list(doc, "fields") != nil:
				if _, err := contract.LoadCanonicalModel(mustYAML(t, doc), where); err != nil {
					t.Errorf("%s: not a valid canonical model: %v", where, err)
				}
				kinds["canonical"]++
			default:
				t.Errorf("%s: not a compose file, Kubernetes object, collector config, contract or canonical model; teach this test to check it", where)
			}
		}
	}
	c.checkK8s(k8s)
	for _, p := range c.problems {
		t.Error(p)
	}
	// The test must have seen what deploy/ is meant to hold, or it checks
	// nothing when files move.
	for _, k := range []string{"compose", "collector", "Deployment", "Service", "PodDisruptionBudget", "Secret", "ConfigMap", "Job", "Kustomization"} {
		if kinds[k] == 0 {
			t.Errorf("deploy/ has no %s (saw %v)", k, kinds)
		}
	}
	if kinds["Deployment"] < len(healthNames) {
		t.Errorf("deploy/ has %d Deployments, want one per service (%d)", kinds["Deployment"], len(healthNames))
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

// checkKustomization checks that every file a kustomization names exists.
func (c *deployChecker) checkKustomization(where, dir string, doc map[string]any) {
	var paths []string
	paths = append(paths, strs(list(doc, "resources"))...)
	for _, p := range list(doc, "patches") {
		if s := str(p, "path"); s != "" {
			paths = append(paths, s)
		}
	}
	for _, g := range list(doc, "secretGenerator") {
		for _, f := range strs(list(g, "files")) {
			_, file, ok := strings.Cut(f, "=")
			if !ok {
				file = f
			}
			paths = append(paths, file)
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			c.fail(where, "names %s, which does not exist: %v", p, err)
		}
	}
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
	docs, err := decodeYAMLDocs(out, "kustomize output")
	if err != nil {
		t.Fatal(err)
	}
	c := newDeployChecker(t)
	o := newK8sObjects()
	deployments := 0
	for _, d := range docs {
		o.add("overlays/example (rendered)", d)
		if str(d, "kind") == "Deployment" {
			deployments++
			for _, ct := range list(obj(obj(obj(d, "spec"), "template"), "spec"), "containers") {
				if img := str(ct, "image"); !isSeamImage(img) || !strings.Contains(img, ":") {
					t.Errorf("rendered Deployment %s runs image %q, want the seam image pinned by the overlay", str(obj(d, "metadata"), "name"), img)
				}
			}
		}
	}
	c.checkK8s(o)
	for _, p := range c.problems {
		t.Error(p)
	}
	if deployments != len(healthNames) {
		t.Errorf("rendered overlay has %d Deployments, want %d", deployments, len(healthNames))
	}
}

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
			docs, err := decodeYAMLDocs([]byte(src), tt.name)
			if err != nil {
				t.Fatal(err)
			}
			c := newDeployChecker(t)
			// compose peers idmap and adapter are not in this file; only
			// registry is checked by name.
			c.checkCompose("compose.yaml", t.TempDir(), docs[0], "COPY --from=build /out/grpc-health-probe /grpc_health_probe")
			var relevant []string
			for _, p := range c.problems {
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
