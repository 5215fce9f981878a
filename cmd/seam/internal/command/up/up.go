// Package up holds the commands that run Seam: `seam up` (every service in
// one process), `seam <service> serve` (one service) and `seam migrate`.
package up

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/platform/dial"
	"github.com/seamdata/seam/platform/server"
	"github.com/seamdata/seam/platform/storage"
	"github.com/seamdata/seam/services/gate"
)

// addServeFlags declares the flags every serving command shares.
func addServeFlags(fs *pflag.FlagSet, c *node.Config, grpcDefault, httpDefault string) {
	fs.StringVar(&c.DataDir, "data-dir", client.DefaultDataDir, "directory of the embedded stores and the local tokens (locked while a seam runs on it)")
	fs.StringVar(&c.GRPCAddr, "grpc-addr", grpcDefault, "gRPC listen address (port 0 picks a free port)")
	fs.StringVar(&c.HTTPAddr, "http-addr", httpDefault, "REST listen address (empty: no REST)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics on this address only, not on --http-addr (empty: on --http-addr)")
	fs.StringVar(&c.Store, "store", "", "store URL: postgres://… for a shared PostgreSQL; empty: an SQLite file per service in --data-dir")
	fs.IntVar(&c.StorePool.MaxConns, "store-max-conns", 0, fmt.Sprintf("PostgreSQL: most connections each service's pool opens (0: the URL's pool_max_conns, else %d)", storage.DefaultPoolMaxConns))
	fs.IntVar(&c.StorePool.MaxIdleConns, "store-max-idle-conns", 0, fmt.Sprintf("PostgreSQL: most idle connections kept per pool (0: pool_max_idle_conns, else %d)", storage.DefaultPoolMaxIdleConns))
	fs.DurationVar(&c.StorePool.MaxConnLifetime, "store-conn-max-lifetime", 0, fmt.Sprintf("PostgreSQL: close connections after this long (0: pool_max_conn_lifetime, else %s)", storage.DefaultPoolMaxConnLifetime))
	fs.DurationVar(&c.StorePool.MaxConnIdleTime, "store-conn-max-idle-time", 0, fmt.Sprintf("PostgreSQL: close connections idle this long (0: pool_max_conn_idle_time, else %s)", storage.DefaultPoolMaxConnIdleTime))
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM certificate: serve gRPC and REST over TLS")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "PEM CA bundle that peers' certificates are checked against (default: --tls-cert)")
	fs.StringVar(&c.TokensFile, "tokens-file", "", "tokens file (default: <data-dir>/tokens.json)")
	fs.StringVar(&c.ServiceToken, "service-token", "", "token the services use to call each other (default: <data-dir>/service.token)")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long running calls may take to finish on shutdown")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 0, "how long to report NOT_SERVING before stopping, so balancers notice")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", server.DefaultMaxMessageBytes, "largest gRPC message accepted or sent")
	fs.DurationVar(&c.HTTPReadTimeout, "http-read-timeout", server.DefaultHTTPReadTimeout, "how long reading one REST request body may take")
	fs.Int64Var(&c.MaxBodyBytesInFlight, "max-body-bytes-in-flight", 0, "bytes of REST request bodies (inflated) that all requests in flight may hold together; a body past it is answered 429 (0: 4 × --max-message-bytes)")
	fs.DurationVar(&c.PeerTimeout, "peer-timeout", dial.DefaultCallTimeout, "deadline of each call to a peer service; a hung peer is answered Unavailable after it")
	fs.DurationVar(&c.MaxConnectionAge, "max-connection-age", 0, "make clients reconnect after this long, so dns:/// balancing reaches new replicas (0: never)")
	fs.StringVar(&c.OpenLineageURL, "openlineage-url", "", "gate: send an OpenLineage run for every sealed partition to this collector, such as http://marquez:5000 (empty: none)")
	fs.StringVar(&c.OpenLineageAPIKey, "openlineage-api-key", "", "gate: API key sent to the OpenLineage collector as a bearer token")
	fs.StringVar(&c.OpenLineageNamespace, "openlineage-namespace", "seam", "gate: namespace of the OpenLineage jobs, one per installation")
	fs.DurationVar(&c.Gate.AnswerTTL, "answer-ttl", gate.DefaultAnswerTTL, "gate: how long a batch's canonical records are kept for its retries")
	fs.DurationVar(&c.Gate.BatchRetention, "batch-retention", gate.DefaultBatchRetention, "gate: how long a batch is recognised when retried (its keys stay in their partition)")
	fs.DurationVar(&c.Gate.QuarantineRetention, "quarantine-retention", gate.DefaultQuarantineRetention, "gate: how long released, discarded and superseded quarantine is kept")
	fs.DurationVar(&c.Gate.RetentionInterval, "retention-interval", gate.DefaultRetentionInterval, "gate: how often the retention job runs")
	fs.IntVar(&c.Gate.KeyCacheKeys, "key-cache-keys", gate.DefaultKeyCacheKeys, "gate: partition keys held in memory to find duplicates, about 30 bytes each (a partition with more is read from the store for every batch)")
}

