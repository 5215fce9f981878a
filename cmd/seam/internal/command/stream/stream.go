// Package stream holds `seam stream kafka|jetstream`: the connector that
// reads a broker through the gate (connectors/stream).
package stream

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/connectors/stream"
	"github.com/seamdata/seam/connectors/stream/jetstream"
	"github.com/seamdata/seam/connectors/stream/kafka"
	"github.com/seamdata/seam/platform/telemetry"
)

// streamFlags are the flags both broker commands share.
type streamFlags struct {
	cfg         stream.Config
	granularity string
	metricsAddr string
	progress    time.Duration
	logFormat   string
	logLevel    string
}

func (f *streamFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cfg.Name, "name", "", "connector name: names its journal, consumer group and output header (required)")
	fs.StringVar(&f.cfg.Subject, "subject", "", "registry subject of the source, for example shop.orders (required)")
	fs.Int32Var(&f.cfg.ContractVersion, "contract-version", 0, "pin a contract version (0: the active one)")
	fs.StringVar(&f.cfg.EventTimeField, "event-time", "", "top-level field with each record's event time (RFC 3339, date or Unix seconds); empty: the broker's timestamp")
	fs.StringVar(&f.granularity, "granularity", "day", "event-time partitions: day, hour or minute (UTC)")
	fs.DurationVar(&f.cfg.Lateness, "lateness", 0, "allowed lateness: a partition is sealed and published once the watermark is this far past its end")
	fs.DurationVar(&f.cfg.Idle, "idle", time.Minute, "leave a source partition without traffic out of the watermark after this long")
	fs.IntVar(&f.cfg.BatchRecords, "batch-records", 1000, "most records in one gate batch")
	fs.IntVar(&f.cfg.BatchBytes, "batch-bytes", 4<<20, "most bytes in one gate batch")
	fs.DurationVar(&f.cfg.BatchWait, "batch-wait", 200*time.Millisecond, "how long a batch waits to fill")
	fs.BoolVar(&f.cfg.Confluent, "confluent", false, "messages are in Confluent's wire format (magic byte 0, schema id, Avro or JSON payload): decode each by its schema id in Seam's registry and judge it with that schema's contract version (docs/kafka.md)")
	fs.BoolVar(&f.cfg.IgnoreReplays, "ignore-replays", false, "do not publish what replays of the subject release (then a pipeline token is enough; otherwise the token needs the operator role)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (empty: none)")
	fs.DurationVar(&f.progress, "progress", 2*time.Second, "print a progress line this often (0: never)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Run a streaming connector: a broker topic or subject through the gate",
		Long: `Read a source topic (Kafka) or subject (NATS JetStream), send its records
through the gate with the broker position as each batch's identity, stage
what the gate accepts per event-time partition, and publish a partition to
the output once the watermark has passed it (and --lateness more). The
source position moves on only after the gate has answered and the answer is
journaled; the output gets every accepted record exactly once, in source
order per partition.

While the source is contained the connector keeps reading (the gate holds
everything in quarantine) and publishes nothing; after the release it
resumes. When someone replays quarantined records of the subject (seam
quarantine replay), the connector publishes what the replay released.

See docs/streaming.md for the design and deploy/README.md for the broker
settings it needs.`,
	}
	cmd.AddCommand(newStreamJetStreamCmd(g), newStreamKafkaCmd(g))
	return cmd
}

