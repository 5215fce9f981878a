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

// tableSchema is the table name with indexes, each under its name.
func tableSchema(name string, indexes ...*memdb.IndexSchema) *memdb.TableSchema {
	t := &memdb.TableSchema{Name: name, Indexes: make(map[string]*memdb.IndexSchema, len(indexes))}
	for _, ix := range indexes {
		t.Indexes[ix.Name] = ix
	}
	return t
}

// idIndex is a table's unique primary index.
func idIndex(indexer memdb.Indexer) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: indexID, Unique: true, Indexer: indexer}
}

// stringIndex is a non-unique index over a string field.
func stringIndex(name, field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: name, Indexer: &memdb.StringFieldIndex{Field: field}}
}

// nameAndVersion indexes rows by the string field and their Version.
func nameAndVersion(field string) memdb.Indexer {
	return &memdb.CompoundIndex{Indexes: []memdb.Indexer{
		&memdb.StringFieldIndex{Field: field},
		&memdb.IntFieldIndex{Field: "Version"},
	}}
}

// subjectRow is a subject summary as the read model holds it.
type subjectRow struct {
	Name    string
	Subject *registryv1.Subject
}

func subjectsTableSchema() *memdb.TableSchema {
	return tableSchema(tableSubjects, idIndex(&memdb.StringFieldIndex{Field: "Name"}))
}

// versionRow is one contract version. Rows are replaced, never modified, so
// a reader holding one keeps a consistent value.
type versionRow struct {
	Subject string
	Version int
	V       *registryv1.ContractVersion
}

func versionsTableSchema() *memdb.TableSchema {
	return tableSchema(tableVersions, idIndex(nameAndVersion("Subject")), stringIndex(indexSubject, "Subject"))
}

// modelRow is one canonical model version.
type modelRow struct {
	Name    string
	Version int
	M       *registryv1.CanonicalModelVersion
}

func modelsTableSchema() *memdb.TableSchema {
	return tableSchema(tableModels, idIndex(nameAndVersion("Name")), stringIndex(indexName, "Name"))
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
	return tableSchema(tableConsumers,
		idIndex(&memdb.StringFieldIndex{Field: "Name"}),
		&memdb.IndexSchema{Name: indexReads, AllowMissing: true, Indexer: &memdb.StringSliceFieldIndex{Field: "Subjects"}},
		&memdb.IndexSchema{Name: indexDatasets, AllowMissing: true, Indexer: &memdb.StringSliceFieldIndex{Field: "Datasets"}})
}

// eventRow is one event of the ordered log.
type eventRow struct {
	Sequence uint64
	E        *registryv1.Event
}

func eventsTableSchema() *memdb.TableSchema {
	return tableSchema(tableEvents, idIndex(&memdb.UintFieldIndex{Field: "Sequence"}))
}

// indexEntry records, per table, the store change sequence that last
// modified it; watchers of the events row learn of new events.
type indexEntry struct {
	Key   string
	Value uint64
}

func indexTableSchema() *memdb.TableSchema {
	return tableSchema(tableIndex, idIndex(&memdb.StringFieldIndex{Field: "Key"}))
}
