package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Config configures one PostgreSQL source.
type Config struct {
	// Name names the source; its replication slot and publication are
	// seam_<name>, its state rows in the target carry it. Letters, digits
	// and underscores.
	Name string
	// SourceURL is the database to capture (a role with REPLICATION and
	// SELECT on the tables, wal_level=logical).
	SourceURL string
	// TargetURL is the database the replica and the source's state live in.
	TargetURL string
	// Tables are the tables to replicate, "schema.table" or "table".
	Tables []string
	// SubjectPrefix prefixes each table's subject: prefix + schema.table.
	// Default "pg.<source database>.".
	SubjectPrefix string
	// Owner owns the contracts the source registers.
	Owner string
	// TargetSchema is the schema of the replica tables. Default "replica".
	TargetSchema string
	// Gate and Registry are clients of Seam, called with a token that may
	// ingest, register the subjects' versions and publish events.
	Gate     gatev1.GateServiceClient
	Registry registryv1.RegistryServiceClient
	// SnapshotWorkers read chunks in parallel. Default 4.
	SnapshotWorkers int
	// ChunkRows is the target size of a snapshot chunk (a primary-key
	// range). Default 50,000.
	ChunkRows int
	// SnapshotTransactionLimit bounds how long a snapshot worker keeps its
	// transaction at the source open (it holds back VACUUM on the whole
	// database): once a worker's transaction is this old it ends after its
	// chunk, and the chunks left are read in a fresh exported snapshot, as
	// after a restart. Default 10m; negative: one snapshot for the whole
	// read. See docs/sources.md, "On a production database".
	SnapshotTransactionLimit time.Duration
	// BatchRecords and BatchBytes bound one batch sent to the gate.
	// Defaults 1,000 and 4 MiB.
	BatchRecords int
	BatchBytes   int
	// HardDeletes removes deleted rows from the replica instead of keeping
	// a tombstone.
	HardDeletes bool
	// PollInterval is how often a halted table asks the registry for a
	// migration version and how often idle tables look for work. Default 2s.
	PollInterval time.Duration
	// StatusInterval is how often the stream reports its flushed position
	// to the server. Default 10s.
	StatusInterval time.Duration
	// HeartbeatInterval, when set, writes a row of the source's
	// publication (table public.seam_heartbeat) this often, so the slot
	// moves even when the replicated tables are quiet and no keepalive
	// arrives. Zero: no heartbeat (keepalives move the slot when caught
	// up). See docs/sources.md, "On a production database".
	HeartbeatInterval time.Duration
	Logger            *slog.Logger
	Meter             metric.Meter
	// Progress, when set, is called as snapshot chunks land.
	Progress func(SnapshotProgress)
	// Ready, when set, is called once the snapshot of every table is done
	// and every table streams (or is halted).
	Ready func()

	// partitionOf names the stream partition of a commit time; unset, its
	// date in UTC. Tests set it to cross a day without waiting for one.
	partitionOf func(time.Time) string
}

// SnapshotProgress is the snapshot's progress over all tables.
type SnapshotProgress struct {
	RowsTotal, RowsDone, BytesDone int64
	TablesDone, Tables             int
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)

// Validate fills defaults and checks c, naming the setting to fix.
func (c *Config) Validate() error {
	var errs []error
	if !nameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name %q: use 1 to 41 lower-case letters, digits or underscores, starting with a letter (it names the replication slot)", c.Name))
	}
	if c.SourceURL == "" {
		errs = append(errs, errors.New("no source URL: give the PostgreSQL database to capture"))
	}
	if c.TargetURL == "" {
		errs = append(errs, errors.New("no target URL: give the PostgreSQL database of the replica"))
	}
	if len(c.Tables) == 0 {
		errs = append(errs, errors.New("no table: name at least one table to replicate"))
	}
	seen := map[string]string{}
	for _, t := range c.Tables {
		tn, err := ParseTableName(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := seen[tn.Name]; ok {
			errs = append(errs, fmt.Errorf("tables %s and %s would share the replica table %s; replicate them with two sources", prev, tn, tn.Name))
		}
		seen[tn.Name] = tn.String()
	}
	if c.Gate == nil || c.Registry == nil {
		errs = append(errs, errors.New("no gate or registry client"))
	}
	if c.Owner == "" {
		c.Owner = "cdc-" + c.Name
	}
	if c.TargetSchema == "" {
		c.TargetSchema = "replica"
	}
	if c.SubjectPrefix != "" && !strings.HasSuffix(c.SubjectPrefix, ".") {
		c.SubjectPrefix += "."
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.SnapshotWorkers, 4)
	def(&c.ChunkRows, 50_000)
	def(&c.BatchRecords, 1000)
	def(&c.BatchBytes, 4<<20)
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.HeartbeatInterval < 0 || (c.HeartbeatInterval > 0 && c.HeartbeatInterval < time.Second) {
		errs = append(errs, fmt.Errorf("heartbeat interval %s: use 0 (none) or at least 1s", c.HeartbeatInterval))
	}
	if c.SnapshotTransactionLimit == 0 {
		c.SnapshotTransactionLimit = 10 * time.Minute
	}
	if c.StatusInterval <= 0 {
		c.StatusInterval = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("")
	}
	return errors.Join(errs...)
}

// slotName is the replication slot and publication name of a source.
func (c *Config) slotName() string { return "seam_" + c.Name }
