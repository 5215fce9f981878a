// Package bench holds `seam bench`: the standard benchmarks against an
// in-process Seam.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seamdata/seam/cmd/seam/internal/command/bench/measure"
	idmapcmd "github.com/seamdata/seam/cmd/seam/internal/command/idmap"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/seamdata/seam/cmd/seam/internal/client"
	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/cmd/seam/internal/node"
	"github.com/seamdata/seam/cmd/seam/internal/output"
	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	"github.com/seamdata/seam/core/record/recordtest"
	"github.com/seamdata/seam/core/verdict"
	"github.com/seamdata/seam/platform/dial"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
	"github.com/seamdata/seam/services/idmap/idtable"
)

// Result is one row of `seam bench`, also its JSON form.
type Result = measure.Result

// Runner runs a seam command line in this process, as main would, and
// returns its exit code; `seam bench` times `seam gate ingest` and
// `seam validate` through it.
type Runner func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Row names, fixed so runs can be compared and tests can find them.
const (
	RowValidate      = "validate (in-process, 1 core)"
	RowAdapt         = "adapt (in-process, 1 core)"
	RowChain         = "chain (in-process, 1 core)"
	RowValidateCLI   = "seam validate --workers 1 (CPU)"
	RowJSONValid     = "json.Valid per line (CPU)"
	RowNoop          = "no-op gRPC service (1 caller)"
	RowIngestSummary = "ingest summary-only (gRPC, 1 caller)"
	RowIngestRecords = "ingest with records (gRPC, 1 caller)"
	RowIngestCallers = "ingest summary-only (gRPC, %d callers)"
	RowIngestStream  = "ingest summary-only (gRPC stream, 1 caller)"
	RowIngestCLI     = "seam gate ingest (%d-record file)"
	RowTranslate     = "translate (gRPC, %dk-id batches)"
	RowAdaptGRPC     = "adapt (gRPC)"
	RowIdmapUpsert   = "idmap import of %s into %d (gRPC)"
	RowIdmapBytes    = "idmap index of %d pairs (in-process)"
)

type benchOptions struct {
	duration    time.Duration
	tableSize   int
	concurrency int
	batch       int
	fileRecords int
	only        []string
	cpuProfile  string
	memProfile  string
	store       string
	rounds      int
	run         Runner
}

