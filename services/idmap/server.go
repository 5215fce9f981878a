package idmap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/seamdata/seam/core/idpack"
	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/platform/rpcerr"
	"github.com/seamdata/seam/platform/storage"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"github.com/seamdata/seam/services/idmap/idtable"
)

// Server implements idmapv1.IdMapServiceServer.
type Server struct {
	idmapv1.UnimplementedIdMapServiceServer

	cfg   Config
	db    *storage.DB
	ownDB bool
	store Store
	stats *stats

	// mu serialises this replica's writes and reloads; readers never take it.
	mu   sync.Mutex
	snap atomic.Pointer[snapshot]
	// compacting holds the tables whose overlay a goroutine is folding
	// into a new compact index; guarded by mu.
	compacting map[TableKey]bool

	cancel context.CancelFunc
	done   chan struct{}
	// background counts compactions and the counter flusher, which Close
	// waits for.
	background sync.WaitGroup
}

// New opens the store, migrates it, loads every namespace and table into
// memory, and starts following committed changes from other replicas.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, db: cfg.DB, done: make(chan struct{}), compacting: map[TableKey]bool{}}
	if s.db == nil {
		db, err := storage.Open(ctx, cfg.StoreURL)
		if err != nil {
			return nil, fmt.Errorf("idmap: %w", err)
		}
		s.db, s.ownDB = db, true
	}
	fail := func(err error) (*Server, error) {
		if s.ownDB {
			_ = s.db.Close()
		}
		return nil, fmt.Errorf("idmap: %w", err)
	}
	var err error
	if s.store, err = NewStore(ctx, s.db); err != nil {
		return fail(err)
	}
	if s.stats, err = newStats(cfg.Meter); err != nil {
		return fail(err)
	}
	// Listen before the first load, so a change committed in between is
	// not missed.
	watchCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	wake, err := s.db.Listen(watchCtx, changeChannel)
	if err != nil {
		cancel()
		return fail(err)
	}
	snap, err := s.load(ctx, nil)
	if err != nil {
		cancel()
		return fail(err)
	}
	s.snap.Store(snap)
	go s.follow(watchCtx, wake)
	s.background.Add(1)
	go s.flushCounters(watchCtx)
	return s, nil
}

func (s *Server) load(ctx context.Context, prev *snapshot) (*snapshot, error) {
	return load(ctx, s.store, prev, s.cfg.Logger)
}

// publish makes next the snapshot readers see, and starts compacting each
// table whose overlay has grown past CompactAt changes. The caller holds mu.
func (s *Server) publish(next *snapshot) {
	s.snap.Store(next)
	for _, ns := range next.namespaces {
		for _, t := range ns.tables {
			if t.table.Changes() >= s.cfg.CompactAt && !s.compacting[t.Key] {
				s.compacting[t.Key] = true
				s.background.Add(1)
				go s.compact(t.Key, t.table)
			}
		}
	}
}

// compact folds the overlay of since, the index of key when it started,
// into a new compact index without holding mu, then swaps it in under mu
// with the changes committed meanwhile applied again on top. Readers never
// wait: they keep the snapshot they loaded.
func (s *Server) compact(key TableKey, since *idtable.Index) {
	defer s.background.Done()
	began := time.Now()
	base, err := since.Compact()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.compacting, key)
	if err != nil {
		s.cfg.Logger.Error("idmap: compacting a lookup table failed; it keeps serving from its overlay", "table", key, "error", err)
		return
	}
	snap := s.snap.Load()
	ns := snap.namespaces[key.Namespace]
	if ns == nil {
		return
	}
	cur := ns.tables[[2]string{key.A, key.B}]
	if cur == nil || cur.table.Base() != since.Base() {
		// Rebuilt or reread meanwhile: that index has no overlay to fold,
		// but it may have grown its own while this one ran, unseen by
		// publish: look again.
		s.publish(snap)
		return
	}
	next, err := cur.table.Rebase(base, since)
	if err != nil {
		s.cfg.Logger.Error("idmap: swapping in a compacted lookup table failed", "table", key, "error", err)
		return
	}
	// Through publish, not a bare store: the writes committed while this
	// compaction ran were reapplied on top, and when they are CompactAt or
	// more, the next compaction starts now. (Publish skipped them while
	// this one ran, so nothing else would start it until another write.)
	s.publish(snap.withTable(&tableState{TableState: cur.TableState, table: next}))
	s.cfg.Logger.Debug("idmap: compacted a lookup table", "table", key, "pairs", next.Len(),
		"folded", since.Changes(), "reapplied", next.Changes(), "took", time.Since(began))
}

