package registry

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// indexChanges is the index-table key holding the last store change applied.
const indexChanges = "changes"

// indexEventFloor is the index-table key holding the event floor: events at
// or below it are no longer in the read model, only in the store.
const indexEventFloor = "event_floor"

// changeBatch bounds how many change records one follow step applies.
const changeBatch = 512

// readModel is the in-memory, indexed view of the store that every read RPC
// is served from. It follows the store's change log: it never holds a state
// older than the events it has published.
type readModel struct {
	db    *memdb.MemDB
	store Store
	// window is how many of the newest events the model keeps.
	window int64

	// mu serialises followers; readers never take it.
	mu         sync.Mutex
	lastChange int64
	lastEvent  int64
	// floor is the newest event sequence dropped from the model (or never
	// loaded into it): older events are read from the store.
	floor int64
}

func newReadModel(store Store, window int) (*readModel, error) {
	schema, err := readModelSchema()
	if err != nil {
		return nil, err
	}
	db, err := memdb.NewMemDB(schema)
	if err != nil {
		return nil, fmt.Errorf("create registry read model: %w", err)
	}
	return &readModel{db: db, store: store, window: int64(window)}, nil
}

// rebuild loads the whole store. The change-log position is read first, so
// anything committed while loading is applied again by the next catchUp;
// reloading an entity is idempotent.
func (m *readModel) rebuild(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, err := m.store.LastChange(ctx)
	if err != nil {
		return err
	}
	// Only the newest events are loaded; the store keeps the rest.
	lastEvent, err := m.store.LastEvent(ctx)
	if err != nil {
		return err
	}
	m.floor = max(0, lastEvent-m.window)
	m.lastEvent = m.floor
	l := newLoad()
	if err := l.events(ctx, m.store, m.floor, -1); err != nil {
		return err
	}
	names, err := m.store.SubjectNames(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		l.subjects[n] = true
	}
	if names, err = m.store.ModelNames(ctx); err != nil {
		return err
	}
	for _, n := range names {
		l.models[n] = true
	}
	consumers, err := m.store.Consumers(ctx)
	if err != nil {
		return err
	}
	for _, c := range consumers {
		l.consumers[c.GetName()] = true
	}
	if err := l.entities(ctx, m.store); err != nil {
		return err
	}
	return m.apply(l, last)
}

// catchUp applies every change record committed after the last one applied.
func (m *readModel) catchUp(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		changes, err := m.store.Changes(ctx, m.lastChange, changeBatch)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		l := newLoad()
		upTo := m.lastEvent
		for _, c := range changes {
			switch c.Entity {
			case EntitySubject:
				l.subjects[c.Key] = true
			case EntityModel:
				l.models[c.Key] = true
			case EntityConsumer:
				l.consumers[c.Key] = true
			case EntityEvent:
				seq, err := strconv.ParseInt(c.Key, 10, 64)
				if err != nil {
					return fmt.Errorf("change %d names event %q, not a sequence number: %w", c.Sequence, c.Key, err)
				}
				upTo = max(upTo, seq)
			default:
				return fmt.Errorf("change %d names unknown entity kind %q; is a newer registry writing to this store?", c.Sequence, c.Entity)
			}
		}
		// Events are loaded only up to the last one these changes name, and
		// entities after them, so the model never shows an event whose state
		// it lacks.
		if upTo > m.lastEvent {
			if err := l.events(ctx, m.store, m.lastEvent, upTo); err != nil {
				return err
			}
		}
		if err := l.entities(ctx, m.store); err != nil {
			return err
		}
		if err := m.apply(l, changes[len(changes)-1].Sequence); err != nil {
			return err
		}
	}
}

// load is what one follow step read from the store.
type load struct {
	subjects, models, consumers map[string]bool

	eventList    []*registryv1.Event
	subjectState map[string]*registryv1.Subject
	versionState map[string][]*registryv1.ContractVersion
	modelState   map[string][]*registryv1.CanonicalModelVersion
	consumerSt   map[string]*registryv1.Consumer
}

