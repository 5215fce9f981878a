package idmap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/core/idrule"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	"github.com/seamdata/seam/services/idmap/idtable"
)

// snapshot is one immutable view of every namespace; readers load it once
// per request, so a request sees a table before or after an import, never
// in between.
type snapshot struct {
	namespaces map[string]*nsState
}

type nsState struct {
	spec    *idmapv1.Namespace // formats, description, create time; no rules or tables
	formats map[string]*idrule.Format
	rules   map[[2]string]*idrule.Compiled
	tables  map[[2]string]*tableState
}

type tableState struct {
	TableState
	table *idtable.Index
}

func kindOf(f *idrule.Format) idtable.Kind {
	switch f.Kind() {
	case idmapv1.FormatKind_FORMAT_KIND_INT:
		return idtable.Int
	case idmapv1.FormatKind_FORMAT_KIND_UUID:
		return idtable.UUID
	default:
		return idtable.String
	}
}

// compileNamespace validates a namespace's formats and rules.
func compileNamespace(ns *idmapv1.Namespace) (*nsState, error) {
	st := &nsState{
		formats: map[string]*idrule.Format{},
		rules:   map[[2]string]*idrule.Compiled{},
		tables:  map[[2]string]*tableState{},
	}
	for i, f := range ns.GetFormats() {
		cf, err := idrule.NewFormat(fmt.Sprintf("namespace.formats[%d]", i), f)
		if err != nil {
			return nil, err
		}
		if st.formats[cf.Name()] != nil {
			return nil, &idrule.FieldError{Field: fmt.Sprintf("namespace.formats[%d].name", i), Reason: fmt.Sprintf("format %q is defined twice", cf.Name())}
		}
		st.formats[cf.Name()] = cf
	}
	for i, r := range ns.GetRules() {
		c, err := idrule.Compile(r, st.formats[r.GetFromFormat()], st.formats[r.GetToFormat()])
		if err != nil {
			if fe, ok := err.(*idrule.FieldError); ok {
				fe.Field = fmt.Sprintf("namespace.rules[%d]", i) + fe.Field[len("rule"):]
			}
			return nil, err
		}
		st.rules[[2]string{r.GetFromFormat(), r.GetToFormat()}] = c
	}
	spec := proto.Clone(ns).(*idmapv1.Namespace)
	spec.Rules, spec.Tables = nil, nil
	st.spec = spec
	return st, nil
}

// proto renders the namespace with its rules and table summaries.
func (n *nsState) proto() *idmapv1.Namespace {
	out := proto.Clone(n.spec).(*idmapv1.Namespace)
	for _, c := range n.rules {
		out.Rules = append(out.Rules, proto.Clone(c.Rule).(*idmapv1.Rule))
	}
	sortRules(out.Rules)
	for _, t := range n.tables {
		out.Tables = append(out.Tables, &idmapv1.TableInfo{FromFormat: t.Key.A, ToFormat: t.Key.B, Pairs: t.Pairs,
			Generation: t.Generation, UpdateTime: timestamppb.New(t.Updated), Members: t.Key.A == t.Key.B})
	}
	sortTables(out.Tables)
	return out
}

