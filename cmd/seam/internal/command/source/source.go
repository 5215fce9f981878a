// Package source holds `seam source postgres`: the PostgreSQL change-data-capture
// source (sources/postgres) run, watched and steered from the command line.
package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/platform/telemetry"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/sources/postgres"
)

// sourceFlags are the flags every `seam source postgres` command shares.
type sourceFlags struct {
	name, source, target string
	// needSource makes --source required (by the commands that change
	// the source database, not only read the target).
	needSource bool
}

func (f *sourceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.name, "name", "", "name of the source (its slot and publication are seam_NAME)")
	fs.StringVar(&f.target, "target", "", "PostgreSQL URL of the target: the replica and the source's state")
	src := "PostgreSQL URL of the database to capture"
	if !f.needSource {
		src += " (optional: to show the lag)"
	}
	fs.StringVar(&f.source, "source", "", src)
}

func (f *sourceFlags) check() error {
	var miss []string
	if f.name == "" {
		miss = append(miss, "--name")
	}
	if f.target == "" {
		miss = append(miss, "--target (or SEAM_TARGET)")
	}
	if f.needSource && f.source == "" {
		miss = append(miss, "--source (or SEAM_SOURCE)")
	}
	if len(miss) > 0 {
		return exit.Usagef("give %s", strings.Join(miss, ", "))
	}
	return nil
}

func (f *sourceFlags) pools(ctx context.Context) (target, source *pgxpool.Pool, err error) {
	target, err = pgxpool.New(ctx, f.target)
	if err != nil {
		return nil, nil, exit.Usagef("--target: %w", err)
	}
	if f.source != "" {
		source, err = pgxpool.New(ctx, f.source)
		if err != nil {
			target.Close()
			return nil, nil, exit.Usagef("--source: %w", err)
		}
	}
	return target, source, nil
}

// newSourceCmd is `seam source`: sources that feed the gate themselves.
func New(g *client.Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "source", Short: "Run sources that feed the gate: PostgreSQL change data capture"}
	pg := &cobra.Command{
		Use:   "postgres",
		Short: "Replicate PostgreSQL tables through the gate (snapshot, then logical replication)",
		Long: `Replicate chosen tables of a PostgreSQL database into a target database,
through the gate: a consistent snapshot of each table, then the change
stream from the exact position of that snapshot. Every table gets a
contract derived from the catalog; an added nullable column registers a
new version by itself, while a dropped, renamed or retyped column halts
that table (its changes are held, in order) and raises an
UNANNOUNCED_CHANGE event until a migration version is registered.
docs/sources.md explains the design.`,
	}
	pg.AddCommand(newSourceRunCmd(g), newSourceStatusCmd(g), newSourceChangesCmd(g), newSourceProposalCmd(g), newSourceDropCmd(g))
	cmd.AddCommand(pg)
	return cmd
}