func newLoad() *load {
	return &load{
		subjects: map[string]bool{}, models: map[string]bool{}, consumers: map[string]bool{},
		subjectState: map[string]*registryv1.Subject{}, versionState: map[string][]*registryv1.ContractVersion{},
		modelState: map[string][]*registryv1.CanonicalModelVersion{}, consumerSt: map[string]*registryv1.Consumer{},
	}
}

// events reads events after after up to upTo (no bound when upTo < 0).
func (l *load) events(ctx context.Context, store Store, after, upTo int64) error {
	for upTo < 0 || after < upTo {
		limit := changeBatch
		if upTo >= 0 {
			limit = int(min(int64(changeBatch), upTo-after))
		}
		evs, err := store.Events(ctx, after, limit)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			if upTo >= 0 {
				return fmt.Errorf("registry event log ends at %d but a change names event %d", after, upTo)
			}
			return nil
		}
		l.eventList = append(l.eventList, evs...)
		after = evs[len(evs)-1].GetSequence()
	}
	return nil
}

func (l *load) entities(ctx context.Context, store Store) error {
	for name := range l.subjects {
		s, vs, err := store.Subject(ctx, name)
		if err != nil {
			return err
		}
		l.subjectState[name], l.versionState[name] = s, vs
	}
	for name := range l.models {
		ms, err := store.Model(ctx, name)
		if err != nil {
			return err
		}
		l.modelState[name] = ms
	}
	for name := range l.consumers {
		c, err := store.Consumer(ctx, name)
		if err != nil {
			return err
		}
		l.consumerSt[name] = c
	}
	return nil
}

// apply writes a load into the read model in one memdb transaction, so
// readers see all of it or none of it.
func (m *readModel) apply(l *load, lastChange int64) error {
	txn := m.db.Txn(true)
	defer txn.Abort()
	touched := map[string]bool{}
	for name, s := range l.subjectState {
		touched[tableSubjects], touched[tableVersions] = true, true
		if s == nil {
			continue
		}
		if err := txn.Insert(tableSubjects, &subjectRow{Name: name, Subject: s}); err != nil {
			return fmt.Errorf("read model: subject %q: %w", name, err)
		}
		for _, v := range l.versionState[name] {
			if err := txn.Insert(tableVersions, &versionRow{Subject: name, Version: int(v.GetVersion()), V: v}); err != nil {
				return fmt.Errorf("read model: %s v%d: %w", name, v.GetVersion(), err)
			}
		}
	}
	for name, ms := range l.modelState {
		touched[tableModels] = true
		for _, mv := range ms {
			if err := txn.Insert(tableModels, &modelRow{Name: name, Version: int(mv.GetVersion()), M: mv}); err != nil {
				return fmt.Errorf("read model: canonical model %s v%d: %w", name, mv.GetVersion(), err)
			}
		}
	}
	for name, c := range l.consumerSt {
		touched[tableConsumers] = true
		if c == nil {
			if _, err := txn.DeleteAll(tableConsumers, indexID, name); err != nil {
				return fmt.Errorf("read model: delete consumer %q: %w", name, err)
			}
			continue
		}
		if err := txn.Insert(tableConsumers, newConsumerRow(c)); err != nil {
			return fmt.Errorf("read model: consumer %q: %w", name, err)
		}
	}
	lastEvent := m.lastEvent
	for _, e := range l.eventList {
		if e.GetSequence() <= lastEvent {
			continue
		}
		touched[tableEvents] = true
		if err := txn.Insert(tableEvents, &eventRow{Sequence: uint64(e.GetSequence()), E: e}); err != nil {
			return fmt.Errorf("read model: event %d: %w", e.GetSequence(), err)
		}
		lastEvent = e.GetSequence()
	}
	floor, err := m.dropOldEvents(txn, lastEvent)
	if err != nil {
		return err
	}
	touched[indexChanges] = true
	for table := range touched {
		if err := txn.Insert(tableIndex, &indexEntry{Key: table, Value: uint64(lastChange)}); err != nil {
			return fmt.Errorf("read model: index %q: %w", table, err)
		}
	}
	txn.Commit()
	m.lastChange, m.lastEvent, m.floor = lastChange, lastEvent, floor
	return nil
}