// New returns `seam bench`; run runs the commands it times.
func New(g *client.Globals, run Runner) *cobra.Command {
	o := benchOptions{run: run}
	return g.Local("bench", cobra.NoArgs, client.Help{
		Short: "Run the standard benchmarks against an in-process Seam and print records/s",
		Long: `Measure what a deployment can sustain on this machine, and what the
path through Seam costs against its parts, in one run:

  validate, adapt, chain   the 12-field shop.orders record decoded and
                           validated, decoded and adapted, and decoded once,
                           validated and adapted (the chain), in-process on
                           one core, in batches of --batch records
  validate-cli             CPU seconds of 'seam validate --workers 1' on a
                           --file-records NDJSON file, against Go's
                           json.Valid over the same lines (target: at most
                           1.4 times)
  ingest                   ingest over gRPC (gate, adapter and idmap in this
                           process on loopback, each its own gRPC service),
                           summary-only and with canonical records
                           (answers asked packed), one caller, as a share
                           of the chain (targets: 50% and 35%);
                           summary-only with --concurrency callers
                           against one (target: 1.6 times with two);
                           summary-only from one caller streaming 20
                           batches at a time (IngestStream, each chunk
                           prepared while the one before commits), as a
                           share of the chain; and the same batches to a
                           no-op gRPC service that answers without looking
                           at them: the transport alone
  ingest-cli               'seam gate ingest' of the --file-records file
                           against the one-caller ingest (target: 80%),
                           and its share of the chain (it is one caller
                           too, streaming chunks prepared while the one
                           before commits); the ingest rows look their
                           customers up in the --table-size lookup table
                           (keep it at least 150000 so every customer is
                           in it)
  translate, adapt-grpc    identifier translation on a lookup table of
                           --table-size pairs, and adaptation, over gRPC
  idmap                    imports of 1 and of 1,000 new pairs into the
                           --table-size lookup table over gRPC, one after
                           the other (records are pairs; the note gives
                           the time an import takes, for one pair target
                           under 50 ms), and the bytes a pair of an index
                           of --table-size uuid↔int pairs built in this
                           process (target: at most 48)

The rows measured against each other (the chain, the no-op service and
the ingest rows, and validate-cli with its floor) run --rounds times, one
after the other in turn, and each reports its median round: on a shared machine one round
of a row swings by a fifth, and a slow spell slows a round of each.

Allocations are per record for the whole process. --cpuprofile writes a
CPU profile of the whole run for 'go tool pprof -top', --memprofile one
of every allocation ('go tool pprof -sample_index=alloc_objects -top';
the run is slower, so its figures are not the speed's). --store runs the
instance on another store, such as an empty PostgreSQL database, to
measure what its commits cost.`,
		Example: `  seam bench
  seam bench --duration 5s --table-size 10000000 -o json
  seam bench --only chain,ingest,ingest-cli,validate-cli --cpuprofile ingest.pprof
  seam bench --only chain,ingest --store postgres://seam@db/seam_bench
  seam bench --only idmap --table-size 10000000`,
		Flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&o.duration, "duration", 3*time.Second, "how long to run each benchmark")
			fs.IntVar(&o.tableSize, "table-size", 1_000_000, "pairs in the lookup table the translate benchmark reads")
			fs.IntVar(&o.concurrency, "concurrency", 0, "parallel gRPC callers (default: one per core, at least 2)")
			fs.IntVar(&o.batch, "batch", 1000, "records per batch (translate uses 10x as many ids)")
			fs.IntVar(&o.fileRecords, "file-records", 1_000_000, "records in the NDJSON file validate-cli and ingest-cli read")
			fs.StringSliceVar(&o.only, "only", nil, "run only these: validate, adapt, chain, validate-cli, translate, adapt-grpc, ingest, ingest-cli, idmap")
			fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
			fs.StringVar(&o.memProfile, "memprofile", "", "write a profile of every allocation of the run to this file (slows the run)")
			fs.IntVar(&o.rounds, "rounds", 3, "times each row measured against others runs, in turn with them; the median round is reported")
			fs.StringVar(&o.store, "store", "", "store of the benchmark instance, such as an empty PostgreSQL database postgres://… (default: SQLite files in a temporary directory)")
			g.AddOutputFlag(fs)
		},
	}, func(cmd *cobra.Command, _ []string) error {
		if o.duration <= 0 || o.batch < 1 || o.tableSize < o.batch {
			return exit.Usagef("--duration must be positive, --batch at least 1 and --table-size at least --batch")
		}
		if o.fileRecords < 1 || o.rounds < 1 {
			return exit.Usagef("--file-records and --rounds must be at least 1")
		}
		if o.concurrency <= 0 {
			o.concurrency = max(2, runtime.GOMAXPROCS(0))
		}
		if o.cpuProfile != "" {
			f, err := os.Create(o.cpuProfile)
			if err != nil {
				return exit.Usagef("--cpuprofile: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			defer pprof.StopCPUProfile()
		}
		if o.memProfile != "" {
			// Every allocation is sampled, so the profile counts them
			// (allocs per record) and not only the large ones; the run
			// is slower for it.
			runtime.MemProfileRate = 1
		}
		results, err := runBench(cmd.Context(), o, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if o.memProfile != "" {
			if err := writeHeapProfile(o.memProfile); err != nil {
				return fmt.Errorf("--memprofile: %w", err)
			}
		}
		ratios(results)
		if g.JSON() {
			return output.Value(cmd.OutOrStdout(), results)
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "seam bench on %d cores (%s, %s/%s), %s per benchmark; rows measured against each other: median of %d rounds run in turn\n\n",
			runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, o.duration, o.rounds)
		t := output.NewTable(w, "BENCHMARK", "RECORDS/S", "NS/RECORD", "CPU NS/RECORD", "ALLOCS/RECORD", "BYTES/RECORD", "RATIO", "NOTE")
		for _, r := range results {
			ratio, cpu := "", ""
			if r.RatioOf != "" {
				ratio = fmt.Sprintf("%.2f", r.Ratio)
			}
			if r.CPUNsPerRecord > 0 {
				cpu = fmt.Sprintf("%.0f", r.CPUNsPerRecord)
			}
			t.Row(r.Name, fmt.Sprintf("%.0f", r.RecordsPerSec), fmt.Sprintf("%.0f", r.NsPerRecord), cpu, fmt.Sprintf("%.2f", r.AllocsPerRec), fmt.Sprintf("%.0f", r.BytesPerRecord), ratio, r.Note)
		}
		return t.Flush()
	})
}

// writeHeapProfile writes the allocations of the run so far to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (o benchOptions) wants(name string) bool {
	if len(o.only) == 0 {
		return true
	}
	for _, n := range o.only {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}

func runBench(ctx context.Context, o benchOptions, progress io.Writer) ([]Result, error) {
	v1 := examples.ShopOrdersV1()
	data := recordtest.OrdersNDJSON(o.batch)
	var out []Result
	add := func(r Result, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(progress, "  %-44s %10.0f records/s\n", r.Name, r.RecordsPerSec)
		out = append(out, r)
		return nil
	}
	checks, err := check.Compile(v1)
	if err != nil {
		return nil, err
	}
	maps, err := mapping.CompileVersion(v1, examples.CommerceOrder(), 1, nil)
	if err != nil {
		return nil, err
	}

	if o.wants("validate") {
		dec := record.NewDecoder(checks.Schema(), record.Options{})
		if err := add(measure.Run(RowValidate, o.duration, 1, int64(o.batch), func() error {
			defer dec.Recycle()
			b, err := dec.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
			if err != nil {
				return err
			}
			return validated(checks, b)
		})); err != nil {
			return nil, err
		}
	}
	if o.wants("adapt") {
		dec := record.NewDecoder(maps.Schema(), record.Options{})
		buf := make([]byte, 0, 400*o.batch)
		if err := add(measure.Run(RowAdapt, o.duration, 1, int64(o.batch), func() error {
			defer dec.Recycle()
			b, err := dec.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
			if err != nil {
				return err
			}
			buf, err = adapted(maps, b, buf)
			return err
		})); err != nil {
			return nil, err
		}
	}
	var chain func() (Result, error)
	chainAt := -1
	if o.wants("chain") || o.wants("ingest") {
		// The chain is what the path over gRPC does, without the path:
		// each record decoded once, validated and adapted, on one core.
		// Both plans compile the same contract fields, so they share the
		// decoded records' layout.
		dec := record.NewDecoder(checks.Schema(), record.Options{})
		buf := make([]byte, 0, 400*o.batch)
		chain = func() (Result, error) {
			return measure.Run(RowChain, o.duration, 1, int64(o.batch), func() error {
				defer dec.Recycle()
				b, err := dec.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
				if err != nil {
					return err
				}
				if err := validated(checks, b); err != nil {
					return err
				}
				buf, err = adapted(maps, b, buf)
				return err
			})
		}
		if o.wants("ingest") {
			// Measured below, in turn with the ingest rows; its row
			// keeps its place.
			chainAt = len(out)
			out = append(out, Result{Name: RowChain})
		} else if err := add(measure.Median(o.rounds, measure.ByRate, chain)); err != nil {
			return nil, err
		}
	}

	dir, err := os.MkdirTemp("", "seam-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var file string
	if o.wants("validate-cli") || o.wants("ingest-cli") {
		fmt.Fprintf(progress, "  writing a %d-record NDJSON file…\n", o.fileRecords)
		if file, err = writeOrders(dir, o.fileRecords); err != nil {
			return nil, err
		}
	}
	if o.wants("validate-cli") {
		// Before the instance starts, so the process runs nothing else.
		rows, err := validateCPU(ctx, o, dir, file, progress)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if err := add(r, nil); err != nil {
				return nil, err
			}
		}
	}
	if o.wants("idmap") {
		// Before the instance starts, so the heap holds nothing else.
		r, err := indexBytes(o.tableSize)
		if err := add(r, err); err != nil {
			return nil, err
		}
	}
	if !o.wants("translate") && !o.wants("adapt-grpc") && !o.wants("ingest") && !o.wants("ingest-cli") && !o.wants("idmap") {
		return out, nil
	}

	// The gRPC benchmarks run against a whole Seam in this process.
	nctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- node.Run(nctx, node.Config{Services: node.ServiceNames, Bootstrap: true, DataDir: dir + "/node", Store: o.store, GRPCAddr: "127.0.0.1:0", LogFormat: "text", LogLevel: "error"},
			node.Hooks{Log: io.Discard, Ready: func(g, _ string) { ready <- g }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		return nil, fmt.Errorf("start the benchmark instance: %w", err)
	}
	defer func() {
		cancel()
		// The instance is stopped on purpose: the error it ends with is
		// its cancellation.
		err := <-done
		_ = err
	}()
	tokenBytes, err := os.ReadFile(dir + "/node/admin.token")
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(string(tokenBytes))
	conn, err := dial.Conn(addr, dial.Options{Token: token})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := benchSetup(ctx, conn, o, progress); err != nil {
		return nil, err
	}

	if o.wants("translate") {
		ic := idmapv1.NewIdMapServiceClient(conn)
		n := o.batch * 10
		// The ids are drawn before timing so only translation is measured.
		pool := make([][]string, 16)
		for p := range pool {
			pool[p] = make([]string, n)
			for i := range pool[p] {
				pool[p][i] = benchUUID(rand.IntN(o.tableSize))
			}
		}
		var next atomic.Int64
		err := add(measure.Run(fmt.Sprintf(RowTranslate, n/1000), o.duration, o.concurrency, int64(n), func() error {
			ids := pool[next.Add(1)%int64(len(pool))]
			resp, err := ic.Translate(ctx, &idmapv1.TranslateRequest{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int", Ids: ids})
			if err != nil {
				return err
			}
			if resp.GetHits() != int64(n) {
				return fmt.Errorf("translate: %d hits of %d known ids", resp.GetHits(), n)
			}
			return nil
		}))
		if err != nil {
			return nil, err
		}
	}
	if o.wants("idmap") {
		ic := idmapv1.NewIdMapServiceClient(conn)
		next := o.tableSize // new pairs continue the table's ids
		for _, size := range []int{1, 1000} {
			name := fmt.Sprintf(RowIdmapUpsert, "1 pair", o.tableSize)
			if size > 1 {
				name = fmt.Sprintf(RowIdmapUpsert, "1,000 pairs", o.tableSize)
			}
			r, err := measure.Run(name, o.duration, 1, int64(size), func() error {
				pairs := make([]*idmapv1.Pair, size)
				for i := range pairs {
					pairs[i] = &idmapv1.Pair{From: benchUUID(next), To: fmt.Sprint(1 + next)}
					next++
				}
				return importOnce(ctx, ic, pairs)
			})
			if err == nil {
				r.Note = fmt.Sprintf("%.1f ms an import", r.NsPerRecord*float64(size)/1e6)
				if size == 1 {
					r.Note += " (target < 50 ms)"
				}
			}
			if err := add(r, err); err != nil {
				return nil, err
			}
		}
	}
	if o.wants("adapt-grpc") {
		ac := adapterv1.NewAdapterServiceClient(conn)
		err := add(measure.Run(RowAdaptGRPC, o.duration, o.concurrency, int64(o.batch), func() error {
			resp, err := ac.Adapt(ctx, &adapterv1.AdaptRequest{Subject: "shop.orders", Batch: &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: data}}}})
			if err != nil {
				return err
			}
			if resp.GetFailed() > 0 {
				return fmt.Errorf("adapt: %d records failed", resp.GetFailed())
			}
			return nil
		}))
		if err != nil {
			return nil, err
		}
	}
	if o.wants("ingest") {
		gc := gatev1.NewGateServiceClient(conn)
		var seq atomic.Int64
		// The answer is asked packed, as seam gate ingest asks it: with
		// records, the canonical records in one buffer, not a message
		// each; summary-only, the accepted records' positions alone.
		request := func(summaryOnly bool) *gatev1.IngestRequest {
			k := seq.Add(1)
			return &gatev1.IngestRequest{
				// A partition per batch: the same records twice in one
				// partition would be duplicates.
				Subject: "shop.orders", Partition: fmt.Sprintf("bench-%d", k), Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprintf("bench-%d", k)},
				Batch:       &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: data}}},
				SummaryOnly: summaryOnly, Answer: gatev1.IngestAnswer_INGEST_ANSWER_PACKED,
			}
		}
		ingest := func(summaryOnly bool) func() error {
			return func() error {
				resp, err := gc.Ingest(ctx, request(summaryOnly))
				if err != nil {
					return err
				}
				accepted := resp.GetSummary().GetAccepted()
				if accepted != int64(o.batch) {
					return fmt.Errorf("ingest: %d of %d records accepted", accepted, o.batch)
				}
				p := resp.GetPacked()
				if int64(len(p.GetPositions())) != accepted {
					return fmt.Errorf("ingest: %d accepted records' verdicts returned for %d accepted records", len(p.GetPositions()), accepted)
				}
				if !summaryOnly && (int64(len(p.GetJsonEnds())) != accepted || len(p.GetRecordIds()) != verdict.IDSize*int(accepted) || len(p.GetJson()) == 0) {
					return fmt.Errorf("ingest: %d canonical records and %d record ids returned for %d accepted records", len(p.GetJsonEnds()), len(p.GetRecordIds())/verdict.IDSize, accepted)
				}
				return nil
			}
		}
		// The no-op service takes the same requests over loopback gRPC
		// and answers each with a summary, looking at nothing: what the
		// transport alone costs a batch.
		noop, err := startNoop()
		if err != nil {
			return nil, err
		}
		defer noop.Stop()
		nconn, err := dial.Conn(noop.addr, dial.Options{})
		if err != nil {
			return nil, err
		}
		defer nconn.Close()
		nc := gatev1.NewGateServiceClient(nconn)
		noopOp := func() error {
			_, err := nc.Ingest(ctx, request(true))
			return err
		}
		// One caller streaming: streamChunks chunks of --batch records
		// (distinct orders, so none is a duplicate) into a partition of
		// their own, as seam gate ingest sends a file, without the file.
		chunks := make([][]byte, streamChunks)
		for j := range chunks {
			for i := j * o.batch; i < (j+1)*o.batch; i++ {
				chunks[j] = append(recordtest.OrderJSON(chunks[j], i), '\n')
			}
		}
		streamOp := func() error { return ingestStream(ctx, gc, fmt.Sprintf("bench-%d", seq.Add(1)), chunks, o.batch) }
		// The chain, the no-op service and the three ingest rows run one
		// after the other, round after round, so that a machine slower
		// for a while slows a round of each; each row reports its median
		// round.
		var rows [6][]Result
		for round := range o.rounds {
			for i, run := range []func() (Result, error){
				chain,
				func() (Result, error) {
					return measure.Run(RowNoop, o.duration, 1, int64(o.batch), noopOp)
				},
				func() (Result, error) {
					return measure.Run(RowIngestSummary, o.duration, 1, int64(o.batch), ingest(true))
				},
				func() (Result, error) {
					return measure.Run(RowIngestRecords, o.duration, 1, int64(o.batch), ingest(false))
				},
				func() (Result, error) {
					return measure.Run(fmt.Sprintf(RowIngestCallers, o.concurrency), o.duration, o.concurrency, int64(o.batch), ingest(true))
				},
				func() (Result, error) {
					return measure.Run(RowIngestStream, o.duration, 1, int64(streamChunks*o.batch), streamOp)
				},
			} {
				r, err := run()
				if err != nil {
					return nil, err
				}
				rows[i] = append(rows[i], r)
			}
			fmt.Fprintf(progress, "  round %d of %d: chain %.0f, no-op %.0f, ingest summary-only %.0f, with records %.0f, %d callers %.0f, a stream %.0f records/s\n",
				round+1, o.rounds, rows[0][round].RecordsPerSec, rows[1][round].RecordsPerSec, rows[2][round].RecordsPerSec, rows[3][round].RecordsPerSec,
				o.concurrency, rows[4][round].RecordsPerSec, rows[5][round].RecordsPerSec)
		}
		out[chainAt] = measure.Pick(rows[0], measure.ByRate)
		for _, rs := range rows[1:] {
			if err := add(measure.Pick(rs, measure.ByRate), nil); err != nil {
				return nil, err
			}
		}
	}
	if o.wants("ingest-cli") {
		if err := add(ingestCLI(ctx, o, addr, token, file)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// validated runs the checks on a decoded batch; the benchmark's records
// all pass.
func validated(plan *check.Plan, b *record.Batch) error {
	res := plan.Validate(b.Records)
	// The gate gives each result's memory back for the next batch; so
	// does the chain it is measured against.
	defer plan.Recycle(res)
	if res.Blocked {
		return fmt.Errorf("benchmark batch blocked: %v", plan.BlockReasons(res))
	}
	return nil
}

// adapted maps a decoded batch and encodes each canonical record as JSON
// into buf, reused batch after batch as the adapter reuses its buffers.
func adapted(plan *mapping.Plan, b *record.Batch, buf []byte) ([]byte, error) {
	mapped := plan.Map(b.Records)
	defer mapped.Release()
	res, err := mapped.Results()
	if err != nil {
		return buf, err
	}
	buf = buf[:0]
	for i := range res {
		if len(res[i].Errors) > 0 {
			return buf, fmt.Errorf("record %d failed: %v", i, res[i].Errors)
		}
		buf = plan.AppendJSON(buf, res[i].Values)
	}
	return buf, nil
}

// writeOrders writes n distinct orders as NDJSON, and the contract that
// judges them, into dir.
func writeOrders(dir string, n int) (string, error) {
	path := dir + "/orders.ndjson"
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	for i := range n {
		line = recordtest.OrderJSON(line[:0], i)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	// On disk before it is read: the kernel writing it back would run
	// beside the rounds that read it.
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, os.WriteFile(dir+"/shop_orders_v1.yaml", examples.ShopOrdersV1YAML, 0o600)
}

// validateCPU times `seam validate --workers 1` on the file and, as the
// floor it is held to, Go's json.Valid over the same lines read the same
// way (the baseline of the ingest issue). Each runs --rounds times, one
// after the other in turn, and each row is its round of median CPU time:
// on a shared machine one round of either swings by a fifth.
func validateCPU(ctx context.Context, o benchOptions, dir, file string, progress io.Writer) ([]Result, error) {
	n := int64(o.fileRecords)
	cliRound := func() (Result, error) {
		var stdout, stderr strings.Builder
		cli, err := measure.Timed(RowValidateCLI, n, func() error {
			if code := o.run(ctx, []string{"validate", "--workers", "1", "--contract", dir + "/shop_orders_v1.yaml", "-o", "json", file}, &stdout, &stderr); code != exit.OK {
				return fmt.Errorf("seam validate exited %d: %s", code, stderr.String())
			}
			return nil
		})
		if err != nil {
			return cli, err
		}
		var rep struct {
			Passed int64 `json:"passed"`
		}
		if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || rep.Passed != n {
			return cli, fmt.Errorf("seam validate: %d of %d records passed (%v)", rep.Passed, n, err)
		}
		return cli, nil
	}
	baseRound := func() (Result, error) {
		return measure.Timed(RowJSONValid, n, func() error {
			valid, err := JSONValidLines(file)
			if err == nil && valid != n {
				err = fmt.Errorf("%d of %d lines are valid JSON", valid, n)
			}
			return err
		})
	}
	var clis, bases []Result
	for range o.rounds {
		cli, err := cliRound()
		if err != nil {
			return nil, err
		}
		base, err := baseRound()
		if err != nil {
			return nil, err
		}
		clis, bases = append(clis, cli), append(bases, base)
		fmt.Fprintf(progress, "  round %d of %d: seam validate %.2fs CPU, json.Valid %.2fs CPU\n", len(clis), o.rounds, cli.CPUSeconds, base.CPUSeconds)
	}
	return []Result{measure.Pick(clis, measure.ByCPU), measure.Pick(bases, measure.ByCPU)}, nil
}

// JSONValidLines is the validation floor: it reads an NDJSON file as
// seam validate does (buffered, cut at line feeds) and runs Go's
// json.Valid on each non-empty line, returning how many are valid JSON.
func JSONValidLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var valid int64
	for sc.Scan() {
		if line := sc.Bytes(); len(line) > 0 && json.Valid(line) {
			valid++
		}
	}
	return valid, sc.Err()
}

// ingestCLI times `seam gate ingest` of the file, into a partition of its
// own, against the benchmark instance.
func ingestCLI(ctx context.Context, o benchOptions, addr, token, file string) (Result, error) {
	n := int64(o.fileRecords)
	var stdout, stderr strings.Builder
	r, err := measure.Timed(fmt.Sprintf(RowIngestCLI, n), n, func() error {
		if code := o.run(ctx, []string{"gate", "ingest", "shop.orders", file, "--partition", "bench-file", "--addr", addr, "--token", token, "-o", "json"}, &stdout, &stderr); code != exit.OK {
			return fmt.Errorf("seam gate ingest exited %d: %s", code, stderr.String())
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	var resp struct {
		Summary struct {
			Accepted json.Number `json:"accepted"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &resp); err != nil || resp.Summary.Accepted.String() != fmt.Sprint(n) {
		return r, fmt.Errorf("seam gate ingest: %s of %d records accepted (%v)", resp.Summary.Accepted, n, err)
	}
	return r, nil
}

// streamChunks is how many chunks the stream row sends a stream.
const streamChunks = 20

// ingestStream sends chunks (of perChunk records each) to partition in
// one summary-only stream and checks that every record was accepted.
func ingestStream(ctx context.Context, gc gatev1.GateServiceClient, partition string, chunks [][]byte, perChunk int) error {
	st, err := gc.IngestStream(ctx)
	if err != nil {
		return err
	}
	err = st.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Header{Header: &gatev1.IngestHeader{
		Subject: "shop.orders", Partition: partition, BatchId: partition, Format: recordv1.Format_FORMAT_NDJSON, SummaryOnly: true}}})
	for j := 0; err == nil && j < len(chunks); j++ {
		err = st.Send(&gatev1.IngestStreamRequest{Message: &gatev1.IngestStreamRequest_Chunk{Chunk: &gatev1.IngestChunk{
			Sequence: int64(j + 1), Data: chunks[j], FirstOffset: int64(j * perChunk)}}})
	}
	// io.EOF from Send: the gate ended the stream; its status comes with
	// the answer.
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return err
	}
	if want := int64(len(chunks) * perChunk); resp.GetSummary().GetAccepted() != want || resp.GetChunks() != int64(len(chunks)) {
		return fmt.Errorf("ingest stream: %d of %d records accepted in %d of %d chunks", resp.GetSummary().GetAccepted(), want, resp.GetChunks(), len(chunks))
	}
	return nil
}

// ratios relates the rows to each other as the ingest issue states its
// targets; rows whose reference did not run get none.
func ratios(rows []Result) {
	byName := map[string]*Result{}
	for i := range rows {
		byName[rows[i].Name] = &rows[i]
	}
	set := func(r *Result, of string, target float64, cpu bool) {
		ref := byName[of]
		if ref == nil {
			return
		}
		switch {
		case cpu && ref.CPUSeconds > 0:
			r.Ratio = r.CPUSeconds / ref.CPUSeconds
			r.Note = fmt.Sprintf("%.2fs CPU, %.2fx of %s (target <= %.1fx)", r.CPUSeconds, r.Ratio, of, target)
		case !cpu && ref.RecordsPerSec > 0:
			r.Ratio = r.RecordsPerSec / ref.RecordsPerSec
			r.Note = fmt.Sprintf("%.0f%% of %s (target >= %.0f%%)", 100*r.Ratio, of, 100*target)
		default:
			return
		}
		r.RatioOf, r.Target = of, target
	}
	// ofChain is r's share of the chain, for the streaming rows, which
	// have no target of their own (the targets are the unary call's).
	ofChain := func(r *Result) string {
		if chain := byName[RowChain]; chain != nil && chain.RecordsPerSec > 0 {
			return fmt.Sprintf("%.0f%% of %s", 100*r.RecordsPerSec/chain.RecordsPerSec, RowChain)
		}
		return ""
	}
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Name == RowValidateCLI:
			set(r, RowJSONValid, 1.4, true)
		case r.Name == RowJSONValid:
			r.Note = fmt.Sprintf("%.2fs CPU", r.CPUSeconds)
		case r.Name == RowNoop:
			if sum := byName[RowIngestSummary]; sum != nil && r.RecordsPerSec > 0 {
				r.Note = fmt.Sprintf("gRPC alone; %s runs at %.0f%% of it", RowIngestSummary, 100*sum.RecordsPerSec/r.RecordsPerSec)
			}
		case r.Name == RowIngestSummary:
			set(r, RowChain, 0.5, false)
		case r.Name == RowIngestRecords:
			set(r, RowChain, 0.35, false)
		case r.Name == RowIngestStream:
			r.Note = ofChain(r)
		case strings.HasPrefix(r.Name, "ingest summary-only (gRPC, ") && r.Name != RowIngestSummary:
			set(r, RowIngestSummary, 1.6, false)
			if r.RatioOf != "" {
				r.Note = fmt.Sprintf("%.2fx of %s (target >= %.1fx with two)", r.Ratio, RowIngestSummary, r.Target)
			}
		case strings.HasPrefix(r.Name, "seam gate ingest ("):
			// The command reads, cuts and sends a file that the gate
			// decodes, checks, adapts and commits: the whole path, held
			// against the chain that is its work without the path. It is
			// one caller, so the unary call's row is its other reference.
			set(r, RowChain, 0.65, false)
			if sum := byName[RowIngestSummary]; sum != nil && sum.RecordsPerSec > 0 && r.RatioOf != "" {
				r.Note += fmt.Sprintf("; %.0f%% of %s", 100*r.RecordsPerSec/sum.RecordsPerSec, RowIngestSummary)
			}
		}
	}
}

// benchUUID is the uuid of customer i in the benchmark table.
func benchUUID(i int) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
}

// importOnce imports pairs, which must all be new, as one ImportPairs call.
func importOnce(ctx context.Context, ic idmapv1.IdMapServiceClient, pairs []*idmapv1.Pair) error {
	stream, err := ic.ImportPairs(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: &idmapv1.ImportHeader{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int"}}}); err != nil {
		return err
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: &idmapv1.PairChunk{Pairs: pairs}}}); err != nil {
		return err
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return err
	}
	if !resp.GetCommitted() || resp.GetInserted() != int64(len(pairs)) {
		return fmt.Errorf("import of %d new pairs: committed %v, inserted %d, %d conflicts", len(pairs), resp.GetCommitted(), resp.GetInserted(), len(resp.GetConflicts()))
	}
	return nil
}

// indexBytes builds idmap's index of n uuid↔int pairs, as the service does
// from its store, and reports the memory it keeps a pair: the Go heap it
// grew by plus the arrays mapped outside it.
func indexBytes(n int) (Result, error) {
	name := fmt.Sprintf(RowIdmapBytes, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	b, err := idtable.NewBuilder(idtable.UUID, idtable.Int, n)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	for i := range n {
		if err := b.Add(benchUUID(i), strconv.Itoa(1+i)); err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	tab := b.Build()
	elapsed := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perPair := (float64(after.HeapAlloc) - float64(before.HeapAlloc) + float64(tab.MappedBytes())) / float64(n)
	runtime.KeepAlive(tab)
	return Result{Name: name, Records: int64(n), Seconds: elapsed.Seconds(), RecordsPerSec: float64(n) / elapsed.Seconds(),
		NsPerRecord: float64(elapsed.Nanoseconds()) / float64(n), BytesPerRecord: perPair,
		Note: fmt.Sprintf("%.1f bytes a pair (target <= 48); records/s is the build", perPair)}, nil
}

// benchSetup registers the reference contracts and loads the customer table.
func benchSetup(ctx context.Context, conn *grpc.ClientConn, o benchOptions, progress io.Writer) error {
	rc := registryv1.NewRegistryServiceClient(conn)
	if _, err := rc.RegisterCanonicalModel(ctx, &registryv1.RegisterCanonicalModelRequest{Model: examples.CommerceOrder()}); err != nil {
		return fmt.Errorf("register commerce.order: %w", err)
	}
	ic := idmapv1.NewIdMapServiceClient(conn)
	if _, err := ic.CreateNamespace(ctx, &idmapv1.CreateNamespaceRequest{Namespace: &idmapv1.Namespace{Name: "customer", Formats: []*idmapv1.Format{
		{Name: "legacy-int", Kind: idmapv1.FormatKind_FORMAT_KIND_INT}, {Name: "uuid", Kind: idmapv1.FormatKind_FORMAT_KIND_UUID},
	}}}); err != nil {
		return fmt.Errorf("create namespace customer: %w", err)
	}
	// The registry refuses a contract naming a namespace idmap lacks.
	if _, err := rc.RegisterContract(ctx, &registryv1.RegisterContractRequest{Contract: examples.ShopOrdersV1()}); err != nil {
		return fmt.Errorf("register shop.orders v1: %w", err)
	}
	// The ingest rows need the table too: their orders' customers
	// (legacy-int 100000..149999) are in it, so the match rate check
	// looks up ids that exist, as on a real feed, instead of finding
	// none and raising an alert per partition.
	// The idmap rows import into it: what one more pair costs is measured
	// against a table of --table-size pairs, not an empty one.
	if !o.wants("translate") && !o.wants("ingest") && !o.wants("ingest-cli") && !o.wants("idmap") {
		return nil
	}
	fmt.Fprintf(progress, "  loading a %d-pair lookup table…\n", o.tableSize)
	stream, err := ic.ImportPairs(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Header{Header: &idmapv1.ImportHeader{Namespace: "customer", FromFormat: "uuid", ToFormat: "legacy-int"}}}); err != nil {
		return err
	}
	for start := 0; start < o.tableSize; start += idmapcmd.PairsPerMessage {
		chunk := &idmapv1.PairChunk{}
		for i := start; i < min(start+idmapcmd.PairsPerMessage, o.tableSize); i++ {
			chunk.Pairs = append(chunk.Pairs, &idmapv1.Pair{From: benchUUID(i), To: fmt.Sprint(1 + i)})
		}
		if err := stream.Send(&idmapv1.ImportPairsRequest{Message: &idmapv1.ImportPairsRequest_Chunk{Chunk: chunk}}); err != nil {
			return err
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("load the lookup table: %w", err)
	}
	if !resp.GetCommitted() {
		return fmt.Errorf("load the lookup table: not committed (%d conflicts)", len(resp.GetConflicts()))
	}
	return nil
}

// noopServer is a gRPC server in this process whose gate answers every
// batch without looking at it: the floor the ingest rows are carried on.
type noopServer struct {
	*grpc.Server
	addr string
}

type noopGate struct {
	gatev1.UnimplementedGateServiceServer
}

func (noopGate) Ingest(_ context.Context, req *gatev1.IngestRequest) (*gatev1.IngestResponse, error) {
	return &gatev1.IngestResponse{Summary: &gatev1.BatchSummary{Received: int64(len(req.GetBatch().GetRaw().GetData())), Status: gatev1.BatchStatus_BATCH_STATUS_ACCEPTED}}, nil
}

func startNoop() (*noopServer, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the no-op service: %w", err)
	}
	srv := grpc.NewServer()
	gatev1.RegisterGateServiceServer(srv, noopGate{})
	go func() { _ = srv.Serve(lis) }() // it returns when the run stops it
	return &noopServer{Server: srv, addr: lis.Addr().String()}, nil
}