// Bounds of the backoff between attempts to reload after a failed reload.
const (
	reloadBackoffMin = 100 * time.Millisecond
	reloadBackoffMax = 5 * time.Second
)

// follow reloads whenever a change is committed, here or on another
// replica. A failed reload is tried again with backoff until one succeeds:
// a wake-up is the only news of a change, so giving up would serve the old
// snapshot until some unrelated change came along.
func (s *Server) follow(ctx context.Context, wake <-chan struct{}) {
	defer close(s.done)
	var retry <-chan time.Time // set while a failed reload waits to be tried again
	backoff := reloadBackoffMin
	for {
		select {
		case _, ok := <-wake:
			if !ok {
				return
			}
		case <-retry:
		}
		err := s.Reload(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			retry, backoff = nil, reloadBackoffMin
			continue
		}
		s.cfg.Logger.ErrorContext(ctx, "idmap: reload after a committed change failed; serving the previous snapshot until a retry succeeds",
			"retry_in", backoff, "error", err)
		retry = time.After(backoff)
		backoff = min(2*backoff, reloadBackoffMax)
	}
}

// Reload rereads namespaces and rules and any table whose generation moved.
func (s *Server) Reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.reloadLocked(ctx)
	return err
}

// write runs one store change under the write lock and publishes the
// snapshot that follows it. answers maps the store's sentinel errors to
// the status the caller sees; any other error is internal to op.
func (s *Server) write(ctx context.Context, op string, change func() error, answers map[error]error) (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := change(); err != nil {
		for sentinel, answer := range answers {
			if errors.Is(err, sentinel) {
				return nil, answer
			}
		}
		return nil, internal(op, err)
	}
	next, err := s.reloadLocked(ctx)
	if err != nil {
		return nil, internal(op, err)
	}
	return next, nil
}

// reloadLocked rereads the store into a new snapshot and publishes it.
// The caller holds mu.
func (s *Server) reloadLocked(ctx context.Context) (*snapshot, error) {
	next, err := s.load(ctx, s.snap.Load())
	if err != nil {
		return nil, err
	}
	s.publish(next)
	return next, nil
}

// Register registers the service on r.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	idmapv1.RegisterIdMapServiceServer(r, s)
}

// Close stops following changes, waits for compactions and the last flush
// of the counters, and closes the store if New opened it.
func (s *Server) Close() error {
	s.cancel()
	<-s.done
	s.background.Wait()
	if s.ownDB {
		return s.db.Close()
	}
	return nil
}

// internal names the operation an unexpected error broke; platform/rpcerr
// logs it with an error id and answers Internal without its text.
func internal(op string, err error) error {
	return fmt.Errorf("idmap: %s: %w", op, err)
}

// refused answers InvalidArgument for a format, rule or sample the caller
// got wrong (see fieldError), and names op for any other error.
func refused(op string, err error) error {
	if ferr := fieldError(err); ferr != nil {
		return ferr
	}
	return internal(op, err)
}

// fieldError is the InvalidArgument answer for an idrule.FieldError or
// SampleError, or nil for any other error.
func fieldError(err error) error {
	var fe *idrule.FieldError
	if errors.As(err, &fe) {
		return rpcerr.InvalidArgument(fe.Error(), rpcerr.FieldViolation{Field: fe.Field, Description: fe.Reason})
	}
	var se *idrule.SampleError
	if errors.As(err, &se) {
		return rpcerr.InvalidArgument("rule refused: "+se.Error(), rpcerr.FieldViolation{Field: fmt.Sprintf("samples[%d]", se.Index), Description: se.Reason})
	}
	return nil
}