func newSourceRunCmd(g *client.Globals) *cobra.Command {
	f := sourceFlags{needSource: true}
	cfg := postgres.Config{}
	var metricsAddr string
	return g.Command("run", cobra.NoArgs, client.Help{
		Short: "Snapshot and stream tables until interrupted; a restart resumes where it stopped",
		Example: `  seam source postgres run --name shop --source postgres://repl@db/shop \
    --target postgres://seam@warehouse/replica --table public.payments --table accounts`,
		Flags: func(fs *pflag.FlagSet) {
			f.register(fs)
			fs.StringSliceVar(&cfg.Tables, "table", nil, "table to replicate, schema.table or table (repeat, or separate with commas)")
			fs.StringVar(&cfg.SubjectPrefix, "subject-prefix", "", "prefix of the tables' subjects (default pg.DATABASE.)")
			fs.StringVar(&cfg.Owner, "owner", "", "owner of the contracts registered (default cdc-NAME)")
			fs.StringVar(&cfg.TargetSchema, "target-schema", "replica", "schema of the replica tables in the target")
			fs.IntVar(&cfg.SnapshotWorkers, "workers", 4, "snapshot chunks read in parallel")
			fs.IntVar(&cfg.ChunkRows, "chunk-rows", 50_000, "rows per snapshot chunk (a primary-key range)")
			fs.IntVar(&cfg.BatchRecords, "batch-records", 1000, "most records in one batch sent to the gate")
			fs.BoolVar(&cfg.HardDeletes, "hard-deletes", false, "remove deleted rows from the replica instead of keeping a tombstone")
			fs.DurationVar(&cfg.PollInterval, "poll", 2*time.Second, "how often a halted table looks for its migration version")
			fs.DurationVar(&cfg.SnapshotTransactionLimit, "snapshot-transaction-limit", 10*time.Minute, "end a snapshot worker's transaction at the source (which holds back VACUUM) after its chunk once it is this old, and read the chunks left in a fresh snapshot; negative: one snapshot for the whole read")
			fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", 0, "write a heartbeat row (table public.seam_heartbeat, added to the publication) this often, so the slot moves even when no keepalive does it; 0: none")
			fs.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (host:port)")
		},
	}, func(cmd *cobra.Command, _ []string, conn grpc.ClientConnInterface) error {
		if err := f.check(); err != nil {
			return err
		}
		ctx := cmd.Context()
		cfg.Name, cfg.SourceURL, cfg.TargetURL = f.name, f.source, f.target
		cfg.Gate, cfg.Registry = gatev1.NewGateServiceClient(conn), registryv1.NewRegistryServiceClient(conn)
		// The log and the progress bar share standard error from
		// several goroutines.
		stderr := output.Locked(cmd.ErrOrStderr())
		log, err := telemetry.NewLogger(stderr, "text", "info")
		if err != nil {
			return err
		}
		cfg.Logger = log
		tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "seam-source-postgres", Version: g.Version})
		if err != nil {
			return exit.Usagef("%w", err)
		}
		defer func() { _ = tel.Shutdown(context.Background()) }() // on exit: nothing left to report it to
		cfg.Meter = tel.Meter("github.com/seamdata/seam/sources/postgres")
		if metricsAddr != "" {
			stop, err := serveMetrics(metricsAddr, tel.Metrics)
			if err != nil {
				return err
			}
			defer stop()
		}
		bar := newRowsBar(stderr, cmd.ErrOrStderr())
		cfg.Progress = bar.update
		cfg.Ready = bar.done
		src, err := postgres.New(cfg)
		if err != nil {
			return exit.Usagef("%w", err)
		}
		return src.Run(ctx)
	})
}

// serveMetrics serves /metrics until stopped.
func serveMetrics(addr string, h http.Handler) (func(), error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, exit.Usagef("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	return func() { _ = srv.Close() }, nil
}

// rowsBar shows the snapshot's progress: a bar on a terminal, and one
// summary line with the rates either way. The snapshot's workers report
// progress while the run reports the end, so every method holds mu.
type rowsBar struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	start time.Time
	last  postgres.SnapshotProgress
	tty   bool
}