// dropOldEvents removes the events that fell out of the window and records
// the new floor in the same transaction, so a reader sees the events it
// misses in the model as below the floor, to be read from the store.
func (m *readModel) dropOldEvents(txn *memdb.Txn, lastEvent int64) (int64, error) {
	floor := max(m.floor, lastEvent-m.window)
	if floor > m.floor {
		it, err := txn.Get(tableEvents, indexID)
		if err != nil {
			return 0, fmt.Errorf("read model: events: %w", err)
		}
		var old []any
		for raw := it.Next(); raw != nil && int64(raw.(*eventRow).Sequence) <= floor; raw = it.Next() {
			old = append(old, raw)
		}
		for _, raw := range old {
			if err := txn.Delete(tableEvents, raw); err != nil {
				return 0, fmt.Errorf("read model: drop event %d: %w", raw.(*eventRow).Sequence, err)
			}
		}
	}
	if err := txn.Insert(tableIndex, &indexEntry{Key: indexEventFloor, Value: uint64(floor)}); err != nil {
		return 0, fmt.Errorf("read model: event floor: %w", err)
	}
	return floor, nil
}

// snapshot returns a read transaction: a consistent view that later writes
// do not change.
func (m *readModel) snapshot() *memdb.Txn { return m.db.Txn(false) }

// first returns what get reads of the row of table whose id is args, or
// the zero value when there is none, and adds the row's watch to ws.
func first[R, T any](txn *memdb.Txn, ws memdb.WatchSet, get func(*R) T, table string, args ...any) (T, error) {
	var none T
	ch, raw, err := txn.FirstWatch(table, indexID, args...)
	if err != nil {
		return none, fmt.Errorf("read model: %s %q: %w", table, args, err)
	}
	ws.Add(ch)
	if raw == nil {
		return none, nil
	}
	return get(raw.(*R)), nil
}

// all returns, in index order, what keep reads of each row of table that
// index finds for args, leaving out the rows it refuses; the lookup's
// watch is added to ws.
func all[R, T any](txn *memdb.Txn, ws memdb.WatchSet, keep func(*R) (T, bool), table, index string, args ...any) ([]T, error) {
	it, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("read model: %s by %s %q: %w", table, index, args, err)
	}
	ws.Add(it.WatchCh())
	var out []T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if v, ok := keep(raw.(*R)); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// subject returns a subject summary, or nil.
func subjectOf(txn *memdb.Txn, ws memdb.WatchSet, name string) (*registryv1.Subject, error) {
	return first(txn, ws, func(r *subjectRow) *registryv1.Subject { return r.Subject }, tableSubjects, name)
}

// subjectsWithPrefix lists subjects whose name starts with prefix, by name.
func subjectsWithPrefix(txn *memdb.Txn, ws memdb.WatchSet, prefix string) ([]*registryv1.Subject, error) {
	return all(txn, ws, func(r *subjectRow) (*registryv1.Subject, bool) { return r.Subject, true }, tableSubjects, indexID+"_prefix", prefix)
}

// versionOf returns one version, or nil.
func versionOf(txn *memdb.Txn, ws memdb.WatchSet, subject string, version int32) (*registryv1.ContractVersion, error) {
	return first(txn, ws, func(r *versionRow) *registryv1.ContractVersion { return r.V }, tableVersions, subject, int(version))
}

