package registry

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/examples"
	"github.com/seamdata/seam/platform/auth"
	"github.com/seamdata/seam/platform/storage/storagetest"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestWatchEventsResumesAfterDisconnect reads part of the stream, drops the
// connection's stream, writes more, and resumes from the last sequence seen:
// nothing is missed and nothing arrives twice.
func TestWatchEventsResumesAfterDisconnect(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		e := newEnv(t, url, newFakeClock())
		e.seed(t) // CANONICAL_MODEL_REGISTERED, VERSION_REGISTERED, VERSION_ACTIVATED
		watcher := e.as("viewer")

		ctx, cancel := context.WithCancel(context.Background())
		stream, err := watcher.WatchEvents(ctx, &registryv1.WatchEventsRequest{})
		if err != nil {
			t.Fatalf("WatchEvents: %v", err)
		}
		var seen []int64
		for len(seen) < 3 {
			resp, err := stream.Recv()
			if err != nil {
				t.Fatalf("Recv after %v: %v", seen, err)
			}
			seen = append(seen, resp.GetEvent().GetSequence())
		}
		// A live event reaches the open stream.
		e.lineage(t)
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv live event: %v", err)
		}
		if got := resp.GetEvent().GetType(); got != registryv1.EventType_EVENT_TYPE_CONSUMER_REGISTERED {
			t.Fatalf("live event type = %s, want CONSUMER_REGISTERED", got)
		}
		seen = append(seen, resp.GetEvent().GetSequence())
		cancel() // disconnect

		// Written while nobody watches.
		if _, err := e.as("gate").PublishEvent(context.Background(), &registryv1.PublishEventRequest{Event: &registryv1.Event{
			Type: registryv1.EventType_EVENT_TYPE_SOURCE_CONTAINED, Subject: "shop.orders", Message: "match rate 2%"}}); err != nil {
			t.Fatalf("PublishEvent: %v", err)
		}
		if _, err := e.as("checkout").RegisterContract(context.Background(), &registryv1.RegisterContractRequest{
			Contract: examples.ShopOrdersV2(), EffectiveTime: ts(start.Add(notice))}); err != nil {
			t.Fatalf("register v2: %v", err)
		}
		all := eventsOf(t, e.as("viewer"))
		last := all[len(all)-1].GetSequence()

		ctx2, cancel2 := context.WithCancel(context.Background())
		defer cancel2()
		resumed, err := watcher.WatchEvents(ctx2, &registryv1.WatchEventsRequest{AfterSequence: seen[len(seen)-1]})
		if err != nil {
			t.Fatalf("WatchEvents resume: %v", err)
		}
		for {
			resp, err := resumed.Recv()
			if err != nil {
				t.Fatalf("Recv after resume (seen %v): %v", seen, err)
			}
			seen = append(seen, resp.GetEvent().GetSequence())
			if resp.GetEvent().GetSequence() == last {
				break
			}
		}
		for i, seq := range seen {
			if seq != int64(i+1) {
				t.Fatalf("sequences received = %v, want 1..%d each once, in order", seen, last)
			}
		}

		// Filters: only shop.orders announcements.
		ctx3, cancel3 := context.WithCancel(context.Background())
		defer cancel3()
		filtered, err := watcher.WatchEvents(ctx3, &registryv1.WatchEventsRequest{
			Subjects: []string{"shop.orders"}, Types: []registryv1.EventType{registryv1.EventType_EVENT_TYPE_CHANGE_ANNOUNCED}})
		if err != nil {
			t.Fatalf("WatchEvents filtered: %v", err)
		}
		got, err := filtered.Recv()
		if err != nil {
			t.Fatalf("Recv filtered: %v", err)
		}
		if got.GetEvent().GetType() != registryv1.EventType_EVENT_TYPE_CHANGE_ANNOUNCED || got.GetEvent().GetVersion() != 2 {
			t.Errorf("first filtered event = %s v%d, want CHANGE_ANNOUNCED v2", got.GetEvent().GetType(), got.GetEvent().GetVersion())
		}
	})
}

// snapshotOf reads everything a client can see, to compare two servers.
type registrySnapshot struct {
	versions  []*registryv1.ContractVersion
	subjects  []*registryv1.Subject
	consumers []*registryv1.Consumer
	models    []*registryv1.CanonicalModelVersion
	events    []*registryv1.Event
	history   []*registryv1.AuditEntry
}