func namespaceNotFound(name string) error {
	return rpcerr.WithReason(codes.NotFound, "NAMESPACE_NOT_FOUND",
		fmt.Sprintf("namespace %q not found; create it with CreateNamespace or `seam idmap namespace create`", name),
		map[string]string{"namespace": name})
}

func (s *Server) namespace(name string) (*nsState, error) {
	if name == "" {
		return nil, rpcerr.InvalidArgument("namespace is empty", rpcerr.FieldViolation{Field: "namespace", Description: "must name a namespace"})
	}
	ns := s.snap.Load().namespaces[name]
	if ns == nil {
		return nil, namespaceNotFound(name)
	}
	return ns, nil
}

func formatOf(ns *nsState, field, name string) (*idrule.Format, error) {
	f := ns.formats[name]
	if f == nil {
		known := make([]string, 0, len(ns.formats))
		for n := range ns.formats {
			known = append(known, n)
		}
		slices.Sort(known)
		return nil, rpcerr.InvalidArgument(fmt.Sprintf("%s: format %q is not defined in namespace %q", field, name, ns.spec.GetName()),
			rpcerr.FieldViolation{Field: field, Description: fmt.Sprintf("want one of %s", strings.Join(known, ", "))})
	}
	return f, nil
}

// CreateNamespace creates a namespace with its formats (and optional rules).
func (s *Server) CreateNamespace(ctx context.Context, req *idmapv1.CreateNamespaceRequest) (*idmapv1.CreateNamespaceResponse, error) {
	ns := req.GetNamespace()
	if !idrule.ValidName(ns.GetName()) {
		return nil, rpcerr.InvalidArgument(fmt.Sprintf("namespace.name %q is not a valid name", ns.GetName()),
			rpcerr.FieldViolation{Field: "namespace.name", Description: "1-63 characters of a-z, 0-9, '-' and '_', starting with a letter"})
	}
	if len(ns.GetFormats()) == 0 {
		return nil, rpcerr.InvalidArgument("namespace.formats is empty", rpcerr.FieldViolation{Field: "namespace.formats", Description: "define at least one format"})
	}
	if len(ns.GetTables()) > 0 {
		return nil, rpcerr.InvalidArgument("namespace.tables is output only", rpcerr.FieldViolation{Field: "namespace.tables", Description: "load tables with ImportPairs"})
	}
	compiled, err := compileNamespace(ns)
	if err != nil {
		return nil, refused("create namespace", err)
	}
	for _, c := range compiled.rules {
		if !c.Lookup {
			return nil, rpcerr.InvalidArgument("deterministic rules are set with SetRule, which validates them on samples",
				rpcerr.FieldViolation{Field: "namespace.rules", Description: fmt.Sprintf("rule %s→%s: only lookup rules may be given at creation", c.From.Name(), c.To.Name())})
		}
	}
	next, err := s.write(ctx, "create namespace", func() error {
		return s.store.CreateNamespace(ctx, ns, AuditEntry{Principal: s.cfg.Principal(ctx), Action: "create_namespace",
			Detail: fmt.Sprintf("%d formats", len(ns.GetFormats()))})
	}, map[error]error{ErrNamespaceExists: rpcerr.AlreadyExists("namespace", ns.GetName())})
	if err != nil {
		return nil, err
	}
	return &idmapv1.CreateNamespaceResponse{Namespace: next.namespaces[ns.GetName()].proto()}, nil
}

