package registry

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Table names of the read model.
const (
	tableSubjects  = "subjects"
	tableVersions  = "versions"
	tableModels    = "models"
	tableConsumers = "consumers"
	tableEvents    = "events"
	tableIndex     = "index"
)

// Index names of the read model.
const (
	indexID       = "id"
	indexSubject  = "subject"
	indexName     = "name"
	indexReads    = "reads"
	indexDatasets = "datasets"
)

// schemaFuncs builds the read model's tables, one function per table as in
// nomad's state schema, so each table's indexes are read in one place.
var schemaFuncs = []func() *memdb.TableSchema{
	subjectsTableSchema,
	versionsTableSchema,
	modelsTableSchema,
	consumersTableSchema,
	eventsTableSchema,
	indexTableSchema,
}

// readModelSchema returns the go-memdb schema of the registry read model.
func readModelSchema() (*memdb.DBSchema, error) {
	db := &memdb.DBSchema{Tables: make(map[string]*memdb.TableSchema)}
	for _, fn := range schemaFuncs {
		t := fn()
		if _, ok := db.Tables[t.Name]; ok {
			return nil, fmt.Errorf("registry read model: table %q defined twice", t.Name)
		}
		db.Tables[t.Name] = t
	}
	if err := db.Validate(); err != nil {
		return nil, fmt.Errorf("registry read model schema: %w", err)
	}
	return db, nil
}

// subjectRow is a subject summary as the read model holds it.
type subjectRow struct {
	Name    string
	Subject *registryv1.Subject
}

func subjectsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableSubjects,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

// versionRow is one contract version. Rows are replaced, never modified, so
// a reader holding one keeps a consistent value.
type versionRow struct {
	Subject string
	Version int
	V       *registryv1.ContractVersion
}

func versionsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableVersions,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Subject"},
				&memdb.IntFieldIndex{Field: "Version"},
			}}},
			indexSubject: {Name: indexSubject, Indexer: &memdb.StringFieldIndex{Field: "Subject"}},
		},
	}
}

// modelRow is one canonical model version.
type modelRow struct {
	Name    string
	Version int
	M       *registryv1.CanonicalModelVersion
}

func modelsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableModels,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Name"},
				&memdb.IntFieldIndex{Field: "Version"},
			}}},
			indexName: {Name: indexName, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

// consumerRow is a consumer with its inputs flattened for the lineage
// indexes: Subjects it reads directly and Datasets it reads.
type consumerRow struct {
	Name     string
	Subjects []string
	Datasets []string
	C        *registryv1.Consumer
}

func newConsumerRow(c *registryv1.Consumer) *consumerRow {
	row := &consumerRow{Name: c.GetName(), C: c}
	for _, in := range c.GetInputs() {
		if s := in.GetSubject(); s != "" {
			row.Subjects = append(row.Subjects, s)
		}
		if d := in.GetDataset(); d != "" {
			row.Datasets = append(row.Datasets, d)
		}
	}
	return row
}

func consumersTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableConsumers,
		Indexes: map[string]*memdb.IndexSchema{
			indexID:       {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
			indexReads:    {Name: indexReads, AllowMissing: true, Indexer: &memdb.StringSliceFieldIndex{Field: "Subjects"}},
			indexDatasets: {Name: indexDatasets, AllowMissing: true, Indexer: &memdb.StringSliceFieldIndex{Field: "Datasets"}},
		},
	}
}

// eventRow is one event of the ordered log.
type eventRow struct {
	Sequence uint64
	E        *registryv1.Event
}

func eventsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableEvents,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.UintFieldIndex{Field: "Sequence"}},
		},
	}
}

// indexEntry records, per table, the store change sequence that last
// modified it; watchers of the events row learn of new events.
type indexEntry struct {
	Key   string
	Value uint64
}

func indexTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableIndex,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		},
	}
}
