// Package deploycheck checks the deploy files (the compose stack, the
// Kubernetes manifests, the Dockerfile) against the real seam command
// tree: every command line, flag, SEAM_* variable, port, health probe and
// peer address. cmd/seam/internal/cli's tests run it on deploy/.
package deploycheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// HealthNames are the gRPC health service names each serving command
// reports, from the generated service descriptors, so a renamed proto
// service fails here and not in a cluster.
var HealthNames = func() map[string]string {
	m := map[string]string{}
	for _, s := range node.ServiceNames {
		m[s] = node.HealthName(s)
	}
	return m
}()

// Checker checks deploy files against the real command tree. Every
// problem names the file and the place in it, and says what would pass.
type Checker struct {
	// Problems are what the checks found, each naming the file and place.
	Problems []string
	// GRPCPort and HTTPPort are the ports of the --grpc-addr and
	// --http-addr defaults, read from the binary's own flags.
	GRPCPort, HTTPPort string

	newRoot func() *cobra.Command
}

// New returns a checker of the command tree newRoot builds; it reads the
// default ports from `seam gate serve`'s own flags.
func New(newRoot func() *cobra.Command) (*Checker, error) {
	c := &Checker{newRoot: newRoot}
	serve, _, err := c.FindCommand([]string{"gate", "serve"})
	if err != nil {
		return nil, fmt.Errorf("the command tree has no `seam gate serve`: %w", err)
	}
	for name, dst := range map[string]*string{"grpc-addr": &c.GRPCPort, "http-addr": &c.HTTPPort} {
		f := serve.Flags().Lookup(name)
		if f == nil {
			return nil, fmt.Errorf("`seam gate serve` has no --%s", name)
		}
		_, port, err := net.SplitHostPort(f.DefValue)
		if err != nil {
			return nil, fmt.Errorf("--%s default %q: %w", name, f.DefValue, err)
		}
		*dst = port
	}
	if c.GRPCPort != "7070" || c.HTTPPort != "8080" {
		return nil, fmt.Errorf("default ports are gRPC %s and HTTP %s; deploy/ and its docs assume 7070 and 8080", c.GRPCPort, c.HTTPPort)
	}
	return c, nil
}

func (c *Checker) fail(where, format string, args ...any) {
	c.Problems = append(c.Problems, where+": "+fmt.Sprintf(format, args...))
}

