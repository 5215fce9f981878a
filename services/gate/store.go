package gate

import (
	"context"
	"time"

	"github.com/seamdata/seam/core/check"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Notification channels: a commit that adds rows wakes the readers of
// that channel on every replica (PostgreSQL LISTEN/NOTIFY, in-process on
// SQLite). A wake-up says "look again"; the tables are the truth.
const (
	// outboxChannel wakes the relay when a transaction queues registry events.
	outboxChannel = "seam_gate_outbox"
	// alertChannel wakes alert watchers when a transaction stores alerts.
	alertChannel = "seam_gate_alerts"
	// partitionChannel wakes partition waiters when a partition is sealed.
	partitionChannel = "seam_gate_partitions"
)

// gateStore is the gate's durable state. Handlers use only this interface
// and storeTx; the SQL behind it (sqlStore) serves the embedded SQLite
// file and PostgreSQL alike, and the conformance tests run on both. It is
// the union of one interface per role, so a part of the gate that plays
// one role can be given that role's alone.
type gateStore interface {
	// InTx runs fn in one transaction, retrying it on transient conflicts;
	// fn must have no effect outside tx.
	InTx(ctx context.Context, fn func(tx storeTx) error) error
	// InPartitionTx runs fn, a batch's commit to a partition of subject, as
	// InTx does; on PostgreSQL in one round trip when it can (see
	// store_sql_pipe.go).
	InPartitionTx(ctx context.Context, subject, part string, fn func(tx storeTx) error) error
	// Listen returns a channel that receives a value after each commit
	// that notified channel, on any replica; it closes when ctx ends.
	Listen(ctx context.Context, channel string) (<-chan struct{}, error)
	Close() error

	// FoldLegacyFields folds the field statistics kept by schema 4 into
	// the units' figures, once.
	FoldLegacyFields(ctx context.Context) error
	// Expire deletes what retention no longer keeps: canonical answers
	// past their time, idempotency rows created before batchesBefore, and
	// released, discarded or superseded quarantine settled before
	// quarantineBefore. It returns how many rows it deleted.
	Expire(ctx context.Context, now, batchesBefore, quarantineBefore time.Time) (int64, error)

	partitionStore
	alertStore
	quarantineStore
	containmentStore
	outboxStore
	contractStore
}

// partitionStore reads what ingestion wrote: batches and their answers,
// partitions, units and watermarks.
type partitionStore interface {
	// Batch reads a batch's idempotency row.
	Batch(ctx context.Context, k batchKey) (storedBatch, bool, error)
	// Answer reads the canonical records kept for a batch's answer; false
	// when none are kept (asked summary-only, or expired).
	Answer(ctx context.Context, k batchKey, now time.Time) (answerForm, []byte, bool, error)
	// Head reads a partition's row and its latest unit (or the unit of an
	// amendment); false when the partition was never sent.
	Head(ctx context.Context, subject, part string, amendment *int32) (partRow, unitRow, bool, error)
	// Watermark reads a subject's watermark; false when it has none.
	Watermark(ctx context.Context, subject string) (time.Time, bool, error)
	// OpenBefore lists the partitions of subject named before cutoff whose
	// original unit (amendment 0) is open.
	OpenBefore(ctx context.Context, subject, cutoff string) ([]string, error)
	// Units reads the partitions of a subject in [from, to] with the
	// units of their current sending, oldest first.
	Units(ctx context.Context, subject, from, to string) ([]partUnits, error)
	// LatestSealed reads up to n sealed units of subject, the latest
	// partition (by name, then amendment) first.
	LatestSealed(ctx context.Context, subject string, n int) ([]sealedUnit, error)
	// UnitMatchRates reads a unit's match rate per identifier field.
	UnitMatchRates(ctx context.Context, pid int64, amendment int32) (map[string]float64, error)
}

// alertStore reads the alerts checks raised.
type alertStore interface {
	// PartitionAlerts lists the alerts raised for a partition's amendment
	// in its current sending.
	PartitionAlerts(ctx context.Context, subject, part string, amendment int32, since time.Time) ([]*gatev1.Alert, error)
	// Alerts lists up to limit alerts matching f after a sequence, oldest
	// first.
	Alerts(ctx context.Context, f alertFilter, after int64, limit int) ([]*gatev1.Alert, error)
	// Alert reads one alert; false when no alert has the sequence.
	Alert(ctx context.Context, seq int64) (*gatev1.Alert, bool, error)
	// OpenAlertCounts counts the OPEN alerts (raised, neither acknowledged
	// nor resolved) by subject and severity, for the gauges.
	OpenAlertCounts(ctx context.Context) ([]openAlertCount, error)
}

// quarantineStore reads and settles the quarantined records: listing,
// counting, discarding, and the held pages a replay releases.
type quarantineStore interface {
	// QuarantineReasons reads the reasons of a batch's quarantined records
	// still kept, by record index.
	QuarantineReasons(ctx context.Context, k batchKey) (map[int64][]*recordv1.RecordError, error)
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
	// HeldPartitions lists the partitions of a window that hold records
	// (or that replayID released records in).
	HeldPartitions(ctx context.Context, subject, from, to, replayID string) ([]string, error)
	// HeldPage reads up to limit held records of a partition after
	// (afterBatch, afterIndex), with the amendment each came in.
	HeldPage(ctx context.Context, subject, part, afterBatch string, afterIndex int64, limit int) ([]heldRow, error)
	// ReleasedBy returns the canonical records replayID released in a
	// partition.
	ReleasedBy(ctx context.Context, subject, part, replayID string) ([]*recordv1.CanonicalRecord, error)
}

// containmentStore keeps the subjects contained and their audit.
type containmentStore interface {
	Containment(ctx context.Context, subject string) (containment, bool, error)
	Containments(ctx context.Context) ([]containment, error)
	// SetContainment records a containment change, its audit entry and the
	// registry event announcing it, in one transaction.
	SetContainment(ctx context.Context, c containment, action string, event outboxEvent) error
}

// outboxStore is the outbox of registry events the relay delivers.
type outboxStore interface {
	// PendingEvents returns up to limit undelivered registry events,
	// oldest first.
	PendingEvents(ctx context.Context, limit int) ([]outboxEvent, error)
	// OutboxBacklog counts the undelivered registry events and returns
	// when the oldest was queued (zero when none wait).
	OutboxBacklog(ctx context.Context) (int64, time.Time, error)
	// MarkDelivered records that the registry took event seq as registrySeq.
	MarkDelivered(ctx context.Context, seq, registrySeq int64, at time.Time) error
	// QueueEventOnce queues an event unless one with its id was queued before.
	QueueEventOnce(ctx context.Context, e outboxEvent, at time.Time) error
	// RegistrySeq is the registry's sequence of a delivered event, or 0
	// while it waits in the outbox.
	RegistrySeq(ctx context.Context, eventID string) (int64, error)
}

// contractStore keeps the contract versions the registry returned, so a
// registry outage does not stop ingestion (contracts uses it alone).
type contractStore interface {
	// PutContract keeps a contract version the registry returned, for
	// outages; SetActive records which version the registry last said was
	// active. Contract and ActiveContracts read them back.
	PutContract(ctx context.Context, v storedVersion, contract []byte, at time.Time) error
	SetActive(ctx context.Context, subject string, version int32, at time.Time) error
	Contract(ctx context.Context, subject string, version int32) ([]byte, bool, error)
	// Versions lists what the store knows of a subject's versions.
	Versions(ctx context.Context, subject string) ([]storedVersion, error)
	ActiveContracts(ctx context.Context) (map[string]activeEntry, error)
}

// storeTx is what a handler may do inside one of the store's transactions.
type storeTx interface {
	// ClaimBatch inserts a batch's idempotency row (its digest and time);
	// false when the key is taken (another request or replica ingested the
	// batch).
	ClaimBatch(ctx context.Context, k batchKey, digest []byte, at time.Time) (bool, error)
	// FinishBatch records a claimed batch's verdicts.
	FinishBatch(ctx context.Context, k batchKey, b batchRow) error
	// PutAnswer keeps a batch's canonical records, encoded in form
	// (encodeAnswer), until expires.
	PutAnswer(ctx context.Context, k batchKey, form answerForm, records []byte, expires time.Time) error
	InsertQuarantine(ctx context.Context, rows []quarantineRow) error
	// HeldDigests returns which of the SHA-256 digests (hex) of raw
	// records a record held in the partition has.
	HeldDigests(ctx context.Context, subject, part string, digests []string) (map[string]bool, error)

	// LockPartition reads a partition's row, locking it until the
	// transaction ends (batches, seals and replays of one partition go one
	// after the other); with create it creates the row of a partition
	// never sent. false when it does not exist.
	LockPartition(ctx context.Context, subject, part string, create bool, at time.Time) (partRow, bool, error)
	// SetPartition writes a locked partition's attempt and latest amendment.
	SetPartition(ctx context.Context, p partRow, at time.Time) error
	// Unit reads a unit; false when it does not exist.
	Unit(ctx context.Context, pid int64, amendment int32) (unitRow, bool, error)
	// PutUnit writes a unit whole.
	PutUnit(ctx context.Context, u unitRow) error
	// Supersede drops a partition's units and keys and marks its held
	// quarantine SUPERSEDED, for a new sending; it returns how many held
	// records it superseded.
	Supersede(ctx context.Context, p partRow, at time.Time) (int64, error)
	// InsertKeys adds contract key hashes to a partition's key index and
	// reports, per hash, whether it was new (false: a duplicate). Call it
	// with the partition locked (LockPartition).
	InsertKeys(ctx context.Context, pid int64, hashes [][]byte) ([]bool, error)
	// Trailing reads, for each statistical check named in want, the
	// figures of the want[name] latest sealed partitions of subject before
	// part that may serve as its baseline (all units of each, in their
	// current sending), oldest first: those whose first unit passed the
	// check and held no contained record (see SetBaselineSkips).
	Trailing(ctx context.Context, subject, part string, want map[string]int) (check.Trailing, error)
	// SetBaselineSkips records the checks whose baseline a partition may
	// not serve, replacing what its last judgment recorded: the
	// statistical checks it failed, or allChecks when it held contained
	// records.
	SetBaselineSkips(ctx context.Context, pid int64, checks []string) error
	// AdvanceWatermark raises a subject's watermark to t; it never lowers
	// it, and takes no lock when t is not later.
	AdvanceWatermark(ctx context.Context, subject string, t time.Time) error
	// InsertAlert stores an alert once under its dedupe key and sets its
	// sequence; false when it had been raised before.
	InsertAlert(ctx context.Context, a *gatev1.Alert, dedupe string) (bool, error)
	// NewShape records a failure shape of a field; false when it had been
	// seen before.
	NewShape(ctx context.Context, subject, field, shape, batchID string, at time.Time) (bool, error)
	// LearnedShapes reads the value shapes learned for a subject's fields.
	LearnedShapes(ctx context.Context, subject string) (map[string]learnedField, error)
	// LearnShapes adds the shapes of a sealed partition's accepted values,
	// under the partition's contract version, to what the subject showed.
	LearnShapes(ctx context.Context, subject, part string, version int32, learned []shapeFigure) error
	// HoldingAlerts lists the alerts of a unit (raised since it opened)
	// that still hold: OPEN or ACKNOWLEDGED.
	HoldingAlerts(ctx context.Context, subject, part string, amendment int32, since time.Time) ([]*gatev1.Alert, error)
	// SetAlertState acknowledges or resolves an alert and returns it;
	// false when it was not in a state that moves there (an acknowledged
	// or resolved alert is not acknowledged again, a resolved one not
	// resolved again). errAlertNotFound when no alert has seq.
	SetAlertState(ctx context.Context, seq int64, state gatev1.AlertState, by, reason string, at time.Time) (*gatev1.Alert, bool, error)
	Enqueue(ctx context.Context, e outboxEvent, at time.Time) error
	// Audit appends an entry to the gate's audit trail.
	Audit(ctx context.Context, at time.Time, principal, subject, action, detail string) error
	Containment(ctx context.Context, subject string) (containment, bool, error)
	WriteContainment(ctx context.Context, c containment, action string, event outboxEvent) error
	// Rewrite replaces a held record's reasons with those a replay found,
	// which its partition's figures count from then on (the replay
	// changes them alike).
	Rewrite(ctx context.Context, id string, reasons []*recordv1.RecordError) error
	// Release marks a held record released by a replay with its canonical
	// record; false when it was no longer held.
	Release(ctx context.Context, r releaseRow) (bool, error)
	// Notify wakes the listeners of channel once the transaction commits.
	Notify(ctx context.Context, channel string) error
}

// batchKey is a batch's idempotency key.
type batchKey struct{ subject, part, batchID string }

// batchRow is what an idempotency row records about a batch: its summary,
// where it went, and its per-record verdicts in compact form (verdicts.go);
// the canonical records, when asked for, are kept apart (PutAnswer).
type batchRow struct {
	status                                      gatev1.BatchStatus
	version                                     int32
	received, accepted, quarantined, duplicates int64
	amendment, attempt                          int32
	verdicts                                    []byte
	alertSeqs                                   []int64
}

// storedBatch is an ingested batch's idempotency row.
type storedBatch struct {
	batchRow
	digest []byte
	at     time.Time
	// legacy and blocked hold the whole answer of a row written before
	// rows were compact (schema 4 and earlier).
	legacy  *gatev1.IngestResponse
	blocked *gatev1.BlockedDetail
}

// storedVersion is what the gate keeps of a contract version besides the
// contract: enough to pick a version by data date while the registry is
// unreachable.
type storedVersion struct {
	subject       string
	version       int32
	status        registryv1.VersionStatus
	effective     time.Time
	dataEffective time.Time // zero: no data date (all earlier data)
}

// partRow is a partition: which sending of it is current and its latest
// amendment.
type partRow struct {
	pid           int64
	subject, part string
	attempt       int32
	amendment     int32
	// replacedBy is the batch (or stream) id that started the current
	// sending by replacing the previous one; a retry of it does not
	// replace again.
	replacedBy string
}

// unitRow is one amendment of a partition (0: the partition itself).
type unitRow struct {
	pid       int64
	amendment int32
	status    gatev1.PartitionStatus
	verdict   gatev1.PartitionVerdict
	version   int32
	counts    unitCounts
	figures   unitFigures
	// decision is the outcomes of the seal.
	decision  []*gatev1.CheckOutcome
	openedAt  time.Time
	updatedAt time.Time
	sealedAt  time.Time
	sealCause gatev1.SealCause
	sealedBy  string
}

// unitCounts are a unit's record counters.
type unitCounts struct {
	received, accepted, quarantined, duplicates, released, batches int64
	idChecked, idMatched                                           int64
}

// partUnits is a partition with the units of its current sending.
type partUnits struct {
	part  partRow
	units []unitRow
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

// quarantineRow is one record set aside by a batch.
type quarantineRow struct {
	id, subject, part, batchID string
	index, position            int64
	version, amendment         int32
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
	id        string
	part      string
	amendment int32
	batchID   string
	index     int64
	position  int64
	format    recordv1.Format
	raw       []byte
	idState   int
	// truncated is set when raw is only the first bytes of the record.
	truncated bool
	// reasons are why it is held now.
	reasons []*recordv1.RecordError
	// failed counts the checks its reasons at ingest named: what its
	// partition's figures counted.
	failed map[string]int64
}

// releaseRow is a held record a replay releases.
type releaseRow struct {
	id, replayID, principal, recordID string
	canonical                         []byte
	at                                time.Time
}
