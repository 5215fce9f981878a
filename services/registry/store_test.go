package registry

import (
	"context"
	"errors"
	"sync"
	"testing"

	memdb "github.com/hashicorp/go-memdb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestStoreConformance is the Store contract, run on SQLite and PostgreSQL.
func TestStoreConformance(t *testing.T) {
	storagetest.EachParallel(t, func(t *testing.T, url string) {
		ctx := context.Background()
		store := openStore(t, url)
		t.Cleanup(func() { _ = store.Close() })

		t.Run("migrations are idempotent", func(t *testing.T) {
			again, err := OpenStore(ctx, url)
			if err != nil {
				t.Fatalf("second OpenStore: %v", err)
			}
			if err := again.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})

		t.Run("concurrent writers get gapless sequences", func(t *testing.T) {
			const writers, each = 6, 15
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for range each {
						err := store.Write(ctx, func(tx StoreTx) error {
							return tx.AppendEvent(&registryv1.Event{Type: registryv1.EventType_EVENT_TYPE_ALERT_RAISED, Subject: "s", Message: string(rune('a' + w))})
						})
						if err != nil {
							t.Errorf("Write: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			evs, err := store.Events(ctx, 0, 1000)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			for i, e := range evs {
				if e.GetSequence() != int64(i+1) {
					t.Fatalf("event %d has sequence %d, want %d (gapless, in commit order)", i, e.GetSequence(), i+1)
				}
			}
			if len(evs) != writers*each {
				t.Fatalf("events = %d, want %d", len(evs), writers*each)
			}
			changes, err := store.Changes(ctx, 0, 1000)
			if err != nil {
				t.Fatalf("Changes: %v", err)
			}
			last, err := store.LastChange(ctx)
			if err != nil || last != int64(len(changes)) || changes[len(changes)-1].Sequence != last {
				t.Fatalf("LastChange = %d (%v), %d change records; want equal and gapless", last, err, len(changes))
			}
		})

		t.Run("a failed write leaves nothing", func(t *testing.T) {
			before, err := store.LastChange(ctx)
			if err != nil {
				t.Fatalf("LastChange: %v", err)
			}
			boom := errors.New("boom")
			err = store.Write(ctx, func(tx StoreTx) error {
				if err := tx.PutConsumer(&registryv1.Consumer{Name: "ghost"}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Write error = %v, want boom", err)
			}
			after, err := store.LastChange(ctx)
			if err != nil || after != before {
				t.Errorf("LastChange after a failed write = %d (%v), want %d", after, err, before)
			}
			if c, err := store.Consumer(ctx, "ghost"); err != nil || c != nil {
				t.Errorf("Consumer(ghost) after a failed write = %v, %v; want nil, nil", c, err)
			}
		})

		t.Run("status changes are conditional", func(t *testing.T) {
			v := &registryv1.ContractVersion{Subject: "s.cond", Version: 1, Status: registryv1.VersionStatus_VERSION_STATUS_SCHEDULED,
				EffectiveTime: timestamppb.Now()}
			if err := store.Write(ctx, func(tx StoreTx) error {
				if err := tx.PutSubject(&registryv1.Subject{Name: "s.cond", LatestVersion: 1}); err != nil {
					return err
				}
				return tx.InsertVersion(v)
			}); err != nil {
				t.Fatalf("Write: %v", err)
			}
			var wins []bool
			for range 2 {
				if err := store.Write(ctx, func(tx StoreTx) error {
					ok, err := tx.SetVersionStatus("s.cond", 1, []registryv1.VersionStatus{registryv1.VersionStatus_VERSION_STATUS_SCHEDULED},
						registryv1.VersionStatus_VERSION_STATUS_ACTIVE)
					wins = append(wins, ok)
					return err
				}); err != nil {
					t.Fatalf("Write: %v", err)
				}
			}
			if wins[0] != true || wins[1] != false {
				t.Errorf("conditional activation results = %v, want [true false]", wins)
			}
			_, vs, err := store.Subject(ctx, "s.cond")
			if err != nil || len(vs) != 1 || vs[0].GetStatus() != registryv1.VersionStatus_VERSION_STATUS_ACTIVE {
				t.Errorf("versions = %v (%v), want one ACTIVE", vs, err)
			}
			if err := store.Write(ctx, func(tx StoreTx) error { return tx.InsertVersion(v) }); err == nil {
				t.Errorf("inserting s.cond v1 twice succeeded, want an error")
			}
		})

		t.Run("consumers replace and delete", func(t *testing.T) {
			for _, owner := range []string{"a", "b"} {
				if err := store.Write(ctx, func(tx StoreTx) error {
					return tx.PutConsumer(&registryv1.Consumer{Name: "c1", Owner: owner})
				}); err != nil {
					t.Fatalf("PutConsumer: %v", err)
				}
			}
			if c, err := store.Consumer(ctx, "c1"); err != nil || c.GetOwner() != "b" {
				t.Errorf("Consumer(c1) = %v, %v; want owner b", c, err)
			}
			var deleted []bool
			for range 2 {
				if err := store.Write(ctx, func(tx StoreTx) error {
					ok, err := tx.DeleteConsumer("c1")
					deleted = append(deleted, ok)
					return err
				}); err != nil {
					t.Fatalf("DeleteConsumer: %v", err)
				}
			}
			if !deleted[0] || deleted[1] {
				t.Errorf("DeleteConsumer results = %v, want [true false]", deleted)
			}
		})

		t.Run("schema ids are one per format and text, distinct, and kept", func(t *testing.T) { schemaIDs(t, url) })
	})
}

// schemaIDs is the schema id contract: one id per format and text, kept
// across reopening, distinct under concurrent writers. It runs on a store
// of its own on url, since it closes and reopens it.
func schemaIDs(t *testing.T, url string) {
	ctx := context.Background()
	store := openStore(t, url)
	avro := registryv1.ContractFormat_CONTRACT_FORMAT_AVRO
	jsonSchema := registryv1.ContractFormat_CONTRACT_FORMAT_JSON_SCHEMA
	idOf := func(s Store, f registryv1.ContractFormat, text string) int32 {
		t.Helper()
		var id int32
		if err := s.Write(ctx, func(tx StoreTx) error {
			var err error
			id, err = tx.SchemaID(f, text)
			return err
		}); err != nil {
			t.Fatalf("SchemaID: %v", err)
		}
		return id
	}
	a := idOf(store, avro, `{"type":"string"}`)
	if again := idOf(store, avro, `{"type":"string"}`); again != a {
		t.Errorf("the same schema got id %d, then %d", a, again)
	}
	if other := idOf(store, jsonSchema, `{"type":"string"}`); other == a {
		t.Errorf("the same text as JSON Schema got the Avro schema's id %d", a)
	}
	var wg sync.WaitGroup
	ids := make([]int32, 8)
	for i := range ids {
		wg.Go(func() { ids[i] = idOf(store, avro, `{"n":`+string(rune('0'+i))+`}`) })
	}
	wg.Wait()
	seen := map[int32]bool{a: true}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("id %d given twice among %v", id, ids)
		}
		seen[id] = true
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	store = openStore(t, url)
	t.Cleanup(func() { _ = store.Close() })
	got, err := store.Schema(ctx, a)
	if err != nil || got.GetText() != `{"type":"string"}` || got.GetFormat() != avro {
		t.Fatalf("Schema(%d) after reopening: got %v, %v", a, got, err)
	}
	byText, err := store.SchemaByText(ctx, avro, `{"type":"string"}`)
	if err != nil || byText.GetId() != a {
		t.Fatalf("SchemaByText: got %v, %v; want id %d", byText, err, a)
	}
	if none, err := store.Schema(ctx, 1<<30); err != nil || none != nil {
		t.Fatalf("Schema of an unknown id: got %v, %v; want nil, nil", none, err)
	}
	if got := idOf(store, avro, `{"type":"string"}`); got != a {
		t.Errorf("after reopening the schema got id %d, want %d", got, a)
	}
}

// TestReadModelSchema builds the go-memdb schema and checks every table
// has the id index go-memdb requires.
func TestReadModelSchema(t *testing.T) {
	t.Parallel()
	schema, err := readModelSchema()
	if err != nil {
		t.Fatalf("readModelSchema: %v", err)
	}
	if _, err := memdb.NewMemDB(schema); err != nil {
		t.Fatalf("NewMemDB: %v", err)
	}
	for _, name := range []string{tableSubjects, tableVersions, tableModels, tableConsumers, tableEvents, tableIndex} {
		table, ok := schema.Tables[name]
		if !ok {
			t.Errorf("table %q missing", name)
			continue
		}
		if _, ok := table.Indexes[indexID]; !ok {
			t.Errorf("table %q has no %q index", name, indexID)
		}
	}
	if got, want := len(schema.Tables), len(schemaFuncs); got != want {
		t.Errorf("tables = %d, want %d (one per schema func)", got, want)
	}
}
