// Package bench holds `seam bench`: the standard benchmarks against an
// in-process Seam.
package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	idmapcmd "github.com/seamdata/seam/cmd/seam/internal/command/idmap"

	"github.com/spf13/cobra"
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
	"github.com/seamdata/seam/platform/dial"
	adapterv1 "github.com/seamdata/seam/proto/seam/adapter/v1"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Result is one row of `seam bench`, also its JSON form.
type Result struct {
	Name           string  `json:"name"`
	Records        int64   `json:"records"`
	Seconds        float64 `json:"seconds"`
	RecordsPerSec  float64 `json:"records_per_second"`
	NsPerRecord    float64 `json:"ns_per_record"`
	AllocsPerRec   float64 `json:"allocs_per_record"`
	BytesPerRecord float64 `json:"bytes_per_record"`
	Note           string  `json:"note,omitempty"`
}

type benchOptions struct {
	duration    time.Duration
	tableSize   int
	concurrency int
	batch       int
	only        []string
}

// New returns `seam bench`.
func New(g *client.Globals) *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the standard benchmarks against an in-process Seam and print records/s",
		Long: `Measure what a deployment can sustain on this machine: structural
validation and adaptation of the 12-field shop.orders record in-process on
one core, identifier translation over gRPC on a lookup table of
--table-size pairs, adaptation over gRPC, and end-to-end ingest over gRPC
(gate, adapter and idmap in one process on loopback, 1,000-record batches).
Allocations are per record for the whole process.`,
		Example: `  seam bench
  seam bench --duration 5s --table-size 10000000 -o json
  seam bench --only validate,adapt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.ValidateOutput(); err != nil {
				return err
			}
			if o.duration <= 0 || o.batch < 1 || o.tableSize < o.batch {
				return exit.Usagef("--duration must be positive, --batch at least 1 and --table-size at least --batch")
			}
			if o.concurrency <= 0 {
				o.concurrency = runtime.GOMAXPROCS(0)
			}
			results, err := runBench(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if g.JSON() {
				return output.Value(cmd.OutOrStdout(), results)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "seam bench on %d cores (%s, %s/%s), %s per benchmark\n\n", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, o.duration)
			t := output.NewTable(w, "BENCHMARK", "RECORDS/S", "NS/RECORD", "ALLOCS/RECORD", "BYTES/RECORD", "NOTE")
			for _, r := range results {
				t.Row(r.Name, fmt.Sprintf("%.0f", r.RecordsPerSec), fmt.Sprintf("%.0f", r.NsPerRecord), fmt.Sprintf("%.2f", r.AllocsPerRec), fmt.Sprintf("%.0f", r.BytesPerRecord), r.Note)
			}
			return t.Flush()
		},
	}
	cmd.Flags().DurationVar(&o.duration, "duration", 3*time.Second, "how long to run each benchmark")
	cmd.Flags().IntVar(&o.tableSize, "table-size", 1_000_000, "pairs in the lookup table the translate benchmark reads")
	cmd.Flags().IntVar(&o.concurrency, "concurrency", 0, "parallel gRPC callers (default: one per core)")
	cmd.Flags().IntVar(&o.batch, "batch", 1000, "records per batch (translate uses 10x as many ids)")
	cmd.Flags().StringSliceVar(&o.only, "only", nil, "run only these: validate, adapt, translate, adapt-grpc, ingest")
	g.AddOutputFlag(cmd.Flags())
	return cmd
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

// measure runs op (which handles perOp records) from workers goroutines
// until d has passed, and reports throughput and allocations.
func measure(name string, d time.Duration, workers int, perOp int64, op func() error) (Result, error) {
	// Warm up once, so lazily built state is not counted.
	if err := op(); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := op(); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if firstErr != nil {
		return Result{}, fmt.Errorf("%s: %w", name, firstErr)
	}
	n := ops.Load() * perOp
	r := Result{Name: name, Records: n, Seconds: elapsed.Seconds()}
	if n > 0 {
		r.RecordsPerSec = float64(n) / elapsed.Seconds()
		r.NsPerRecord = float64(elapsed.Nanoseconds()) * float64(workers) / float64(n)
		r.AllocsPerRec = float64(after.Mallocs-before.Mallocs) / float64(n)
		r.BytesPerRecord = float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	}
	return r, nil
}

func runBench(ctx context.Context, o benchOptions, progress io.Writer) ([]Result, error) {
	v1 := examples.ShopOrdersV1()
	data := recordtest.OrdersNDJSON(o.batch)
	var out []Result
	add := func(r Result, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(progress, "  %-28s %12.0f records/s\n", r.Name, r.RecordsPerSec)
		out = append(out, r)
		return nil
	}

	if o.wants("validate") {
		plan, err := check.Compile(v1)
		if err != nil {
			return nil, err
		}
		dec := record.NewDecoder(plan.Schema(), record.Options{})
		err = add(measure("validate (in-process, 1 core)", o.duration, 1, int64(o.batch), func() error {
			defer dec.Recycle()
			b, err := dec.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
			if err != nil {
				return err
			}
			if res := plan.Validate(b.Records); res.Blocked {
				return fmt.Errorf("benchmark batch blocked: %v", plan.BlockReasons(res))
			}
			return nil
		}))
		if err != nil {
			return nil, err
		}
	}
	if o.wants("adapt") {
		plan, err := mapping.CompileVersion(v1, examples.CommerceOrder(), 1, nil)
		if err != nil {
			return nil, err
		}
		dec := record.NewDecoder(plan.Schema(), record.Options{})
		buf := make([]byte, 0, 400*o.batch)
		err = add(measure("adapt (in-process, 1 core)", o.duration, 1, int64(o.batch), func() error {
			b, err := dec.Decode(recordv1.Format_FORMAT_NDJSON, data, 0)
			if err != nil {
				return err
			}
			// Buffers are reused batch after batch, as the adapter does.
			mapped := plan.Map(b.Records)
			defer dec.Recycle()
			defer mapped.Release()
			res, err := mapped.Results()
			if err != nil {
				return err
			}
			buf = buf[:0]
			for i := range res {
				if len(res[i].Errors) > 0 {
					return fmt.Errorf("record %d failed: %v", i, res[i].Errors)
				}
				buf = plan.AppendJSON(buf, res[i].Values)
			}
			return nil
		}))
		if err != nil {
			return nil, err
		}
	}
	if !o.wants("translate") && !o.wants("adapt-grpc") && !o.wants("ingest") {
		return out, nil
	}

	// The gRPC benchmarks run against a whole Seam in this process.
	dir, err := os.MkdirTemp("", "seam-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	nctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- node.Run(nctx, node.Config{Services: node.ServiceNames, Bootstrap: true, DataDir: dir, GRPCAddr: "127.0.0.1:0", LogFormat: "text", LogLevel: "error"},
			node.Hooks{Log: io.Discard, Ready: func(g, _ string) { ready <- g }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		return nil, fmt.Errorf("start the benchmark instance: %w", err)
	}
	defer func() { cancel(); <-done }()
	token, err := os.ReadFile(dir + "/admin.token")
	if err != nil {
		return nil, err
	}
	conn, err := dial.Conn(addr, dial.Options{Token: strings.TrimSpace(string(token))})
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
		err := add(measure(fmt.Sprintf("translate (gRPC, %dk-id batches)", n/1000), o.duration, o.concurrency, int64(n), func() error {
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
	if o.wants("adapt-grpc") {
		ac := adapterv1.NewAdapterServiceClient(conn)
		err := add(measure("adapt (gRPC)", o.duration, o.concurrency, int64(o.batch), func() error {
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
		err := add(measure("ingest (gRPC, gate+adapter+idmap)", o.duration, o.concurrency, int64(o.batch), func() error {
			k := seq.Add(1)
			resp, err := gc.Ingest(ctx, &gatev1.IngestRequest{
				// A partition per batch: the same records twice in one
				// partition would be duplicates.
				Subject: "shop.orders", Partition: fmt.Sprintf("bench-%d", k), Identity: &gatev1.IngestRequest_BatchId{BatchId: fmt.Sprintf("bench-%d", k)},
				Batch:       &recordv1.RecordBatch{Body: &recordv1.RecordBatch_Raw{Raw: &recordv1.RawRecords{Format: recordv1.Format_FORMAT_NDJSON, Data: data}}},
				SummaryOnly: true,
			})
			if err != nil {
				return err
			}
			if resp.GetSummary().GetAccepted() != int64(o.batch) {
				return fmt.Errorf("ingest: %d of %d records accepted", resp.GetSummary().GetAccepted(), o.batch)
			}
			return nil
		}))
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// benchUUID is the uuid of customer i in the benchmark table.
func benchUUID(i int) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
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
	if !o.wants("translate") {
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