// newRowsBar writes to w; tty is whether the stream behind w is a terminal.
func newRowsBar(w io.Writer, tty io.Writer) *rowsBar {
	f, ok := tty.(*os.File)
	return &rowsBar{w: w, start: time.Now(), tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (b *rowsBar) update(p postgres.SnapshotProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = p
	if !b.tty {
		return
	}
	if b.bar == nil {
		b.bar = progressbar.NewOptions64(max(p.RowsTotal, 1),
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionSetDescription("snapshot"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionFullWidth(),
		)
	}
	if p.RowsTotal > b.bar.GetMax64() {
		b.bar.ChangeMax64(p.RowsTotal)
	}
	_ = b.bar.Set64(min(p.RowsDone, b.bar.GetMax64()))
}

func (b *rowsBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar != nil {
		_ = b.bar.Finish()
		fmt.Fprintln(b.w)
	}
	secs := time.Since(b.start).Seconds()
	p := b.last
	if p.RowsDone == 0 {
		fmt.Fprintln(b.w, "snapshot done (nothing left to read); streaming")
		return
	}
	fmt.Fprintf(b.w, "snapshot done: %d rows, %.1f MB of column text in %.1fs (%.0f rows/s, %.1f MB/s); streaming\n",
		p.RowsDone, float64(p.BytesDone)/1e6, secs, float64(p.RowsDone)/secs, float64(p.BytesDone)/1e6/secs)
}

func newSourceStatusCmd(g *client.Globals) *cobra.Command {
	var f sourceFlags
	return client.Leaf("status", cobra.NoArgs, client.Help{
		Short:   "Show a source's phase, positions, snapshot progress, held changes and lag",
		Example: `  seam source postgres status --name shop --target postgres://seam@warehouse/replica --source postgres://repl@db/shop`,
		Flags:   f.register,
	}, func(cmd *cobra.Command, _ []string) error {
		if err := f.check(); err != nil {
			return err
		}
		if err := g.ValidateOutput(); err != nil {
			return err
		}
		st, err := readSourceStatus(cmd.Context(), &f)
		if err != nil {
			return err
		}
		if g.JSON() {
			return output.Value(cmd.OutOrStdout(), st)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "source %s (slot %s): %s; handoff at %s, staged to %s", st.Name, st.Slot, st.Phase, st.ConsistentLSN, st.CaptureLSN)
		if st.SourceLSN != "" {
			fmt.Fprintf(w, ", source at %s (lag %d bytes)", st.SourceLSN, st.LagBytes)
		}
		fmt.Fprintf(w, "; change stream at %d\n", st.Outbox)
		for _, sl := range st.Slots {
			kind := "slot"
			if sl.Temporary {
				kind = "temporary slot"
			}
			fmt.Fprintf(w, "%s %s keeps %s of WAL at the source (confirmed %s, active %v)\n", kind, sl.Name, bytesText(sl.RetainedBytes), sl.ConfirmedLSN, sl.Active)
		}
		if ot := st.OpenTransaction; ot != nil {
			fmt.Fprintf(w, "HOLDING %d transaction(s) open at the source since %s (%s): VACUUM cannot remove rows deleted since then; it ends when the snapshot has been read\n",
				ot.Backends, ot.Since.UTC().Format(time.RFC3339), ot.Age.Round(time.Second))
		}
		fmt.Fprintln(w)
		printSourceTables(w, st.Tables)
		for _, t := range st.Tables {
			if t.Halt != nil {
				fmt.Fprintf(w, "\n%s HALTED (%s): %s\n", t.Table, t.Halt.Reason, t.Halt.Message)
				if len(t.Halt.Partitions) > 0 {
					fmt.Fprintf(w, "  gate partitions: %s (seam monitor %s)\n", strings.Join(t.Halt.Partitions, ", "), t.Subject)
				}
				if t.Halt.Reason == "SCHEMA_CHANGE" {
					fmt.Fprintf(w, "  the migration starts from: seam source postgres proposal %s --name %s --target ... > migration.yaml\n", t.Table, st.Name)
				}
			}
		}
		return nil
	})
}

// bytesText prints a byte count in binary units.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func readSourceStatus(ctx context.Context, f *sourceFlags) (*postgres.Status, error) {
	target, source, err := f.pools(ctx)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if source != nil {
		defer source.Close()
		st, err := postgres.ReadStatus(ctx, target, source, f.name)
		return st, sourceErr(err)
	}
	st, err := postgres.ReadStatus(ctx, target, nil, f.name)
	return st, sourceErr(err)
}

// sourceErr is the exit of a source's state that could not be read: a
// failure (exit 1), such as a database that does not answer, not a usage
// error.
func sourceErr(err error) error {
	if errors.Is(err, postgres.ErrNoSource) {
		return exit.Failf("%w", err)
	}
	if err != nil {
		return exit.Failf("%w", err)
	}
	return nil
}

func printSourceTables(w io.Writer, tables []postgres.TableStatus) {
	t := output.NewTable(w, "TABLE", "SUBJECT", "PHASE", "VERSION", "SNAPSHOT", "APPLIED", "QUARANTINED", "PENDING", "HELD", "LAG")
	for _, ts := range tables {
		snap := fmt.Sprintf("%d/%d", ts.RowsDone, ts.RowsTotal)
		if ts.RowsTotal > 0 {
			snap += fmt.Sprintf(" (%.0f%%)", 100*float64(ts.RowsDone)/float64(ts.RowsTotal))
		}
		lag := "-"
		if ts.OldestPending != nil {
			lag = time.Since(*ts.OldestPending).Round(time.Second).String()
		}
		t.Row(ts.Table, ts.Subject, ts.Phase, fmt.Sprint(ts.ContractVersion), snap, fmt.Sprint(ts.Applied), fmt.Sprint(ts.Quarantined),
			fmt.Sprint(ts.Pending), fmt.Sprint(ts.Held()), lag)
	}
	_ = t.Flush()
}

func newSourceChangesCmd(g *client.Globals) *cobra.Command {
	var f sourceFlags
	var after int64
	var follow bool
	return client.Leaf("changes", cobra.NoArgs, client.Help{
		Short: "Print the accepted change stream as NDJSON, from a sequence on",
		Long: `Print the canonical changes the gate accepted and the replica applied,
one JSON object per line with the stream sequence, the table, the
operation (r snapshot read, i, u, d, t truncate), the source position and
the record. A pipeline resumes with --after set to the last sequence it
processed; --follow keeps waiting for new changes.`,
		Example: `  seam source postgres changes --name shop --target postgres://seam@warehouse/replica --after 1200 --follow`,
		Flags: func(fs *pflag.FlagSet) {
			f.register(fs)
			fs.Int64Var(&after, "after", 0, "start after this sequence")
			fs.BoolVar(&follow, "follow", false, "keep printing new changes until interrupted")
		},
	}, func(cmd *cobra.Command, _ []string) error {
		if err := f.check(); err != nil {
			return err
		}
		ctx := cmd.Context()
		target, _, err := (&sourceFlags{target: f.target}).pools(ctx)
		if err != nil {
			return err
		}
		defer target.Close()
		w := cmd.OutOrStdout()
		for {
			batch, err := postgres.ReadChanges(ctx, target, f.name, after, 1000)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return exit.Failf("%w", err)
			}
			for _, c := range batch {
				fmt.Fprintf(w, `{"sequence":%d,"table":%q,"subject":%q,"op":%q,"lsn":%q,"seq":%d,"contract_version":%d,"record_id":%q,"record":%s}`+"\n",
					c.Sequence, c.Table, c.Subject, c.Op, c.LSN, c.Seq, c.ContractVersion, c.RecordID, c.Record)
				after = c.Sequence
			}
			if len(batch) == 1000 {
				continue
			}
			if !follow {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
}

func newSourceProposalCmd(g *client.Globals) *cobra.Command {
	var f sourceFlags
	return client.Leaf("proposal TABLE", cobra.ExactArgs(1), client.Help{
		Short: "Print the contract a halted table's new columns imply: the start of its migration version",
		Long: `Print, as YAML that seam contract register -f reads, the contract the
halted table's new shape implies: the active version's fields, checks and
mapping with the source's change applied. Edit the mapping (a default or a
constant for a dropped column, renamed_from for a rename) and register it;
a retyped column comes with the cast its canonical field needs, or with a
comment at the top saying why no cast can do it; the table resumes and its held changes apply in
log order through it.`,
		Example: `  seam source postgres proposal public.payments --name shop --target postgres://seam@warehouse/replica > migration.yaml
  seam contract register -f migration.yaml --override-reason "INC-12: memo dropped at the source"`,
		Flags: f.register,
	}, func(cmd *cobra.Command, args []string) error {
		if err := f.check(); err != nil {
			return err
		}
		st, err := readSourceStatus(cmd.Context(), &sourceFlags{name: f.name, target: f.target})
		if err != nil {
			return err
		}
		tn, err := postgres.ParseTableName(args[0])
		if err != nil {
			return exit.Usagef("%w", err)
		}
		for _, t := range st.Tables {
			if t.Table != tn.String() {
				continue
			}
			if t.Halt == nil || len(t.Halt.Proposed) == 0 {
				return exit.Failf("table %s is %s, not halted by a schema change: nothing to migrate", t.Table, t.Phase)
			}
			var c contractv1.Contract
			if err := protojson.Unmarshal(t.Halt.Proposed, &c); err != nil {
				return fmt.Errorf("the proposal of %s: %w", t.Table, err)
			}
			w := cmd.OutOrStdout()
			for _, n := range t.Halt.ProposalNotes {
				fmt.Fprintf(w, "# EDIT BEFORE REGISTERING: %s\n", n)
			}
			return printContractYAML(w, &c)
		}
		return exit.Failf("source %s replicates no table %s", f.name, tn)
	})
}

func newSourceDropCmd(g *client.Globals) *cobra.Command {
	f := sourceFlags{needSource: true}
	return client.Leaf("drop", cobra.NoArgs, client.Help{
		Short: "Remove a stopped source: its slot and publication, and its state in the target (the replica tables stay)",
		Long: `Remove a source that is not running: the replication slot (so the
source database stops keeping WAL for it) and the publication, and the
source's positions, staged changes and change stream in the target. The
replica tables are left in place. A later run starts afresh with a new
snapshot.`,
		Example: `  seam source postgres drop --name shop --source postgres://repl@db/shop --target postgres://seam@warehouse/replica`,
		Flags:   f.register,
	}, func(cmd *cobra.Command, _ []string) error {
		if err := f.check(); err != nil {
			return err
		}
		ctx := cmd.Context()
		target, source, err := f.pools(ctx)
		if err != nil {
			return err
		}
		defer target.Close()
		defer source.Close()
		if err := postgres.Drop(ctx, target, source, f.name); err != nil {
			return exit.Failf("%w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "source %s dropped: slot and publication seam_%s removed, state removed; replica tables kept\n", f.name, f.name)
		return nil
	})
}

// printSourceMonitor is the source section of `seam monitor SUBJECT
// --source-target URL`: the subject's table in every source of the target.
func PrintMonitor(ctx context.Context, w io.Writer, targetURL, subject string) error {
	target, err := pgxpool.New(ctx, targetURL)
	if err != nil {
		return exit.Usagef("--source-target: %w", err)
	}
	defer target.Close()
	rows, err := target.Query(ctx, "SELECT DISTINCT connector FROM seam_cdc.tables WHERE subject = $1 ORDER BY 1", subject)
	if err != nil {
		return exit.Usagef("--source-target: read the sources: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if len(names) == 0 {
		fmt.Fprintf(w, "\nno PostgreSQL source in that target feeds %s\n", subject)
		return nil
	}
	for _, n := range names {
		st, err := postgres.ReadStatus(ctx, target, nil, n)
		if err != nil {
			return exit.Failf("%w", err)
		}
		var mine []postgres.TableStatus
		for _, t := range st.Tables {
			if t.Subject == subject {
				mine = append(mine, t)
			}
		}
		fmt.Fprintf(w, "\nsource %s (%s, staged to %s):\n", st.Name, st.Phase, st.CaptureLSN)
		printSourceTables(w, mine)
	}
	return nil
}

// printContractYAML writes a contract as the YAML seam contract register
// reads: proto field names, and 64-bit integers as numbers (protojson
// writes them as strings).
func printContractYAML(w io.Writer, c *contractv1.Contract) error {
	b, err := output.Line.Marshal(c)
	if err != nil {
		return err
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	var fix func(v any) any
	fix = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "min_length" || k == "max_length") {
					if n, err := strconv.ParseInt(s, 10, 64); err == nil {
						x[k] = n
						continue
					}
				}
				x[k] = fix(e)
			}
		case []any:
			for i, e := range x {
				x[i] = fix(e)
			}
		case json.Number:
			if n, err := x.Int64(); err == nil {
				return n
			}
			f, _ := x.Float64()
			return f
		}
		return v
	}
	out, err := yaml.Marshal(fix(doc))
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