func snapshotOf(t *testing.T, c registryv1.RegistryServiceClient) registrySnapshot {
	t.Helper()
	ctx := context.Background()
	var s registrySnapshot
	vs, err := c.ListContracts(ctx, &registryv1.ListContractsRequest{Subject: "shop.orders"})
	if err != nil {
		t.Fatalf("ListContracts: %v", err)
	}
	subj, err := c.ListSubjects(ctx, &registryv1.ListSubjectsRequest{})
	if err != nil {
		t.Fatalf("ListSubjects: %v", err)
	}
	cs, err := c.ListConsumers(ctx, &registryv1.ListConsumersRequest{})
	if err != nil {
		t.Fatalf("ListConsumers: %v", err)
	}
	ms, err := c.ListCanonicalModels(ctx, &registryv1.ListCanonicalModelsRequest{})
	if err != nil {
		t.Fatalf("ListCanonicalModels: %v", err)
	}
	h, err := c.GetHistory(ctx, &registryv1.GetHistoryRequest{Subject: "shop.orders"})
	if err != nil {
		t.Fatalf("GetHistory: %v", err)
	}
	s.versions, s.subjects, s.consumers, s.models, s.history = vs.GetVersions(), subj.GetSubjects(), cs.GetConsumers(), ms.GetModels(), h.GetEntries()
	s.events = eventsOf(t, c)
	return s
}

func (a registrySnapshot) diff(b registrySnapshot) string {
	for _, part := range []struct {
		name      string
		equal     bool
		got, want any
	}{
		{"versions", protoEqualList(a.versions, b.versions), a.versions, b.versions},
		{"subjects", protoEqualList(a.subjects, b.subjects), a.subjects, b.subjects},
		{"consumers", protoEqualList(a.consumers, b.consumers), a.consumers, b.consumers},
		{"models", protoEqualList(a.models, b.models), a.models, b.models},
		{"events", protoEqualList(a.events, b.events), a.events, b.events},
		{"history", protoEqualList(a.history, b.history), a.history, b.history},
	} {
		if !part.equal {
			return fmt.Sprintf("%s:\n got %v\nwant %v", part.name, part.got, part.want)
		}
	}
	return ""
}

// TestRestartLosesNothing closes a registry and opens a new one on the same
// store: every version, status, consumer, event and audit entry is back.
func TestRestartLosesNothing(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		clock := newFakeClock()
		e := newEnv(t, url, clock)
		e.seed(t)
		e.lineage(t)
		if _, err := e.as("checkout").RegisterContract(context.Background(), &registryv1.RegisterContractRequest{
			Contract: examples.ShopOrdersV2(), EffectiveTime: ts(start.Add(notice))}); err != nil {
			t.Fatalf("register v2: %v", err)
		}
		if _, err := e.as("checkout").SetVersionStatus(context.Background(), &registryv1.SetVersionStatusRequest{
			Subject: "shop.orders", Version: 1, Status: registryv1.VersionStatus_VERSION_STATUS_DEPRECATED, Reason: "v2 is scheduled"}); err != nil {
			t.Fatalf("deprecate v1: %v", err)
		}
		before := snapshotOf(t, e.as("viewer"))
		if err := e.srv.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		again := newEnv(t, url, clock)
		after := snapshotOf(t, again.as("viewer"))
		if d := after.diff(before); d != "" {
			t.Errorf("after restart, %s", d)
		}
		if len(before.events) < 8 || before.versions[0].GetStatus() != registryv1.VersionStatus_VERSION_STATUS_DEPRECATED {
			t.Errorf("the scenario wrote %d events and v1 is %s; want at least 8 and DEPRECATED", len(before.events), before.versions[0].GetStatus())
		}
	})
}

// TestReplicasAgreeAndActivateOnce runs two registries on one store: each
// sees the other's writes through the change log, and when both try to
// activate a due version exactly one succeeds and one event is written.
func TestReplicasAgreeAndActivateOnce(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		clock := newFakeClock()
		a := newEnv(t, url, clock)
		b := newEnv(t, url, clock)
		a.run(t)
		b.run(t)
		a.seed(t)
		b.lineage(t)
		effective := start.Add(notice)
		if _, err := a.as("checkout").RegisterContract(context.Background(), &registryv1.RegisterContractRequest{
			Contract: examples.ShopOrdersV2(), EffectiveTime: ts(effective)}); err != nil {
			t.Fatalf("register v2 on a: %v", err)
		}
		var last string
		if err := eventually(func() bool {
			last = snapshotOf(t, b.as("viewer")).diff(snapshotOf(t, a.as("viewer")))
			return last == ""
		}); err != nil {
			t.Fatalf("replica b never caught up with a: %s", last)
		}

		// Both replicas race to activate v2; the Run loops race too.
		clock.Set(effective)
		var wg sync.WaitGroup
		counts := make([]int, 8)
		for i := range counts {
			srv := a.srv
			if i%2 == 1 {
				srv = b.srv
			}
			wg.Go(func() {
				n, err := srv.activateDue(context.Background())
				if err != nil {
					t.Errorf("activateDue: %v", err)
				}
				counts[i] = n
			})
		}
		wg.Wait()
		if err := eventually(func() bool {
			return len(eventsOf(t, a.as("viewer"), registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED)) >= 2 &&
				snapshotOf(t, b.as("viewer")).diff(snapshotOf(t, a.as("viewer"))) == ""
		}); err != nil {
			t.Fatalf("v2 was not activated on both replicas: %v", err)
		}
		activated := eventsOf(t, b.as("viewer"), registryv1.EventType_EVENT_TYPE_VERSION_ACTIVATED)
		var v2 int
		for _, ev := range activated {
			if ev.GetVersion() == 2 {
				v2++
			}
		}
		if v2 != 1 {
			t.Errorf("VERSION_ACTIVATED events for v2 = %d (activateDue counts %v), want exactly 1", v2, counts)
		}
		for name, env := range map[string]*env{"a": a, "b": b} {
			resp, err := env.as("gate").GetContract(context.Background(), &registryv1.GetContractRequest{Subject: "shop.orders"})
			if err != nil || resp.GetVersion().GetVersion() != 2 {
				t.Errorf("replica %s active version = v%d (%v), want v2", name, resp.GetVersion().GetVersion(), err)
			}
		}
	})
}