func newStreamJetStreamCmd(g *client.Globals) *cobra.Command {
	var f streamFlags
	var url string
	var js jetstream.Config
	return g.Command("jetstream", cobra.NoArgs, client.Help{
		Short: "Connect a NATS JetStream subject through the gate",
		Example: `  seam stream jetstream --name orders --subject shop.orders --event-time created_at \
    --stream ORDERS --source-subject orders.raw --output-stream ORDERS_CANON --output-subject orders.canonical`,
		Flags: func(fs *pflag.FlagSet) {
			f.register(fs)
			fs.StringVar(&url, "nats-url", nats.DefaultURL, "NATS server URL")
			fs.StringVar(&js.Stream, "stream", "", "source stream (required)")
			fs.StringVar(&js.Subject, "source-subject", "", "read only this subject of the source stream")
			fs.StringVar(&js.OutputStream, "output-stream", "", "stream holding the output subject (required)")
			fs.StringVar(&js.OutputSubject, "output-subject", "", "subject the accepted canonical records go to; written by this connector alone (required)")
			fs.IntVar(&js.JournalReplicas, "journal-replicas", 1, "replicas of the journal stream the connector creates")
		},
	}, func(cmd *cobra.Command, _ []string, conn grpc.ClientConnInterface) error {
		if err := f.prepare(); err != nil {
			return err
		}
		nc, err := nats.Connect(url, nats.Name("seam-stream-"+f.cfg.Name), nats.MaxReconnects(-1))
		if err != nil {
			return exit.Usagef("connect to NATS at %s: %w", url, err)
		}
		defer nc.Close()
		js.Connector = f.cfg.Name
		part, err := jetstream.Open(cmd.Context(), nc, js)
		if err != nil {
			return exit.Usagef("%w", err)
		}
		return runStream(cmd, g, &f, conn, []stream.Partition{part})
	})
}

func newStreamKafkaCmd(g *client.Globals) *cobra.Command {
	var f streamFlags
	var brokers string
	var parts []int32
	var kc kafka.Config
	return g.Command("kafka", cobra.NoArgs, client.Help{
		Short: "Connect a Kafka topic through the gate",
		Example: `  seam stream kafka --name orders --subject shop.orders --event-time created_at \
    --brokers kafka-1:9092,kafka-2:9092 --topic orders.raw --output-topic orders.canonical`,
		Flags: func(fs *pflag.FlagSet) {
			f.register(fs)
			fs.StringVar(&brokers, "brokers", "127.0.0.1:9092", "Kafka bootstrap brokers, separated by commas")
			fs.StringVar(&kc.Topic, "topic", "", "source topic (required)")
			fs.Int32SliceVar(&parts, "partitions", nil, "read only these source partitions (default: all)")
			fs.StringVar(&kc.Output, "output-topic", "", "output topic, at least as many partitions as the source (required)")
			fs.StringVar(&kc.Journal, "journal-topic", "", "journal topic (default seam.journal.<name>; created when missing)")
			fs.StringVar(&kc.Group, "group", "", "consumer group the position is mirrored to (default seam-stream-<name>)")
		},
	}, func(cmd *cobra.Command, _ []string, conn grpc.ClientConnInterface) error {
		if err := f.prepare(); err != nil {
			return err
		}
		kc.Connector, kc.Partitions = f.cfg.Name, parts
		for _, b := range strings.Split(brokers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				kc.Brokers = append(kc.Brokers, b)
			}
		}
		kconn, ps, err := kafka.Open(cmd.Context(), kc)
		if err != nil {
			return exit.Usagef("%w", err)
		}
		defer kconn.Close()
		return runStream(cmd, g, &f, conn, ps)
	})
}

// prepare checks the flags before any broker is contacted.
func (f *streamFlags) prepare() error {
	g, err := stream.ParseGranularity(f.granularity)
	if err != nil {
		return exit.Usagef("--granularity: %w", err)
	}
	f.cfg.Granularity = g
	if err := f.cfg.Validate(); err != nil {
		return exit.Usagef("%w", err)
	}
	if spec := os.Getenv(crashEnv); spec != "" {
		crash, err := crashInjector(spec)
		if err != nil {
			return exit.Usagef("%s: %w", crashEnv, err)
		}
		f.cfg.Crash = crash
	}
	return nil
}