// AddFormat adds one format to an existing namespace.
func (s *Server) AddFormat(ctx context.Context, req *idmapv1.AddFormatRequest) (*idmapv1.AddFormatResponse, error) {
	ns, err := s.namespace(req.GetNamespace())
	if err != nil {
		return nil, err
	}
	f := req.GetFormat()
	if _, err := idrule.NewFormat("format", f); err != nil {
		return nil, refused("add format", err)
	}
	if ns.formats[f.GetName()] != nil {
		return nil, rpcerr.AlreadyExists("format", req.GetNamespace()+"/"+f.GetName())
	}
	next, err := s.write(ctx, "add format", func() error {
		return s.store.AddFormat(ctx, req.GetNamespace(), f, AuditEntry{Principal: s.cfg.Principal(ctx), Action: "add_format",
			Detail: fmt.Sprintf("%s %s %q", f.GetName(), f.GetKind(), f.GetPattern())})
	}, map[error]error{
		ErrFormatExists:      rpcerr.AlreadyExists("format", req.GetNamespace()+"/"+f.GetName()),
		ErrNamespaceNotFound: namespaceNotFound(req.GetNamespace()),
	})
	if err != nil {
		return nil, err
	}
	return &idmapv1.AddFormatResponse{Namespace: next.namespaces[req.GetNamespace()].proto()}, nil
}

// GetNamespace returns a namespace with formats, rules and table sizes.
func (s *Server) GetNamespace(_ context.Context, req *idmapv1.GetNamespaceRequest) (*idmapv1.GetNamespaceResponse, error) {
	ns, err := s.namespace(req.GetName())
	if err != nil {
		return nil, err
	}
	return &idmapv1.GetNamespaceResponse{Namespace: ns.proto()}, nil
}

// ListNamespaces lists namespaces by name.
func (s *Server) ListNamespaces(context.Context, *idmapv1.ListNamespacesRequest) (*idmapv1.ListNamespacesResponse, error) {
	snap := s.snap.Load()
	names := make([]string, 0, len(snap.namespaces))
	for n := range snap.namespaces {
		names = append(names, n)
	}
	slices.Sort(names)
	out := &idmapv1.ListNamespacesResponse{}
	for _, n := range names {
		out.Namespaces = append(out.Namespaces, snap.namespaces[n].proto())
	}
	return out, nil
}

// SetRule validates a rule on its samples and stores it.
func (s *Server) SetRule(ctx context.Context, req *idmapv1.SetRuleRequest) (*idmapv1.SetRuleResponse, error) {
	ns, err := s.namespace(req.GetNamespace())
	if err != nil {
		return nil, err
	}
	rule := req.GetRule()
	c, err := idrule.Compile(rule, ns.formats[rule.GetFromFormat()], ns.formats[rule.GetToFormat()])
	if err != nil {
		return nil, refused("set rule", err)
	}
	if !c.Lookup && len(req.GetSamples()) == 0 {
		return nil, rpcerr.InvalidArgument("a deterministic rule needs samples to be validated on",
			rpcerr.FieldViolation{Field: "samples", Description: fmt.Sprintf("give a few %s ids the rule must translate", rule.GetFromFormat())})
	}
	checked, err := c.Verify(req.GetSamples())
	if err != nil {
		return nil, refused("set rule", err)
	}
	if _, err := s.write(ctx, "set rule", func() error {
		return s.store.PutRule(ctx, req.GetNamespace(), c.Rule, AuditEntry{Principal: s.cfg.Principal(ctx), Action: "set_rule",
			Detail: fmt.Sprintf("%s→%s %s reversible=%v, %d samples checked", rule.GetFromFormat(), rule.GetToFormat(), strategyName(c.Rule), c.Rule.GetReversible(), checked)})
	}, nil); err != nil {
		return nil, err
	}
	return &idmapv1.SetRuleResponse{Rule: c.Rule, Checked: int32(checked)}, nil
}

func strategyName(r *idmapv1.Rule) string {
	switch r.GetStrategy().(type) {
	case *idmapv1.Rule_Template:
		return "template " + r.GetTemplate().GetTemplate()
	case *idmapv1.Rule_UuidEmbed:
		return "uuid_embed"
	case *idmapv1.Rule_UuidV5:
		return "uuid_v5"
	case *idmapv1.Rule_Normalize:
		return "normalize"
	default:
		return "lookup"
	}
}

// route is how one ordered format pair is translated.
type route struct {
	from, to *idrule.Format
	fn       idrule.Func // deterministic
	table    *idtable.Index
	reverse  bool // table lookup from side B
}