// subjectWithHistory reads a subject (nil when unknown) and its versions,
// oldest first, in txn.
func subjectWithHistory(txn *memdb.Txn, name string) (*registryv1.Subject, []*registryv1.ContractVersion, error) {
	subj, err := subjectOf(txn, nil, name)
	if err != nil {
		return nil, nil, err
	}
	history, err := versionsOf(txn, nil, name)
	if err != nil {
		return nil, nil, err
	}
	return subj, history, nil
}

// versionsOf lists a subject's versions, oldest first.
func versionsOf(txn *memdb.Txn, ws memdb.WatchSet, subject string) ([]*registryv1.ContractVersion, error) {
	// The compound prefix "shop.orders" also matches "shop.orders2"; keep
	// the subject's own rows only.
	return all(txn, ws, func(r *versionRow) (*registryv1.ContractVersion, bool) { return r.V, r.Subject == subject },
		tableVersions, indexID+"_prefix", subject)
}

// activeVersionOf returns the version a subject's summary names active, or
// nil when none is.
func activeVersionOf(txn *memdb.Txn, ws memdb.WatchSet, subject string) (*registryv1.ContractVersion, error) {
	s, err := subjectOf(txn, ws, subject)
	if err != nil || s == nil || s.GetActiveVersion() == 0 {
		return nil, err
	}
	return versionOf(txn, ws, subject, s.GetActiveVersion())
}

// versionActiveAt returns the version in effect at t: the highest version
// whose effective time is not after t. Effective times never decrease with
// the version number, so this is the one that had taken over by then. A
// version held past its effective time (see Config.Idmap) is not in effect
// while it waits; a SCHEDULED version answers for times after it, since
// it takes effect then.
func versionActiveAt(versions []*registryv1.ContractVersion, t time.Time) *registryv1.ContractVersion {
	var found *registryv1.ContractVersion
	for _, v := range versions {
		if v.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_SCHEDULED && v.GetActivationHold() != "" {
			continue
		}
		if !v.GetEffectiveTime().AsTime().After(t) {
			found = v
		}
	}
	return found
}

// modelVersions lists a canonical model's versions, oldest first.
func modelVersions(txn *memdb.Txn, ws memdb.WatchSet, name string) ([]*registryv1.CanonicalModelVersion, error) {
	// The prefix "commerce.order" also matches "commerce.orders".
	return all(txn, ws, func(r *modelRow) (*registryv1.CanonicalModelVersion, bool) { return r.M, r.Name == name },
		tableModels, indexID+"_prefix", name)
}

