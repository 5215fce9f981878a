package gate

import (
	"context"
	"time"

	"github.com/seamdata/seam/core/check"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Notification channels: a commit that adds rows wakes the readers of
// that channel on every replica (PostgreSQL LISTEN/NOTIFY, in-process on
// SQLite). A wake-up says "look again"; the tables are the truth.
const (
	// outboxChannel wakes the relay when a transaction queues registry events.
	outboxChannel = "seam_gate_outbox"
	// alertChannel wakes alert watchers when a transaction stores alerts.
	alertChannel = "seam_gate_alerts"
)

// gateStore is the gate's durable state. Handlers use only this interface
// and storeTx; the SQL behind it (sqlStore) serves the embedded SQLite
// file and PostgreSQL alike, and the conformance tests run on both.
type gateStore interface {
	// InTx runs fn in one transaction, retrying it on transient conflicts;
	// fn must have no effect outside tx.
	InTx(ctx context.Context, fn func(tx storeTx) error) error
	// Listen returns a channel that receives a value after each commit
	// that notified channel, on any replica; it closes when ctx ends.
	Listen(ctx context.Context, channel string) (<-chan struct{}, error)
	Close() error

	// Batch reads a batch's idempotency row.
	Batch(ctx context.Context, subject, partition, batchID string) (storedBatch, bool, error)

	Containment(ctx context.Context, subject string) (containment, bool, error)
	Containments(ctx context.Context) ([]containment, error)
	// SetContainment records a containment change, its audit entry and the
	// registry event announcing it, in one transaction.
	SetContainment(ctx context.Context, c containment, action string, event outboxEvent) error

	// PendingEvents returns up to limit undelivered registry events,
	// oldest first.
	PendingEvents(ctx context.Context, limit int) ([]outboxEvent, error)
	// MarkDelivered records that the registry took event seq as registrySeq.
	MarkDelivered(ctx context.Context, seq, registrySeq int64, at time.Time) error
	// QueueEventOnce queues an event unless one with its id was queued before.
	QueueEventOnce(ctx context.Context, e outboxEvent, at time.Time) error
	// RegistrySeq is the registry's sequence of a delivered event, or 0
	// while it waits in the outbox.
	RegistrySeq(ctx context.Context, eventID string) (int64, error)

	// PutContract keeps a contract version the registry returned, for
	// outages; SetActive records which version the registry last said was
	// active. Contract and ActiveContracts read them back.
	PutContract(ctx context.Context, subject string, version int32, contract []byte, at time.Time) error
	SetActive(ctx context.Context, subject string, version int32, at time.Time) error
	Contract(ctx context.Context, subject string, version int32) ([]byte, bool, error)
	ActiveContracts(ctx context.Context) (map[string]activeEntry, error)

	// ListQuarantine lists up to limit records matching f after the page
	// position (nil for the first page), in partition order, stopping after
	// the record whose raw bytes reach maxBytes.
	ListQuarantine(ctx context.Context, f quarantineFilter, after *quarantineKey, limit, maxBytes int) ([]*gatev1.QuarantinedRecord, error)
	QuarantinedRecord(ctx context.Context, id string) (*gatev1.QuarantinedRecord, bool, error)
	// QuarantineCounts counts records matching f grouped by by ("reason",
	// "check" or "partition").
	QuarantineCounts(ctx context.Context, f quarantineFilter, by string) ([]*gatev1.QuarantineCount, error)
	// Discard marks the held records of sel DISCARDED and audits it.
	Discard(ctx context.Context, sel discardSelection, reason, principal string, at time.Time) (int64, error)

	// Partitions reads the counters and field statistics of a subject's
	// partitions in [from, to], oldest first.
	Partitions(ctx context.Context, subject, from, to string) ([]*gatev1.PartitionMonitor, error)
	// Alerts lists up to limit alerts after a sequence, oldest first.
	Alerts(ctx context.Context, subject string, after int64, limit int) ([]*gatev1.Alert, error)

	// HeldPartitions lists the partitions of a window that hold records
	// (or that replayID released records in).
	HeldPartitions(ctx context.Context, subject, from, to, replayID string) ([]string, error)
	// HeldPage reads up to limit held records of a partition after
	// (afterBatch, afterIndex).
	HeldPage(ctx context.Context, subject, part, afterBatch string, afterIndex int64, limit int) ([]heldRow, error)
	// ReleasedBy returns the canonical records replayID released in a
	// partition.
	ReleasedBy(ctx context.Context, subject, part, replayID string) ([]*recordv1.CanonicalRecord, error)
}

// storeTx is what a handler may do inside one of the store's transactions.
type storeTx interface {
	// ClaimBatch inserts a batch's idempotency row; false when the key is
	// taken (another request or replica ingested the batch).
	ClaimBatch(ctx context.Context, k batchKey, b batchRow) (bool, error)
	// SetBatchAnswer stores the answer of a claimed batch.
	SetBatchAnswer(ctx context.Context, k batchKey, answer []byte) error
	InsertQuarantine(ctx context.Context, rows []quarantineRow) error
	// CountBatch adds a batch's counters to its partition.
	CountBatch(ctx context.Context, subject, part string, c partitionCounts, at time.Time) error
	AddFieldStats(ctx context.Context, subject, part string, fields map[string]check.FieldStats) error
	// PartitionStats reads the statistics of the partitions of subject in
	// [from, to], oldest first.
	PartitionStats(ctx context.Context, subject, from, to string) ([]string, map[string]*check.Stats, error)
	// BaselineFrom returns the oldest of the n partitions of subject before
	// part, or part itself when there are none.
	BaselineFrom(ctx context.Context, subject, part string, n int) (string, error)
	// MatchCounts reads a partition's identifier counts.
	MatchCounts(ctx context.Context, subject, part string) (checked, matched int64, err error)
	// InsertAlert stores an alert once under its dedupe key and sets its
	// sequence; false when it had been raised before.
	InsertAlert(ctx context.Context, a *gatev1.Alert, dedupe string) (bool, error)
	// NewShape records a failure shape of a field; false when it had been
	// seen before.
	NewShape(ctx context.Context, subject, field, shape, batchID string, at time.Time) (bool, error)
	Enqueue(ctx context.Context, e outboxEvent, at time.Time) error
	Containment(ctx context.Context, subject string) (containment, bool, error)
	WriteContainment(ctx context.Context, c containment, action string, event outboxEvent) error
	// Release marks a held record released by a replay with its canonical
	// record; false when it was no longer held.
	Release(ctx context.Context, r releaseRow) (bool, error)
	// CountReleased adds released records and identifier counts to a
	// partition (and its identifier field's statistics).
	CountReleased(ctx context.Context, subject, part, idField string, released, checked, matched int64, at time.Time) error
	// Notify wakes the listeners of channel once the transaction commits.
	Notify(ctx context.Context, channel string) error
}

// batchKey is a batch's idempotency key.
type batchKey struct{ subject, part, batchID string }

// batchRow is what an idempotency row records about a batch.
type batchRow struct {
	status                          gatev1.BatchStatus
	version                         int32
	received, accepted, quarantined int64
	at                              time.Time
}

// storedBatch is an ingested batch's idempotency row.
type storedBatch struct {
	status  gatev1.BatchStatus
	resp    *gatev1.IngestResponse
	blocked *gatev1.BlockedDetail
}

// containment is a source's containment state.
type containment struct {
	Subject   string
	Contained bool
	Reason    string
	Principal string
	Changed   time.Time
	Automatic bool
}

// outboxEvent is an event waiting to be delivered to the registry.
type outboxEvent struct {
	Seq     int64
	EventID string
	Payload []byte
}

// partitionCounts are one batch's additions to its partition's counters.
type partitionCounts struct {
	received, accepted, quarantined, blocked int64
	idChecked, idMatched                     int64
}

// quarantineRow is one record set aside by a batch.
type quarantineRow struct {
	id, subject, part, batchID string
	index, position            int64
	version                    int32
	format                     recordv1.Format
	// raw is the record's bytes, or their first bytes when rawSize is
	// larger; rawSHA256 is the hex digest of all of them.
	raw       []byte
	rawSize   int64
	rawSHA256 string
	reasons   []*recordv1.RecordError
	idState   int
	at        time.Time
}

// quarantineFilter selects quarantined records; empty fields match all.
type quarantineFilter struct {
	subject, from, to string
	// reason is an error code's short name ("ID_UNMAPPED").
	reason  string
	check   string
	version int32
	state   gatev1.QuarantineState
}

// quarantineKey is a record's position in list order, for paging.
type quarantineKey struct {
	subject, part, batchID string
	index                  int64
}

// discardSelection is what a discard applies to: ids (when set) or a filter.
type discardSelection struct {
	ids    []string
	filter quarantineFilter
	// subject names the selection in the audit trail.
	subject string
}

// heldRow is a held record read for a replay.
type heldRow struct {
	id       string
	part     string
	batchID  string
	index    int64
	position int64
	format   recordv1.Format
	raw      []byte
	idState  int
	// truncated is set when raw is only the first bytes of the record.
	truncated bool
}

// releaseRow is a held record a replay releases.
type releaseRow struct {
	id, replayID, principal, recordID string
	canonical                         []byte
	at                                time.Time
}