func addPeerFlags(fs *pflag.FlagSet, c *node.Config, peers ...string) {
	for _, p := range peers {
		var dst *string
		switch p {
		case "registry":
			dst = &c.RegistryAddr
		case "adapter":
			dst = &c.AdapterAddr
		case "idmap":
			dst = &c.IdmapAddr
		}
		fs.StringVar(dst, p+"-addr", "", fmt.Sprintf("gRPC address of the %s: host:port, several separated by commas (round robin), or dns:///name:port", p))
	}
}

// New returns `seam up`.
func New(g *client.Globals) *cobra.Command {
	cfg := node.Config{Services: node.ServiceNames, Bootstrap: true}
	return client.Leaf("up", cobra.NoArgs, client.Help{
		Short: "Run all four services in one process on the embedded store",
		Long: `Run the registry, adapter, idmap and gate in one process, on an embedded
store under --data-dir. All gRPC services share one port and REST another;
inside the process the services still call each other over gRPC.

On its first start it creates an admin token in the data directory and
prints how to use it. While it runs, the addresses it listens on are in
addresses.json there: the seam client given the same --data-dir (by
default ./seam-data) finds both by itself.`,
		Example: `  seam up
  seam up --data-dir /var/lib/seam --grpc-addr 0.0.0.0:7070 --http-addr 0.0.0.0:8080
  SEAM_LOG_FORMAT=json seam up`,
		Flags: func(fs *pflag.FlagSet) {
			addServeFlags(fs, &cfg, "127.0.0.1:7070", "127.0.0.1:8080")
		},
	}, func(cmd *cobra.Command, _ []string) error {
		cfg.Version = g.Version
		return node.Run(cmd.Context(), cfg, node.Hooks{Notes: cmd.OutOrStdout(), Log: cmd.ErrOrStderr()})
	})
}

// ServeGroup returns the `seam <service>` group with its `serve` command;
// the service's client commands are added to it by their own package.
func ServeGroup(g *client.Globals, service, what string) *cobra.Command {
	group := &cobra.Command{
		Use:   service,
		Short: fmt.Sprintf("Commands of %s", what),
	}
	cfg := node.Config{Services: []string{service}}
	serve := client.Leaf("serve", cobra.NoArgs, client.Help{
		Short: fmt.Sprintf("Run %s as its own process", what),
		Example: fmt.Sprintf(`  seam %s serve --store postgres://seam@db:5432/seam --tokens-file /etc/seam/tokens.json \
    --service-token "$SEAM_SERVICE_TOKEN"%s`, service, peerExample(service)),
		Flags: func(fs *pflag.FlagSet) {
			addServeFlags(fs, &cfg, "127.0.0.1:7070", "127.0.0.1:8080")
			addPeerFlags(fs, &cfg, node.Peers(service)...)
		},
	}, func(cmd *cobra.Command, _ []string) error {
		cfg.Version = g.Version
		return node.Run(cmd.Context(), cfg, node.Hooks{Notes: cmd.OutOrStdout(), Log: cmd.ErrOrStderr()})
	})
	group.AddCommand(serve)
	return group
}

func peerExample(service string) string {
	s := ""
	for _, p := range node.Peers(service) {
		s += fmt.Sprintf(" \\\n    --%s-addr %s-1:7070,%s-2:7070", p, p, p)
	}
	return s
}