// resolve picks the strategy for from→to: a rule in that direction, the
// reverse of a reversible rule, or the lookup table of the pair.
func resolve(ns *nsState, fromName, toName string) (route, error) {
	from, err := formatOf(ns, "from_format", fromName)
	if err != nil {
		return route{}, err
	}
	to, err := formatOf(ns, "to_format", toName)
	if err != nil {
		return route{}, err
	}
	if from == to {
		return route{}, rpcerr.InvalidArgument("from_format and to_format are the same",
			rpcerr.FieldViolation{Field: "to_format", Description: "must differ from from_format"})
	}
	r := route{from: from, to: to}
	if c := ns.rules[[2]string{fromName, toName}]; c != nil && !c.Lookup {
		r.fn = c.Forward
		return r, nil
	}
	if c := ns.rules[[2]string{toName, fromName}]; c != nil && !c.Lookup && c.Reverse != nil {
		r.fn = c.Reverse
		return r, nil
	}
	key, swapped := tableKey(ns.spec.GetName(), fromName, toName)
	if t := ns.tables[[2]string{key.A, key.B}]; t != nil {
		r.table, r.reverse = t.table, swapped
		return r, nil
	}
	if ns.rules[[2]string{fromName, toName}] != nil || ns.rules[[2]string{toName, fromName}] != nil {
		// A lookup rule (or forward-only rule) whose table is not loaded
		// yet: every valid id is an honest miss.
		r.table, r.reverse = emptyTable(key, ns), swapped
		return r, nil
	}
	return route{}, rpcerr.FailedPrecondition("NO_TRANSLATION",
		fmt.Sprintf("namespace %q has no rule or lookup table for %s→%s; set a rule with SetRule or import a table", ns.spec.GetName(), fromName, toName),
		map[string]string{"namespace": ns.spec.GetName(), "from_format": fromName, "to_format": toName})
}

func emptyTable(key TableKey, ns *nsState) *idtable.Index {
	return idtable.NewIndex(idtable.Empty(kindOf(ns.formats[key.A]), kindOf(ns.formats[key.B])))
}

// translate answers one batch.
func (r route) translate(ids []string) *idmapv1.TranslateResponse {
	n := len(ids)
	status := make([]idrule.Status, n)
	ends := make([]int, n)
	var buf []byte
	if r.table != nil {
		buf = make([]byte, 0, n*20)
		if r.reverse {
			buf = r.table.TranslateBA(ids, buf, status, ends)
		} else {
			buf = r.table.TranslateAB(ids, buf, status, ends)
		}
		if r.from.Kind() == idmapv1.FormatKind_FORMAT_KIND_STRING {
			// The table accepts any string; the format's pattern decides.
			for i, id := range ids {
				if !r.from.Valid(id) {
					status[i] = idrule.Invalid
				}
			}
		}
	} else {
		for i, id := range ids {
			if !r.from.Valid(id) {
				status[i] = idrule.Invalid
			} else {
				var out string
				out, status[i] = r.fn(id)
				buf = append(buf, out...)
			}
			ends[i] = len(buf)
		}
	}
	// One string holds every value; each answer is a slice of it, so a
	// batch costs one allocation for its values instead of one per id.
	all := string(buf)
	resp := &idmapv1.TranslateResponse{Values: make([]string, n), Statuses: make([]idmapv1.TranslateStatus, n)}
	start := 0
	for i := range n {
		switch status[i] {
		case idrule.Hit:
			resp.Values[i] = all[start:ends[i]]
			resp.Statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
			resp.Hits++
		case idrule.Miss:
			resp.Statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
			resp.Misses++
		default:
			resp.Statuses[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_INVALID
			resp.Invalid++
		}
		start = ends[i]
	}
	return resp
}

// Translate translates up to MaxTranslateIDs ids.
func (s *Server) Translate(ctx context.Context, req *idmapv1.TranslateRequest) (*idmapv1.TranslateResponse, error) {
	return s.translate(ctx, req, "ids")
}

func (s *Server) translate(ctx context.Context, req *idmapv1.TranslateRequest, field string) (*idmapv1.TranslateResponse, error) {
	ns, ids, err := s.callIDs(req, field, ", or use TranslateStream")
	if err != nil {
		return nil, err
	}
	r, err := resolve(ns, req.GetFromFormat(), req.GetToFormat())
	if err != nil {
		return nil, err
	}
	resp := r.translate(ids)
	if req.GetPacked() != nil {
		resp.PackedValues, resp.Values = idpack.Pack(resp.Values), nil
	}
	s.stats.add(ctx, req.GetNamespace(), req.GetFromFormat(), req.GetToFormat(), resp.Hits, resp.Misses, resp.Invalid)
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("seam.idmap.namespace", req.GetNamespace()),
		attribute.String("seam.idmap.from_format", req.GetFromFormat()), attribute.String("seam.idmap.to_format", req.GetToFormat()),
		attribute.Int("seam.ids", len(ids)), attribute.Int64("seam.ids.hits", resp.Hits), attribute.Int64("seam.ids.misses", resp.Misses),
		attribute.Int64("seam.ids.invalid", resp.Invalid))
	return resp, nil
}

