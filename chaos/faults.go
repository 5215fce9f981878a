package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// services is the order the kill loop takes the services in.
var services = []string{"gate", "registry", "adapter", "idmap"}

// recovery is how long after a fault ended ingest worked again.
type recovery struct {
	service string
	fault   string
	took    time.Duration
}

// probes number the probe batches across the run.
var probes atomic.Int64

// probe sends one fresh batch, retrying every 50 ms, and returns when it
// was acknowledged: the moment ingest works again.
func probe(ctx context.Context, l *ledger, gate gatev1.GateServiceClient, attempt time.Duration) (time.Time, bool) {
	b := makeBatch("probe", int(probes.Add(1)), 20)
	return l.deliver(ctx, gate, b, attempt, 50*time.Millisecond, 2*time.Minute)
}

// killLoop kills the services in turn with SIGKILL under load, restarts
// each at once, and measures how soon after it serves again a batch is
// acknowledged.
func killLoop(ctx context.Context, c *cluster, l *ledger, gate gatev1.GateServiceClient, kills int, attempt time.Duration) ([]recovery, error) {
	var out []recovery
	for i := range kills {
		p := c.procs[services[i%len(services)]]
		time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond) // under load
		if err := p.kill9(); err != nil {
			return out, err
		}
		if err := c.start(ctx, p); err != nil {
			return out, fmt.Errorf("restart after kill %d: %w", i+1, err)
		}
		back := time.Now()
		acked, ok := probe(ctx, l, gate, attempt)
		if !ok {
			return out, fmt.Errorf("no batch was acknowledged within 2 minutes of %s serving again after kill %d", p.name, i+1)
		}
		out = append(out, recovery{service: p.name, fault: "kill -9", took: acked.Sub(back)})
	}
	return out, nil
}

// outage keeps a peer down for d while the load keeps trying, then brings
// it back and measures how soon ingest works again: gRPC's own reconnect
// backoff once left ingest Unavailable for 20 s after a 90 s outage.
func outage(ctx context.Context, c *cluster, l *ledger, gate gatev1.GateServiceClient, service string, d, attempt time.Duration) (recovery, error) {
	p := c.procs[service]
	if err := p.kill9(); err != nil {
		return recovery{}, err
	}
	time.Sleep(d)
	if err := c.start(ctx, p); err != nil {
		return recovery{}, err
	}
	back := time.Now()
	acked, ok := probe(ctx, l, gate, attempt)
	if !ok {
		return recovery{}, fmt.Errorf("no batch acknowledged within 2 minutes of %s's return", service)
	}
	return recovery{service: service, fault: fmt.Sprintf("down %s", d), took: acked.Sub(back)}, nil
}

// hangResult is one hung-peer run.
type hangResult struct {
	service  string
	code     codes.Code
	message  string
	took     time.Duration
	deadline time.Duration
	recovery time.Duration
	pass     bool
	want     string
}

// hang stops a peer of the gate with SIGSTOP (the process is there, its
// sockets accept, nothing answers), sends a batch and times the answer,
// then resumes the peer with SIGCONT and times the recovery. A hung adapter
// or idmap must be answered Unavailable naming it within the peer deadline;
// a hung registry may also be bridged by the last known contract.
func hang(ctx context.Context, c *cluster, l *ledger, gate gatev1.GateServiceClient, service string, n int) (hangResult, error) {
	p := c.procs[service]
	r := hangResult{service: service, deadline: c.peerTimeout}
	// The gate answers within one peer deadline, plus the time its calls
	// before the hung one took.
	limit := c.peerTimeout + 2*time.Second
	if err := p.freeze(); err != nil {
		return r, err
	}
	b := makeBatch("hang", n, 20)
	cctx, cancel := context.WithTimeout(ctx, 3*c.peerTimeout+10*time.Second)
	start := time.Now()
	resp, err := gate.Ingest(cctx, b.request())
	r.took = time.Since(start)
	cancel()
	l.answer(err)
	st := status.Convert(err)
	r.code, r.message = st.Code(), st.Message()
	switch service {
	case "registry":
		r.want = fmt.Sprintf("OK (the last known contract) or Unavailable naming the registry, within %s", limit)
		r.pass = r.took <= limit && (err == nil || (r.code == codes.Unavailable && strings.HasPrefix(r.message, "registry")))
	default:
		r.want = fmt.Sprintf("Unavailable naming %s, within %s", service, limit)
		r.pass = r.took <= limit && r.code == codes.Unavailable && strings.HasPrefix(r.message, service+" is unavailable")
	}
	if err == nil {
		l.lastAck.Store(time.Now().UnixNano())
		l.check(b, resp.GetSummary())
	}
	if err := p.signal(syscall.SIGCONT); err != nil {
		return r, err
	}
	back := time.Now()
	if err != nil {
		// The batch was not taken: deliver it now, as the pipeline would.
		if _, ok := l.deliver(ctx, gate, b, 2*c.peerTimeout+5*time.Second, 50*time.Millisecond, 2*time.Minute); !ok {
			return r, fmt.Errorf("the batch refused while %s hung was not acknowledged after SIGCONT", service)
		}
	} else if _, ok := probe(ctx, l, gate, 2*c.peerTimeout+5*time.Second); !ok {
		return r, fmt.Errorf("no batch acknowledged after %s's SIGCONT", service)
	}
	r.recovery = time.Since(back)
	return r, nil
}

// percentile returns the p-th percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}