// latestModels returns the latest version of each canonical model, by name.
func latestModels(txn *memdb.Txn, ws memdb.WatchSet) ([]*registryv1.CanonicalModelVersion, error) {
	it, err := txn.Get(tableModels, indexID)
	if err != nil {
		return nil, fmt.Errorf("read model: canonical models: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*registryv1.CanonicalModelVersion
	for raw := it.Next(); raw != nil; raw = it.Next() {
		m := raw.(*modelRow).M
		if n := len(out); n > 0 && out[n-1].GetName() == m.GetName() {
			if m.GetVersion() > out[n-1].GetVersion() {
				out[n-1] = m
			}
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// consumerOf returns a consumer, or nil.
func consumerOf(txn *memdb.Txn, ws memdb.WatchSet, name string) (*registryv1.Consumer, error) {
	return first(txn, ws, func(r *consumerRow) *registryv1.Consumer { return r.C }, tableConsumers, name)
}

// consumersOf lists consumers by name; with subject set, only those reading
// it directly.
func consumersOf(txn *memdb.Txn, ws memdb.WatchSet, subject string) ([]*registryv1.Consumer, error) {
	index, args := indexID, []any{}
	if subject != "" {
		index, args = indexReads, []any{subject}
	}
	return all(txn, ws, func(r *consumerRow) (*registryv1.Consumer, bool) { return r.C, true }, tableConsumers, index, args...)
}

// eventFilter selects events by subject and type; empty lists select all.
type eventFilter struct {
	subjects map[string]bool
	types    map[registryv1.EventType]bool
}

func newEventFilter(subjects []string, types []registryv1.EventType) eventFilter {
	f := eventFilter{}
	if len(subjects) > 0 {
		f.subjects = map[string]bool{}
		for _, s := range subjects {
			f.subjects[s] = true
		}
	}
	if len(types) > 0 {
		f.types = map[registryv1.EventType]bool{}
		for _, t := range types {
			f.types[t] = true
		}
	}
	return f
}

func (f eventFilter) match(e *registryv1.Event) bool {
	if f.subjects != nil && !f.subjects[e.GetSubject()] {
		return false
	}
	return f.types == nil || f.types[e.GetType()]
}

// eventFloor returns the newest event sequence the model no longer holds.
func eventFloor(txn *memdb.Txn) (int64, error) {
	raw, err := txn.First(tableIndex, indexID, indexEventFloor)
	if err != nil {
		return 0, fmt.Errorf("read model: event floor: %w", err)
	}
	if raw == nil {
		return 0, nil
	}
	return int64(raw.(*indexEntry).Value), nil
}

// events returns up to limit matching events with a sequence above after,
// and the sequence of the last event examined (matching or not), so a
// caller resumes after it: from the store for those below the model's
// window, then from the model. ws fires when a new event is applied.
func (m *readModel) events(ctx context.Context, txn *memdb.Txn, ws memdb.WatchSet, after int64, limit int, f eventFilter) ([]*registryv1.Event, int64, error) {
	floor, err := eventFloor(txn)
	if err != nil {
		return nil, after, err
	}
	var out []*registryv1.Event
	for after < floor {
		evs, err := m.store.Events(ctx, after, int(min(int64(changeBatch), floor-after)))
		if err != nil {
			return nil, after, err
		}
		if len(evs) == 0 {
			return nil, after, fmt.Errorf("registry event log ends at %d below the read model's floor %d", after, floor)
		}
		for _, e := range evs {
			after = e.GetSequence()
			if f.match(e) {
				out = append(out, e)
				if len(out) == limit {
					return out, after, nil
				}
			}
		}
	}
	rest, last, err := eventsAfter(txn, ws, after, limit-len(out), f)
	if err != nil {
		return nil, after, err
	}
	return append(out, rest...), last, nil
}

// eventsAfter returns up to limit matching events of the model with a
// sequence above after, and the sequence of the last event examined
// (matching or not), so a caller resumes after it. ws fires when a new
// event is applied.
func eventsAfter(txn *memdb.Txn, ws memdb.WatchSet, after int64, limit int, f eventFilter) ([]*registryv1.Event, int64, error) {
	ch, _, err := txn.FirstWatch(tableIndex, indexID, tableEvents)
	if err != nil {
		return nil, after, fmt.Errorf("read model: events index: %w", err)
	}
	ws.Add(ch)
	it, err := txn.LowerBound(tableEvents, indexID, uint64(after+1))
	if err != nil {
		return nil, after, fmt.Errorf("read model: events after %d: %w", after, err)
	}
	last := after
	var out []*registryv1.Event
	for raw := it.Next(); raw != nil; raw = it.Next() {
		e := raw.(*eventRow).E
		last = e.GetSequence()
		if f.match(e) {
			out = append(out, e)
			if len(out) == limit {
				break
			}
		}
	}
	return out, last, nil
}

// dueVersions returns the SCHEDULED versions whose effective time is not
// after now, oldest version first per subject.
func dueVersions(txn *memdb.Txn, now time.Time) ([]*registryv1.ContractVersion, error) {
	return all(txn, nil, func(r *versionRow) (*registryv1.ContractVersion, bool) {
		return r.V, r.V.GetStatus() == registryv1.VersionStatus_VERSION_STATUS_SCHEDULED && !r.V.GetEffectiveTime().AsTime().After(now)
	}, tableVersions, indexID)
}