// TranslateStream answers each request message with one response carrying
// its sequence number.
func (s *Server) TranslateStream(stream grpc.BidiStreamingServer[idmapv1.TranslateStreamRequest, idmapv1.TranslateStreamResponse]) error {
	return rpcerr.AnswerEach(stream, func(req *idmapv1.TranslateStreamRequest) (*idmapv1.TranslateStreamResponse, error) {
		resp, err := s.translate(stream.Context(), req.GetRequest(), "request.ids")
		if err != nil {
			return nil, fmt.Errorf("message with sequence %d: %w", req.GetSequence(), err)
		}
		return &idmapv1.TranslateStreamResponse{Sequence: req.GetSequence(), Response: resp}, nil
	})
}

// Contains reports whether each id is in a lookup table of the format.
func (s *Server) Contains(ctx context.Context, req *idmapv1.ContainsRequest) (*idmapv1.ContainsResponse, error) {
	ns, ids, err := s.callIDs(req, "ids", "")
	if err != nil {
		return nil, err
	}
	f, err := formatOf(ns, "format", req.GetFormat())
	if err != nil {
		return nil, err
	}
	type side struct {
		t   *idtable.Index
		isA bool
	}
	var sides []side
	for k, t := range ns.tables {
		if k[0] == f.Name() {
			sides = append(sides, side{t.table, true})
		} else if k[1] == f.Name() {
			sides = append(sides, side{t.table, false})
		}
	}
	resp := &idmapv1.ContainsResponse{Present: make([]bool, len(ids))}
	for i, id := range ids {
		if !f.Valid(id) {
			continue
		}
		for _, sd := range sides {
			if (sd.isA && sd.t.HasA(id)) || (!sd.isA && sd.t.HasB(id)) {
				resp.Present[i] = true
				resp.Found++
				break
			}
		}
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("seam.idmap.namespace", req.GetNamespace()), attribute.String("seam.idmap.format", req.GetFormat()),
		attribute.Int("seam.ids", len(ids)), attribute.Int64("seam.ids.hits", resp.Found), attribute.Int64("seam.ids.misses", int64(len(ids))-resp.Found))
	return resp, nil
}

// idCall is a request for ids of one namespace, sent as ids or packed.
type idCall interface {
	GetNamespace() string
	GetIds() []string
	GetPacked() *idmapv1.PackedIds
}

