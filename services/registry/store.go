package registry

import (
	"context"

	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Entity names the kind of state a change record points at. The read model
// reloads the named entity when it follows the change log.
type Entity string

// Entities recorded in the change log.
const (
	EntitySubject  Entity = "subject"
	EntityModel    Entity = "model"
	EntityConsumer Entity = "consumer"
	EntityEvent    Entity = "event"
)

// ChangeRecord is one entry of the store's ordered change log: sequence
// Sequence changed the entity Key of kind Entity.
type ChangeRecord struct {
	Sequence int64
	Entity   Entity
	Key      string
}

// Store is the registry's durable state. Every write goes through Write, so
// each change is logged in the transaction that makes it; readers follow the
// log with Changes.
type Store interface {
	// Write runs fn in one transaction holding the registry's write lock, so
	// event and change sequences are assigned in commit order without gaps.
	// fn may run more than once when the transaction is retried; it must not
	// keep side effects outside tx. When Write returns nil, everything fn
	// wrote is durable.
	Write(ctx context.Context, fn func(tx StoreTx) error) error

	// LastChange returns the sequence of the newest change record (0 when none).
	LastChange(ctx context.Context) (int64, error)
	// Changes returns up to limit change records with a sequence above after,
	// oldest first.
	Changes(ctx context.Context, after int64, limit int) ([]ChangeRecord, error)
	// Subject returns a subject and its versions in version order; the subject
	// is nil when it is not registered.
	Subject(ctx context.Context, name string) (*registryv1.Subject, []*registryv1.ContractVersion, error)
	// SubjectNames returns the names of all subjects.
	SubjectNames(ctx context.Context) ([]string, error)
	// Model returns the versions of a canonical model in version order (none
	// when unknown).
	Model(ctx context.Context, name string) ([]*registryv1.CanonicalModelVersion, error)
	// ModelNames returns the names of all canonical models.
	ModelNames(ctx context.Context) ([]string, error)
	// Consumer returns a consumer, or nil when there is none of that name.
	Consumer(ctx context.Context, name string) (*registryv1.Consumer, error)
	// Consumers returns every consumer.
	Consumers(ctx context.Context) ([]*registryv1.Consumer, error)
	// Events returns up to limit events with a sequence above after, oldest
	// first.
	Events(ctx context.Context, after int64, limit int) ([]*registryv1.Event, error)
	// LastEvent returns the sequence of the newest event (0 when none).
	LastEvent(ctx context.Context) (int64, error)
	// History returns the audit entries of a subject, oldest first.
	History(ctx context.Context, subject string) ([]*registryv1.AuditEntry, error)
	// Schema returns the schema document with a global id, or nil.
	Schema(ctx context.Context, id int32) (*registryv1.Schema, error)
	// SchemaByText returns the schema document of a format with a
	// normalized text, or nil when it was never registered.
	SchemaByText(ctx context.Context, format registryv1.ContractFormat, text string) (*registryv1.Schema, error)
	// Wake returns a channel that receives a value after any process commits
	// a write to this store; it closes when ctx ends.
	Wake(ctx context.Context) (<-chan struct{}, error)
	// Close releases the store.
	Close() error
}

// StoreTx is the view of one write transaction. Reads see everything
// committed before the write lock was taken plus this transaction's writes.
type StoreTx interface {
	// Subject returns a subject and its versions, or a nil subject.
	Subject(name string) (*registryv1.Subject, []*registryv1.ContractVersion, error)
	// PutSubject inserts or replaces a subject's summary.
	PutSubject(s *registryv1.Subject) error
	// InsertVersion adds a new contract version; adding an existing
	// (subject, version) fails.
	InsertVersion(v *registryv1.ContractVersion) error
	// SetVersionStatus moves a version to status to if its current status is
	// one of from, and reports whether it did. The condition is evaluated by
	// the database, so of two replicas racing only one sees true.
	SetVersionStatus(subject string, version int32, from []registryv1.VersionStatus, to registryv1.VersionStatus) (bool, error)
	// UpdateVersion reads a version, lets fn change it and, when fn reports
	// a change, stores it. The status column is not changed: status moves
	// only through SetVersionStatus. It reports whether the version changed.
	UpdateVersion(subject string, version int32, fn func(v *registryv1.ContractVersion) bool) (bool, error)
	// Model returns the versions of a canonical model.
	Model(name string) ([]*registryv1.CanonicalModelVersion, error)
	// InsertModelVersion adds a new canonical model version.
	InsertModelVersion(m *registryv1.CanonicalModelVersion) error
	// Consumers returns every consumer.
	Consumers() ([]*registryv1.Consumer, error)
	// PutConsumer inserts or replaces a consumer.
	PutConsumer(c *registryv1.Consumer) error
	// DeleteConsumer removes a consumer and reports whether it existed.
	DeleteConsumer(name string) (bool, error)
	// AppendEvent assigns e the next event sequence and appends it to the
	// event log.
	AppendEvent(e *registryv1.Event) error
	// SchemaID returns the global id of a schema document (format and
	// normalized text), numbering it when it is new. Ids are never reused.
	SchemaID(format registryv1.ContractFormat, text string) (int32, error)
	// Audit assigns a the next audit sequence and appends it to its subject's
	// history.
	Audit(subject string, a *registryv1.AuditEntry) error
}