// FindCommand walks a fresh command tree along args (the arguments after
// the binary's name) and returns the command they run and the flag set it
// parses, with the root's persistent flags.
func (c *Checker) FindCommand(args []string) (*cobra.Command, *pflag.FlagSet, error) {
	cmd := c.newRoot()
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
	if cmd.HasSubCommands() {
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

// Container is one container running the seam binary, from compose or
// Kubernetes, reduced to what the checks need.
type Container struct {
	Where string
	Args  []string
	// Env maps variable names to values; a value from a Secret is
	// secretValue, since it cannot be checked here.
	Env map[string]string
	// Ports are the container-side ports it publishes.
	Ports []string
	// Probes are the gRPC health checks: port and service name.
	Probes []grpcProbe
}

type grpcProbe struct {
	where, port, service string
}

const secretValue = "\x00secret"

// Check runs every check of one container against the command its
// arguments select.
func (c *Checker) Check(ct Container) {
	cmd, fs, err := c.FindCommand(ct.Args)
	if err != nil {
		c.fail(ct.Where, "command line %q: %v", ct.Args, err)
		return
	}
	byEnv := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) { byEnv[cli.EnvName(f.Name)] = f })
	for _, name := range slices.Sorted(maps.Keys(ct.Env)) {
		if !strings.HasPrefix(name, cli.EnvPrefix) {
			continue
		}
		f := byEnv[name]
		if f == nil {
			c.fail(ct.Where, "%s is not a flag of `%s` (its variables are %s)", name, cmd.CommandPath(), strings.Join(slices.Sorted(maps.Keys(byEnv)), ", "))
			continue
		}
		if v := ct.Env[name]; v != secretValue {
			if err := f.Value.Set(v); err != nil {
				c.fail(ct.Where, "%s=%q is not a valid --%s: %v", name, v, f.Name, err)
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
	if (service != "" || cmd.Name() == "up") && ct.Ports != nil {
		for _, p := range ct.Ports {
			if p != grpcPort && p != httpPort {
				c.fail(ct.Where, "publishes port %s, but `%s` listens on gRPC %s and HTTP %s", p, cmd.CommandPath(), grpcPort, httpPort)
			}
		}
		if !slices.Contains(ct.Ports, grpcPort) {
			c.fail(ct.Where, "does not publish the gRPC port %s", grpcPort)
		}
	}
	for _, p := range ct.Probes {
		if p.port != grpcPort {
			c.fail(p.where, "gRPC health probe on port %s, but the process serves gRPC on %s", p.port, grpcPort)
		}
		switch {
		case service != "" && p.service != HealthNames[service]:
			c.fail(p.where, "health probe asks for service %q; `seam %s serve` reports %q", p.service, service, HealthNames[service])
		case service == "" && p.service != "" && !slices.Contains(slices.Sorted(maps.Values(HealthNames)), p.service):
			c.fail(p.where, "health probe asks for service %q, which no Seam service reports (%s)", p.service, strings.Join(slices.Sorted(maps.Values(HealthNames)), ", "))
		}
	}
	if service != "" {
		for _, peer := range node.Peers(service) {
			if fs.Lookup(peer+"-addr").Value.String() == "" {
				c.fail(ct.Where, "`seam %s serve` calls %s but %s is not set", service, peer, cli.EnvName(peer+"-addr"))
			}
		}
	}
}

func (c *Checker) listenPort(ct Container, fs *pflag.FlagSet, flag string) string {
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
		c.fail(ct.Where, "--%s %q is not host:port: %v", flag, addr, err)
	}
	return port
}

// IsSeamImage reports whether image is the seam image, under whatever
// registry and tag: its last path element is "seam".
func IsSeamImage(image string) bool {
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	name, _, _ = strings.Cut(name, "@")
	name, _, _ = strings.Cut(name, ":")
	return name == "seam"
}

// ReadYAMLDocs decodes every document of a YAML file.
func ReadYAMLDocs(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeYAMLDocs(data, path)
}

func DecodeYAMLDocs(data []byte, source string) ([]map[string]any, error) {
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

func Obj(v any, key string) map[string]any {
	m, _ := v.(map[string]any)
	r, _ := m[key].(map[string]any)
	return r
}

func List(v any, key string) []any {
	m, _ := v.(map[string]any)
	r, _ := m[key].([]any)
	return r
}

func Str(v any, key string) string {
	m, _ := v.(map[string]any)
	switch x := m[key].(type) {
	case string:
		return x
	case int, bool, float64:
		return fmt.Sprint(x)
	}
	return ""
}

func Strs(v []any) []string {
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

// Compose checks a compose file: the seam services' commands,
// variables, ports and health checks, the peers they name, and that the
// tracing endpoint is the collector's receiver.
func (c *Checker) Compose(path, dir string, doc map[string]any, Dockerfile string) {
	services := Obj(doc, "services")
	if len(services) == 0 {
		c.fail(path, "no services")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc := services[name]
		where := fmt.Sprintf("%s: services.%s", path, name)
		if !IsSeamImage(interpolate(Str(svc, "image"))) {
			continue
		}
		ct := Container{Where: where, Env: map[string]string{}}
		switch v := svc.(map[string]any)["command"].(type) {
		case []any:
			ct.Args = Strs(v)
		case string:
			ct.Args = strings.Fields(v)
		case nil:
			ct.Args = []string{"up"} // the image's CMD
		}
		for i, a := range ct.Args {
			ct.Args[i] = interpolate(a)
		}
		if ep := List(svc, "entrypoint"); ep != nil && !slices.Equal(Strs(ep), []string{"/seam"}) {
			c.fail(where, "entrypoint %v replaces /seam; the checks assume the image's ENTRYPOINT", ep)
		}
		switch env := svc.(map[string]any)["environment"].(type) {
		case map[string]any:
			for k, v := range env {
				ct.Env[k] = interpolate(fmt.Sprint(v))
			}
		case []any:
			for _, kv := range Strs(env) {
				k, v, _ := strings.Cut(kv, "=")
				ct.Env[k] = interpolate(v)
			}
		}
		if ports := List(svc, "ports"); ports != nil {
			ct.Ports = []string{}
		}
		for _, p := range Strs(List(svc, "ports")) {
			p = interpolate(p)
			p, _, _ = strings.Cut(p, "/")
			ct.Ports = append(ct.Ports, p[strings.LastIndex(p, ":")+1:])
		}
		if hc := Obj(svc, "healthcheck"); hc != nil {
			test := Strs(List(hc, "test"))
			c.checkComposeHealth(where+".healthcheck", test, &ct, Dockerfile)
		}
		c.Check(ct)
		for _, peer := range []string{"registry", "idmap", "adapter"} {
			if addr, ok := ct.Env[cli.EnvName(peer+"-addr")]; ok {
				c.checkComposePeer(where, peer, addr, services)
			}
		}
		if ep := ct.Env["OTEL_EXPORTER_OTLP_ENDPOINT"]; ep != "" {
			c.checkCollectorEndpoint(where, ep, services, dir)
		}
	}
}

// ComposeHealth accepts a gRPC health probe of the image or an HTTP
// GET of /healthz or /readyz, and rejects anything the image cannot run.
func (c *Checker) checkComposeHealth(where string, test []string, ct *Container, Dockerfile string) {
	if len(test) < 2 || (test[0] != "CMD" && test[0] != "CMD-SHELL") {
		c.fail(where, "test %q: use [\"CMD\", …]; the image has no shell", test)
		return
	}
	switch filepath.Base(test[1]) {
	case "grpc_health_probe":
		if !strings.Contains(Dockerfile, test[1]) {
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
		ct.Probes = append(ct.Probes, probe)
	default:
		c.fail(where, "test %q runs %s, which the seam image does not have (it holds /seam and /grpc_health_probe only)", test, test[1])
	}
}

// ComposePeer checks that a peer address names a compose service
// that runs that peer, on its gRPC port.
func (c *Checker) checkComposePeer(where, peer, addr string, services map[string]any) {
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
		args := Strs(List(svc, "command"))
		if !slices.Equal(args, []string{peer, "serve"}) && !slices.Equal(args, []string{"up"}) {
			c.fail(where, "%s names %q, which runs %q, not `seam %s serve`", cli.EnvName(peer+"-addr"), host, args, peer)
		}
		if port != c.GRPCPort {
			c.fail(where, "%s uses port %s; services serve gRPC on %s", cli.EnvName(peer+"-addr"), port, c.GRPCPort)
		}
	}
}

// checkCollectorEndpoint checks that OTEL_EXPORTER_OTLP_ENDPOINT is a
// compose service whose mounted collector config receives OTLP on that port.
func (c *Checker) checkCollectorEndpoint(where, endpoint string, services map[string]any, dir string) {
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
	for _, v := range Strs(List(svc, "volumes")) {
		src, _, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(src, "./") {
			continue
		}
		docs, err := ReadYAMLDocs(filepath.Join(dir, src))
		if err != nil || len(docs) == 0 {
			c.fail(where, "collector config %s: %v", src, err)
			return
		}
		grpcEP := Str(Obj(Obj(Obj(docs[0], "receivers"), "otlp"), "protocols")["grpc"], "endpoint")
		if _, p, _ := net.SplitHostPort(grpcEP); p != port {
			c.fail(where, "OTEL_EXPORTER_OTLP_ENDPOINT uses port %s; %s receives OTLP/gRPC on %q", port, src, grpcEP)
		}
		return
	}
	c.fail(where, "OTEL_EXPORTER_OTLP_ENDPOINT names %q, which mounts no collector config", host)
}

// K8sObjects indexes Kubernetes objects by kind and name.
type K8sObjects struct {
	docs       []k8sDoc
	configMaps map[string]map[string]string // name → merged data
	services   map[string]map[string]any
}

type k8sDoc struct {
	where string
	doc   map[string]any
}

func NewK8sObjects() *K8sObjects {
	return &K8sObjects{configMaps: map[string]map[string]string{}, services: map[string]map[string]any{}}
}

func (o *K8sObjects) Add(where string, doc map[string]any) {
	o.docs = append(o.docs, k8sDoc{where, doc})
	name := Str(Obj(doc, "metadata"), "name")
	switch Str(doc, "kind") {
	case "ConfigMap":
		if o.configMaps[name] == nil {
			o.configMaps[name] = map[string]string{}
		}
		for k, v := range Obj(doc, "data") {
			o.configMaps[name][k] = fmt.Sprint(v)
		}
	case "Service":
		o.services[name] = doc
	}
}

// K8s checks every pod template's seam containers, the Services'
// ports and the headless Services peers are told to use.
func (c *Checker) K8s(o *K8sObjects) {
	for _, d := range o.docs {
		kind := Str(d.doc, "kind")
		where := fmt.Sprintf("%s: %s/%s", d.where, kind, Str(Obj(d.doc, "metadata"), "name"))
		var pod map[string]any
		switch kind {
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
			pod = Obj(Obj(Obj(d.doc, "spec"), "template"), "spec")
		case "Service":
			c.checkK8sService(where, d.doc)
			continue
		default:
			continue
		}
		var containers []any
		containers = append(containers, List(pod, "initContainers")...)
		containers = append(containers, List(pod, "containers")...)
		for _, ctv := range containers {
			name := Str(ctv, "name")
			cwhere := where + " container " + name
			image := Str(ctv, "image")
			if image != "" && !IsSeamImage(image) {
				continue
			}
			if image == "" {
				// A strategic-merge patch: checked in the rendered output.
				continue
			}
			if cmd := Strs(List(ctv, "command")); len(cmd) > 0 && !slices.Equal(cmd, []string{"/seam"}) {
				c.fail(cwhere, "command %q replaces /seam", cmd)
			}
			ct := Container{Where: cwhere, Args: Strs(List(ctv, "args")), Env: map[string]string{}}
			if len(ct.Args) == 0 {
				ct.Args = []string{"up"}
			}
			for _, ef := range List(ctv, "envFrom") {
				ref := Str(Obj(ef, "configMapRef"), "name")
				if ref == "" {
					c.fail(cwhere, "envFrom other than a configMapRef cannot be checked; use env with secretKeyRef for secrets")
					continue
				}
				data, ok := o.configMaps[ref]
				if !ok {
					c.fail(cwhere, "envFrom names ConfigMap %q, which is not defined", ref)
				}
				for k, v := range data {
					ct.Env[k] = v
				}
			}
			for _, e := range List(ctv, "env") {
				if Obj(e, "valueFrom") != nil {
					ct.Env[Str(e, "name")] = secretValue
				} else {
					ct.Env[Str(e, "name")] = Str(e, "value")
				}
			}
			if ports := List(ctv, "ports"); ports != nil {
				ct.Ports = []string{}
				for _, p := range ports {
					ct.Ports = append(ct.Ports, Str(p, "containerPort"))
				}
			}
			for _, pk := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
				probe := Obj(ctv, pk)
				if probe == nil {
					continue
				}
				g := Obj(probe, "grpc")
				if g == nil {
					c.fail(cwhere+" "+pk, "use a grpc probe on the health service (port %s)", c.GRPCPort)
					continue
				}
				ct.Probes = append(ct.Probes, grpcProbe{where: cwhere + " " + pk, port: Str(g, "port"), service: Str(g, "service")})
			}
			if kind == "Deployment" && (Obj(ctv, "readinessProbe") == nil || Obj(ctv, "livenessProbe") == nil) {
				c.fail(cwhere, "needs a readinessProbe and a livenessProbe")
			}
			if Obj(Obj(ctv, "resources"), "requests") == nil {
				c.fail(cwhere, "has no resource requests")
			}
			c.Check(ct)
			for _, peer := range []string{"registry", "idmap", "adapter"} {
				if addr := ct.Env[cli.EnvName(peer+"-addr")]; addr != "" && addr != secretValue {
					c.checkK8sPeer(cwhere, peer, addr, o)
				}
			}
		}
	}
}

// checkK8sService checks that a Service forwards the gRPC port to the
// pods' gRPC port.
func (c *Checker) checkK8sService(where string, svc map[string]any) {
	for _, p := range List(Obj(svc, "spec"), "ports") {
		port, target := Str(p, "port"), Str(p, "targetPort")
		switch {
		case Str(p, "name") == "grpc" && (port != c.GRPCPort || (target != "grpc" && target != c.GRPCPort)):
			c.fail(where, "port grpc is %s → %s, want %s → grpc", port, target, c.GRPCPort)
		case Str(p, "name") == "http" && (port != c.HTTPPort || (target != "http" && target != c.HTTPPort)):
			c.fail(where, "port http is %s → %s, want %s → http", port, target, c.HTTPPort)
		}
	}
}

// checkK8sPeer checks that a dns:/// peer address names a headless
// Service selecting that peer's pods, on the gRPC port.
func (c *Checker) checkK8sPeer(where, peer, addr string, o *K8sObjects) {
	target, ok := strings.CutPrefix(addr, "dns:///")
	if !ok {
		c.fail(where, "%s=%q: use dns:///<headless service>:%s so calls spread over every replica", cli.EnvName(peer+"-addr"), addr, c.GRPCPort)
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
	if Str(Obj(svc, "spec"), "clusterIP") != "None" {
		c.fail(where, "%s names Service %q, which is not headless (clusterIP: None), so one connection would pin one pod", cli.EnvName(peer+"-addr"), name)
	}
	if got := Str(Obj(Obj(svc, "spec"), "selector"), "app.kubernetes.io/component"); got != peer {
		c.fail(where, "%s names Service %q, which selects component %q, not %s", cli.EnvName(peer+"-addr"), name, got, peer)
	}
	if port != c.GRPCPort {
		c.fail(where, "%s uses port %s; services serve gRPC on %s", cli.EnvName(peer+"-addr"), port, c.GRPCPort)
	}
}

// Dockerfile is the parsed deploy/Dockerfile: its instructions with
// continuation lines joined.
type Dockerfile struct {
	text         string
	instructions [][2]string // keyword, rest
}

func ParseDockerfile(text string) Dockerfile {
	d := Dockerfile{text: text}
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

// FinalStage returns the instructions after the last FROM.
func (d Dockerfile) FinalStage() [][2]string {
	last := 0
	for i, in := range d.instructions {
		if in[0] == "FROM" {
			last = i
		}
	}
	return d.instructions[last:]
}

// ShellWords splits a shell command line, honouring quotes.
func ShellWords(s string) []string {
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

// BuildCommand returns the environment and arguments of the build stage's
// `go build` of ./cmd/seam.
func (d Dockerfile) BuildCommand() (env, args []string, err error) {
	for _, in := range d.instructions {
		if in[0] != "RUN" || !strings.Contains(in[1], "go build") || !strings.Contains(in[1], "./cmd/seam") {
			continue
		}
		words := ShellWords(in[1])
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

func JSONArray(s string) []string {
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

// Kustomization checks that every file a kustomization names exists.
func (c *Checker) Kustomization(where, dir string, doc map[string]any) {
	var paths []string
	paths = append(paths, Strs(List(doc, "resources"))...)
	for _, p := range List(doc, "patches") {
		if s := Str(p, "path"); s != "" {
			paths = append(paths, s)
		}
	}
	for _, g := range List(doc, "secretGenerator") {
		for _, f := range Strs(List(g, "files")) {
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