// load builds a snapshot from the store, reusing the tables of prev whose
// generation has not changed and applying the logged changes to those that
// moved, so a reload after a change elsewhere costs what the change costs;
// a table the log cannot bring forward is read whole.
func load(ctx context.Context, store Store, prev *snapshot, logger *slog.Logger) (*snapshot, error) {
	nss, err := store.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	tables, err := store.Tables(ctx)
	if err != nil {
		return nil, err
	}
	next := &snapshot{namespaces: map[string]*nsState{}}
	for _, ns := range nss {
		st, err := compileNamespace(ns)
		if err != nil {
			return nil, fmt.Errorf("stored namespace %q no longer compiles: %w", ns.GetName(), err)
		}
		next.namespaces[ns.GetName()] = st
	}
	for _, t := range tables {
		ns := next.namespaces[t.Key.Namespace]
		if ns == nil {
			continue
		}
		k := [2]string{t.Key.A, t.Key.B}
		var old *tableState
		if prev != nil {
			if o := prev.namespaces[t.Key.Namespace]; o != nil {
				old = o.tables[k]
			}
		}
		if old != nil && old.Generation == t.Generation {
			ns.tables[k] = old
			continue
		}
		if old != nil && old.Generation < t.Generation {
			idx, err := catchUp(old.table, old.Generation, t.Generation, func(after int64) ([]LoggedChange, error) {
				return store.TableChanges(ctx, t.Key, after, t.Generation)
			})
			if err == nil && int64(idx.Len()) != t.Pairs {
				err = fmt.Errorf("the log leaves %d pairs, the store counts %d", idx.Len(), t.Pairs)
			}
			if err == nil {
				ns.tables[k] = &tableState{TableState: t, table: idx}
				continue
			}
			if !errors.Is(err, ErrNoChangeLog) {
				logger.WarnContext(ctx, "idmap: applying the change log failed; reading the whole table", "table", t.Key, "error", err)
			}
		}
		fa, fb := ns.formats[t.Key.A], ns.formats[t.Key.B]
		if fa == nil || fb == nil {
			return nil, fmt.Errorf("table %s %s↔%s names a format the namespace lacks", t.Key.Namespace, t.Key.A, t.Key.B)
		}
		st, err := loadTable(ctx, store, t, kindOf(fa), kindOf(fb))
		if err != nil {
			return nil, err
		}
		ns.tables[k] = st
	}
	return next, nil
}

// catchUp applies the logged changes after generation from up to to.
func catchUp(idx *idtable.Index, from, to int64, changes func(after int64) ([]LoggedChange, error)) (*idtable.Index, error) {
	log, err := changes(from)
	if err != nil {
		return nil, err
	}
	if int64(len(log)) != to-from {
		return nil, fmt.Errorf("%d logged changes for generations %d..%d: %w", len(log), from+1, to, ErrNoChangeLog)
	}
	for _, c := range log {
		if idx, err = idx.Apply(c.DeleteA, c.Insert); err != nil {
			return nil, fmt.Errorf("apply generation %d: %w", c.Generation, err)
		}
	}
	return idx, nil
}

// loadTable reads a whole table. The table may have grown since its
// metadata was read; then the read is tried again with the new size.
func loadTable(ctx context.Context, store Store, t TableState, kindA, kindB idtable.Kind) (*tableState, error) {
	capacity := int(t.Pairs)
	for attempt := 0; ; attempt++ {
		b, err := idtable.NewBuilder(kindA, kindB, capacity)
		if err != nil {
			return nil, err
		}
		gen, err := store.LoadTable(ctx, t.Key, b.Add)
		if errors.Is(err, idtable.ErrFull) && attempt < 5 {
			capacity += capacity/4 + 1024
			continue
		}
		if err != nil {
			return nil, err
		}
		tab := b.Build()
		t.Generation, t.Pairs = gen, int64(tab.Len())
		return &tableState{TableState: t, table: idtable.NewIndex(tab)}, nil
	}
}

// withTable returns a copy of s with one table replaced.
func (s *snapshot) withTable(t *tableState) *snapshot {
	next := &snapshot{namespaces: make(map[string]*nsState, len(s.namespaces))}
	for name, ns := range s.namespaces {
		next.namespaces[name] = ns
	}
	old := s.namespaces[t.Key.Namespace]
	ns := *old
	ns.tables = make(map[[2]string]*tableState, len(old.tables)+1)
	for k, v := range old.tables {
		ns.tables[k] = v
	}
	ns.tables[[2]string{t.Key.A, t.Key.B}] = t
	next.namespaces[t.Key.Namespace] = &ns
	return next
}