// callIDs are the namespace and the ids of req, refused when there are
// more than MaxTranslateIDs. field names the ids in errors ("…packed" when
// they come packed); orElse follows the advice to split them, naming
// another way.
func (s *Server) callIDs(req idCall, field, orElse string) (*nsState, []string, error) {
	if req.GetPacked() != nil {
		field = strings.TrimSuffix(field, "ids") + "packed"
	}
	if n := len(req.GetIds()) + len(req.GetPacked().GetEnds()); n > s.cfg.MaxTranslateIDs {
		return nil, nil, rpcerr.InvalidArgument(fmt.Sprintf("%d ids in one call, the limit is %d", n, s.cfg.MaxTranslateIDs),
			rpcerr.FieldViolation{Field: field, Description: fmt.Sprintf("split into batches of at most %d%s", s.cfg.MaxTranslateIDs, orElse)})
	}
	ids, err := packedOr(req.GetIds(), req.GetPacked(), field)
	if err != nil {
		return nil, nil, err
	}
	ns, err := s.namespace(req.GetNamespace())
	if err != nil {
		return nil, nil, err
	}
	return ns, ids, nil
}

// packedOr returns a request's ids: ids, or those packed carries, cut
// from one string rather than allocated one by one. field names packed in
// errors.
func packedOr(ids []string, p *idmapv1.PackedIds, field string) ([]string, error) {
	if p == nil {
		return ids, nil
	}
	if len(ids) > 0 {
		return nil, rpcerr.InvalidArgument("both ids and packed are set", rpcerr.FieldViolation{Field: field, Description: "send the ids once: as ids or as packed"})
	}
	out, err := idpack.Strings(p)
	if err != nil {
		return nil, rpcerr.InvalidArgument(err.Error(), rpcerr.FieldViolation{Field: field + ".ends", Description: "ends ascend, each at most the length of data"})
	}
	return out, nil
}

// GetStats returns the translation counters every replica has added to
// the store, this replica's latest included, so every replica answers
// the same.
func (s *Server) GetStats(ctx context.Context, req *idmapv1.GetStatsRequest) (*idmapv1.GetStatsResponse, error) {
	if err := s.stats.flush(ctx, s.store); err != nil {
		return nil, internal("get stats", err)
	}
	counters, err := s.store.Counters(ctx, req.GetNamespace())
	if err != nil {
		return nil, internal("get stats", err)
	}
	return &idmapv1.GetStatsResponse{Counters: counters}, nil
}

// flushCounters adds this replica's translation counts to the store every
// CounterFlushInterval, and once more when the server closes.
func (s *Server) flushCounters(ctx context.Context) {
	defer s.background.Done()
	tick := time.NewTicker(s.cfg.CounterFlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.stats.flush(flushCtx, s.store); err != nil {
				s.cfg.Logger.Error("idmap: the last flush of translation counters failed", "error", err)
			}
			cancel()
			return
		case <-tick.C:
			if err := s.stats.flush(ctx, s.store); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("idmap: flushing translation counters failed; they are kept and sent with the next flush", "error", err)
			}
		}
	}
}

// ListAudit lists the newest audit records.
func (s *Server) ListAudit(ctx context.Context, req *idmapv1.ListAuditRequest) (*idmapv1.ListAuditResponse, error) {
	limit := int(req.GetLimit())
	switch {
	case limit < 0:
		return nil, rpcerr.InvalidArgument("limit is negative", rpcerr.FieldViolation{Field: "limit", Description: "want 0 for the default (100) or up to 1000"})
	case limit == 0:
		limit = 100
	case limit > 1000:
		limit = 1000
	}
	if req.GetNamespace() != "" {
		if _, err := s.namespace(req.GetNamespace()); err != nil {
			return nil, err
		}
	}
	recs, err := s.store.Audit(ctx, req.GetNamespace(), limit)
	if err != nil {
		return nil, internal("list audit", err)
	}
	return &idmapv1.ListAuditResponse{Records: recs}, nil
}

func sortRules(rules []*idmapv1.Rule) {
	slices.SortFunc(rules, func(a, b *idmapv1.Rule) int {
		return strings.Compare(a.GetFromFormat()+"\x00"+a.GetToFormat(), b.GetFromFormat()+"\x00"+b.GetToFormat())
	})
}

func sortTables(tables []*idmapv1.TableInfo) {
	slices.SortFunc(tables, func(a, b *idmapv1.TableInfo) int {
		return strings.Compare(a.GetFromFormat()+"\x00"+a.GetToFormat(), b.GetFromFormat()+"\x00"+b.GetToFormat())
	})
}
