package registry

import (
	"context"
	"sync"
	"testing"

	"github.com/seamdata/seam/platform/storage/storagetest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestSchemaIDs is the schema id contract on SQLite and PostgreSQL: one id
// per format and text, kept across reopening, distinct and gapless under
// concurrent writers.
func TestSchemaIDs(t *testing.T) {
	t.Parallel()
	storagetest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
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
	})
}
