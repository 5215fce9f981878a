package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seamdata/seam/platform/dial"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

func main() { os.Exit(run(os.Args[1:])) }

// options are the suite's flags; -short sets the CI form's defaults.
type options struct {
	short        bool
	bin          string
	store        string
	kills        int
	outage       time.Duration
	peerTimeout  time.Duration
	readTimeout  time.Duration
	workers      int
	batchSize    int
	report       string
	keep         bool
	corpusOnly   bool
	commandShown string
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.BoolVar(&o.short, "short", false, "the short form CI runs: fewer kills, a short outage, a 2 s peer deadline")
	fs.StringVar(&o.bin, "seam", "", "seam binary to test (default: build ./cmd/seam)")
	fs.StringVar(&o.store, "store", "", "postgres://… to run the services on PostgreSQL (default: SQLite files)")
	fs.IntVar(&o.kills, "kills", 0, "SIGKILLs in the kill loop, spread over the four services (default 120, -short 8)")
	fs.DurationVar(&o.outage, "outage", 0, "how long a peer stays down in the outage run (default 90s, -short 5s)")
	fs.DurationVar(&o.peerTimeout, "peer-timeout", 0, "the services' --peer-timeout (default 30s, -short 2s)")
	// Long enough for the node to read 64 MiB on a busy machine (the 80 MB
	// body must be refused for its size, not its time), short enough that
	// the trickling body does not take the server's minute.
	fs.DurationVar(&o.readTimeout, "http-read-timeout", 20*time.Second, "the corpus node's --http-read-timeout")
	fs.IntVar(&o.workers, "workers", 0, "load workers (default 4, -short 2)")
	fs.IntVar(&o.batchSize, "batch", 50, "records per load batch")
	fs.StringVar(&o.report, "report", "", "also write the report (Markdown) to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (stores, logs)")
	fs.BoolVar(&o.corpusOnly, "corpus-only", false, "run only the bad-input corpus and the REST sweep on one seam up node (no kills, outage or hung peers)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	def := func(v *int, long, short int) {
		if *v == 0 {
			*v = long
			if o.short {
				*v = short
			}
		}
	}
	defd := func(v *time.Duration, long, short time.Duration) {
		if *v == 0 {
			*v = long
			if o.short {
				*v = short
			}
		}
	}
	def(&o.kills, 120, 8)
	def(&o.workers, 4, 2)
	defd(&o.outage, 90*time.Second, 5*time.Second)
	defd(&o.peerTimeout, 30*time.Second, 2*time.Second)
	// The command as a reader reruns it: without where the report went.
	shown := []string{"go", "run", "./chaos"}
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "report" && f.Name != "keep" {
			shown = append(shown, "-"+f.Name+"="+f.Value.String())
		}
	})
	o.commandShown = strings.Join(shown, " ")
	return o, nil
}

func run(args []string) int {
	o, err := parse(args)
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "seam-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	if o.keep {
		fmt.Println("keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep, err := suite(ctx, o, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		if rep != nil {
			fmt.Print(rep.markdown())
		}
		return 1
	}
	text := rep.markdown()
	fmt.Print(text)
	if o.report != "" {
		if err := os.WriteFile(o.report, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
	}
	if !rep.passed() {
		fmt.Println("chaos: FAILED (see above)")
		return 1
	}
	fmt.Println("chaos: passed")
	return 0
}

// build compiles the seam binary of this workspace.
func build(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == "off" {
		return "", fmt.Errorf("find the workspace (go env GOWORK): %v; run from the repository", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "seam")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/seam")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/seam: %w\n%s", err, b)
	}
	return bin, nil
}

func suite(ctx context.Context, o options, dir string) (*report, error) {
	rep := &report{opts: o, started: time.Now()}
	if o.bin == "" {
		fmt.Println("building seam…")
		bin, err := build(dir)
		if err != nil {
			return nil, err
		}
		o.bin = bin
	}
	store := o.store
	if store != "" {
		url, drop, err := freshDatabase(ctx, store)
		if err != nil {
			return nil, err
		}
		defer drop()
		store = url
	}
	c, err := newCluster(o.bin, filepath.Join(dir, "cluster"), store, o.peerTimeout, o.readTimeout)
	if err != nil {
		return nil, err
	}
	defer c.stopAll()
	if o.corpusOnly {
		rep.corpus, err = runCorpus(ctx, c, dir, o.short)
		rep.took = time.Since(rep.started)
		return rep, err
	}
	// Each process starts after the peers it calls (the registry calls
	// idmap to check a contract's lookups).
	idm, _ := c.add("idmap", "idmap", nil)
	reg, _ := c.add("registry", "registry", map[string]string{"idmap": idm.grpcAddr})
	adp, _ := c.add("adapter", "adapter", map[string]string{"registry": reg.grpcAddr, "idmap": idm.grpcAddr})
	gate, _ := c.add("gate", "gate", map[string]string{"registry": reg.grpcAddr, "idmap": idm.grpcAddr, "adapter": adp.grpcAddr})
	for _, p := range []*proc{idm, reg, adp, gate} {
		if err := c.start(ctx, p); err != nil {
			return nil, err
		}
	}
	if err := c.setupSource(ctx, reg, idm); err != nil {
		return nil, err
	}
	// The pipeline bounds each attempt itself, as pipelines do.
	gateConn, err := dial.Conn(gate.grpcAddr, dial.Options{Token: c.tokens["pipeline"], CallTimeout: dial.NoCallTimeout})
	if err != nil {
		return nil, err
	}
	defer gateConn.Close()
	pipeline := gatev1.NewGateServiceClient(gateConn)
	attempt := 2*o.peerTimeout + 5*time.Second
	l := newLedger()
	rep.ledger = l

	fmt.Printf("kill loop: %d × kill -9 over %s under load of %d workers\n", o.kills, strings.Join(services, ", "), o.workers)
	stopLoad := make(chan struct{})
	workers := l.load(ctx, pipeline, o.workers, o.batchSize, stopLoad, attempt)
	start := time.Now()
	rep.kills, err = killLoop(ctx, c, l, pipeline, o.kills, attempt)
	rep.killTime = time.Since(start)
	if err != nil {
		close(stopLoad)
		workers.Wait()
		return rep, err
	}
	fmt.Printf("outage: the adapter down for %s under load\n", o.outage)
	r, err := outage(ctx, c, l, pipeline, "adapter", o.outage, attempt)
	if err != nil {
		close(stopLoad)
		workers.Wait()
		return rep, err
	}
	rep.outage = &r
	close(stopLoad)
	workers.Wait()

	fmt.Printf("hung peers (SIGSTOP), peer deadline %s\n", o.peerTimeout)
	for i, svc := range []string{"adapter", "idmap", "registry"} {
		h, err := hang(ctx, c, l, pipeline, svc, i+1)
		if err != nil {
			return rep, err
		}
		rep.hangs = append(rep.hangs, h)
	}

	rec, err := l.reconcile(ctx, pipeline)
	if err != nil {
		return rep, err
	}
	rep.reconciled = &rec

	results, err := runCorpus(ctx, c, dir, o.short)
	rep.corpus = results
	if err != nil {
		return rep, err
	}
	rep.took = time.Since(rep.started)
	return rep, nil
}