// crashChildEnv names the variable that turns the test binary into the
// child process TestAcknowledgedWritesSurviveKill9 kills.
const crashChildEnv = "SEAM_REGISTRY_CRASH_CHILD_URL"

// TestMain lets the test binary double as the crash test's child.
func TestMain(m *testing.M) {
	if url := os.Getenv(crashChildEnv); url != "" {
		os.Exit(crashChild(url))
	}
	goleak.VerifyTestMain(m)
}

// crashChild registers additive versions of shop.orders as fast as it can,
// printing "ACK <version>" after each acknowledged registration, until it
// is killed.
func crashChild(url string) int {
	ctx := context.Background()
	srv, err := New(ctx, Config{StoreURL: url})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: New:", err)
		return 1
	}
	admin := auth.WithPrincipal(ctx, &auth.Principal{Name: "admin", Roles: []auth.Role{auth.RoleAdmin}})
	model := examples.CommerceOrder()
	if _, err := srv.RegisterCanonicalModel(admin, &registryv1.RegisterCanonicalModelRequest{Model: model}); err != nil {
		fmt.Fprintln(os.Stderr, "child: RegisterCanonicalModel:", err)
		return 1
	}
	c := examples.ShopOrdersV1()
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		next := proto.Clone(c).(*contractv1.Contract)
		next.Fields = append(next.Fields, &contractv1.Field{Name: fmt.Sprintf("extra_%d", i), Type: contractv1.FieldType_FIELD_TYPE_STRING})
		resp, err := srv.RegisterContract(admin, &registryv1.RegisterContractRequest{Contract: next})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child: RegisterContract:", err)
			return 1
		}
		fmt.Fprintf(out, "ACK %d\n", resp.GetVersion().GetVersion())
		if err := out.Flush(); err != nil {
			return 1
		}
		c = next
	}
}

// TestAcknowledgedWritesSurviveKill9 runs registrations in a child process
// on an SQLite file, kills it with SIGKILL mid-stream, and checks that every
// version it acknowledged is in the store afterwards.
func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	t.Parallel()
	url := storagetest.SQLiteURL(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("StdoutPipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	acked := int32(0)
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		n, err := strconv.Atoi(strings.TrimPrefix(lines.Text(), "ACK "))
		if err != nil {
			t.Fatalf("child said %q", lines.Text())
		}
		acked = int32(n)
		if acked >= 40 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	_ = cmd.Wait() // killed: the error is expected
	if acked < 40 {
		t.Fatalf("child acknowledged only %d versions before stopping; stderr: %s", acked, stderr.String())
	}

	srv, err := New(context.Background(), Config{StoreURL: url, Clock: func() time.Time { return start }})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	resp, err := srv.ListContracts(context.Background(), &registryv1.ListContractsRequest{Subject: "shop.orders"})
	if err != nil {
		t.Fatalf("ListContracts after kill -9: %v", err)
	}
	got := int32(len(resp.GetVersions()))
	if got < acked {
		t.Fatalf("after kill -9 the store has %d versions, but the child acknowledged %d", got, acked)
	}
	for i, v := range resp.GetVersions() {
		if v.GetVersion() != int32(i+1) || len(v.GetContract().GetFields()) != 12+i+1 {
			t.Fatalf("version %d after kill -9: v%d with %d fields, want v%d with %d", i+1, v.GetVersion(), len(v.GetContract().GetFields()), i+1, 12+i+1)
		}
	}
}