// runStream runs a connector until interrupted, with metrics and a
// progress line.
func runStream(cmd *cobra.Command, g *client.Globals, f *streamFlags, conn grpc.ClientConnInterface, parts []stream.Partition) error {
	ctx := cmd.Context()
	log, err := telemetry.NewLogger(cmd.ErrOrStderr(), f.logFormat, f.logLevel)
	if err != nil {
		return exit.Usagef("%w", err)
	}
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "seam-stream", Version: g.Version})
	if err != nil {
		return exit.Usagef("%w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx) // nothing left to report it to
	}()
	f.cfg.Logger, f.cfg.Meter = log, tel.MeterProvider.Meter("github.com/seamdata/seam/connectors/stream")
	if f.cfg.Crash != nil {
		log.Warn("fault injection is on: the connector kills itself with SIGKILL at random crash points", "spec", os.Getenv(crashEnv))
	}
	c, err := stream.New(f.cfg, conn, parts)
	if err != nil {
		return exit.Usagef("%w", err)
	}
	if f.metricsAddr != "" {
		lis, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return exit.Usagef("--metrics-addr %s: %w", f.metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", tel.Metrics)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(lis) }() // ends with Shutdown below
		// On exit: nothing is left to report a failed shutdown to.
		defer func() { _ = srv.Shutdown(context.Background()) }()
		log.Info("serving metrics", "addr", lis.Addr().String())
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	if f.progress > 0 {
		go func() {
			defer close(done)
			progressLines(runCtx, cmd.ErrOrStderr(), c, f.progress)
		}()
	} else {
		close(done)
	}
	err = c.Run(runCtx)
	cancel()
	<-done
	if err != nil {
		return exit.Failf("stream %s: %w", f.cfg.Name, err)
	}
	return nil
}

// progressLines prints the connector's progress every interval: one line
// rewritten in place on a terminal, one line per interval otherwise.
func progressLines(ctx context.Context, w io.Writer, c *stream.Connector, every time.Duration) {
	tty := false
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = true
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastAt := c.Stats(ctx), time.Now()
	for {
		select {
		case <-ctx.Done():
			if tty {
				fmt.Fprintln(w)
			}
			return
		case now := <-t.C:
			s := c.Stats(ctx)
			line := progressLine(s, last, now.Sub(lastAt))
			last, lastAt = s, now
			if tty {
				fmt.Fprintf(w, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(w, line)
			}
		}
	}
}

func progressLine(s, prev stream.Stats, d time.Duration) string {
	rate := func(a, b int64) string {
		if d <= 0 {
			return "0/s"
		}
		return fmt.Sprintf("%.0f/s", float64(a-b)/d.Seconds())
	}
	lag := fmt.Sprint(s.Lag)
	if s.Lag < 0 {
		lag = "?"
	}
	wm := "-"
	if !s.Watermark.IsZero() {
		wm = s.Watermark.UTC().Format(time.RFC3339)
	}
	line := fmt.Sprintf("read %d (%s) accepted %d quarantined %d blocked %d published %d (%s) replayed %d held %d lag %s watermark %s",
		s.Read, rate(s.Read, prev.Read), s.Accepted, s.Quarantined, s.Blocked, s.Published, rate(s.Published, prev.Published), s.Replayed, s.Held, lag, wm)
	if s.Contained {
		line += " CONTAINED: publishing paused"
	}
	return line
}

// crashEnv turns on fault injection, for tests only: a list of
// point=probability pairs (points: stream.CrashPoints), for example
// "ingested=0.05,published=0.1". At each point the connector sends itself
// SIGKILL with that probability.
const crashEnv = "SEAM_STREAM_CRASH"

func crashInjector(spec string) (func(string), error) {
	probs := map[string]float64{}
	for _, kv := range strings.Split(spec, ",") {
		point, p, ok := strings.Cut(strings.TrimSpace(kv), "=")
		v, err := strconv.ParseFloat(p, 64)
		if !ok || err != nil || v < 0 || v > 1 || !slices.Contains(stream.CrashPoints, point) {
			return nil, fmt.Errorf("%q: write point=probability with a point of %s and a probability from 0 to 1", kv, strings.Join(stream.CrashPoints, ", "))
		}
		probs[point] = v
	}
	return func(point string) {
		if rand.Float64() < probs[point] {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}, nil
}
