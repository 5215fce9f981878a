package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Source replicates tables of one PostgreSQL database through the gate
// into a target database. See docs/sources.md for the design.
type Source struct {
	cfg     Config
	log     *slog.Logger
	target  *pgxpool.Pool
	source  *pgxpool.Pool
	metrics *metrics

	mu     sync.Mutex
	tables map[string]*table // by "schema.table"
	conn   connectorState
	// containSet caches the gate's contained subjects (see contained).
	containSet map[string]bool
	containAt  time.Time
}

// table is the runtime of one replicated table.
type table struct {
	name    TableName
	key     string
	subject string
	target  string
	// wake is signalled when changes of the table were staged.
	wake chan struct{}
	// snapshotDone is closed when the table's snapshot is applied.
	snapshotDone chan struct{}

	// Owned by the table's apply loop once streaming.
	version  int32
	contract *contractv1.Contract
	replica  *replica
	shapeID  int
	shape    Shape
	// replicas caches the replica plan per contract version (guarded by
	// Source.mu: snapshot workers share it).
	replicas map[int32]*replica
}

func (t *table) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// New checks cfg and returns a source; Run does the work.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, log: cfg.Logger.With("source", cfg.Name), tables: map[string]*table{}}, nil
}

// Run replicates until ctx ends: on its first start it creates the slot
// and the publication, registers a contract per table and snapshots them;
// on every start it resumes the snapshot and the stream from the positions
// recorded in the target. It returns nil when ctx ends.
func (s *Source) Run(ctx context.Context) (err error) {
	defer func() {
		if ctx.Err() != nil {
			err = nil // stopped, not failed: everything is resumable
		}
	}()
	s.target, err = pgxpool.New(ctx, s.cfg.TargetURL)
	if err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	defer s.target.Close()
	srcCfg, err := pgxpool.ParseConfig(s.cfg.SourceURL)
	if err != nil {
		return fmt.Errorf("source URL: %w", err)
	}
	srcCfg.ConnConfig.RuntimeParams["DateStyle"] = "ISO"
	srcCfg.ConnConfig.RuntimeParams["TimeZone"] = "UTC"
	srcCfg.ConnConfig.RuntimeParams["extra_float_digits"] = "1"
	// The source's connections are named after its slot, so status (and
	// an operator's pg_stat_activity) can tell which transactions are its.
	srcCfg.ConnConfig.RuntimeParams["application_name"] = s.cfg.slotName()
	srcCfg.MaxConns = int32(s.cfg.SnapshotWorkers + 4)
	s.source, err = pgxpool.NewWithConfig(ctx, srcCfg)
	if err != nil {
		return fmt.Errorf("source database: %w", err)
	}
	defer s.source.Close()
	if err := s.checkSource(ctx); err != nil {
		return err
	}
	if err := migrateState(ctx, s.target); err != nil {
		return err
	}
	// One process per source: a second would stream the same slot and
	// apply the same tables twice.
	lock, err := s.target.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	defer lock.Release()
	var mine bool
	if err := lock.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext('seam_cdc:' || $1))", s.cfg.Name).Scan(&mine); err != nil {
		return fmt.Errorf("lock source %s: %w", s.cfg.Name, err)
	}
	if !mine {
		return fmt.Errorf("source %s is already running against this target (another process holds its lock); run one process per source", s.cfg.Name)
	}
	defer func() {
		if _, err := lock.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext('seam_cdc:' || $1))", s.cfg.Name); err != nil {
			lock.Conn().Close(context.Background()) // closing the session releases it too
		}
	}()
	s.metrics, err = newMetrics(s.cfg.Meter, s)
	if err != nil {
		return err
	}
	defer s.metrics.close()

	state, found, err := loadConnector(ctx, s.target, s.cfg.Name)
	if err != nil {
		return err
	}
	var snap *exportedSnapshot
	if !found || state.Phase == "init" {
		snap, err = s.bootstrap(ctx)
		if err != nil {
			return err
		}
		defer snap.close()
		if state, _, err = loadConnector(ctx, s.target, s.cfg.Name); err != nil {
			return err
		}
	}
	s.conn = state
	if state.TargetSchema != s.cfg.TargetSchema {
		s.log.Warn("the replica schema was chosen at the first start and stays", "schema", state.TargetSchema, "asked", s.cfg.TargetSchema)
		s.cfg.TargetSchema = state.TargetSchema
	}
	states, err := loadTables(ctx, s.target, s.cfg.Name)
	if err != nil {
		return err
	}
	if err := s.checkTables(states); err != nil {
		return err
	}
	pending := false
	for _, st := range states {
		t := &table{name: st.Table, key: st.Source, subject: st.Subject, target: st.Target,
			wake: make(chan struct{}, 1), snapshotDone: make(chan struct{})}
		if st.Phase != "snapshot" {
			close(t.snapshotDone)
		} else {
			pending = true
		}
		s.tables[st.Source] = t
	}

	if !pending && state.Phase == "snapshot" {
		// Every table finished its snapshot before a stop that came before
		// the source recorded it.
		if _, err := s.target.Exec(ctx, "UPDATE seam_cdc.connectors SET phase = 'stream', updated_at = now() WHERE name = $1", s.cfg.Name); err != nil {
			return fmt.Errorf("record the end of the snapshot: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	if pending {
		if snap == nil {
			// The snapshot the slot exported died with the connection that
			// made it: the chunks not yet read are read in a fresh
			// snapshot with an exact position of its own (see resnapshot).
			snap, err = s.resnapshot(ctx)
			if err != nil {
				return err
			}
			defer snap.close()
		}
		g.Go(func() error { return s.snapshotAll(gctx, snap) })
	}
	if s.cfg.HeartbeatInterval > 0 {
		if err := s.ensureHeartbeat(ctx); err != nil {
			return err
		}
		g.Go(func() error { return s.heartbeat(gctx) })
	}
	g.Go(func() error { return s.capture(gctx) })
	for _, t := range s.tables {
		g.Go(func() error { return s.applyLoop(gctx, t) })
	}
	g.Go(func() error { return s.watchLag(gctx) })
	if s.cfg.Ready != nil {
		g.Go(func() error {
			for _, t := range s.tables {
				select {
				case <-t.snapshotDone:
				case <-gctx.Done():
					return nil
				}
			}
			s.cfg.Ready()
			return nil
		})
	}
	err = g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// checkSource checks what logical replication needs, naming the fix.
func (s *Source) checkSource(ctx context.Context) error {
	var level string
	if err := s.source.QueryRow(ctx, "SHOW wal_level").Scan(&level); err != nil {
		return fmt.Errorf("source database: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("source database has wal_level=%s; logical replication needs wal_level=logical (ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL)", level)
	}
	return nil
}

// checkTables refuses a configuration that names other tables than the
// source was started with: its slot and snapshot cover those.
func (s *Source) checkTables(states []tableState) error {
	have := map[string]bool{}
	for _, st := range states {
		have[st.Source] = true
	}
	for _, name := range s.cfg.Tables {
		tn, _ := ParseTableName(name)
		if !have[tn.String()] {
			return fmt.Errorf("source %s was started without table %s; its snapshot and slot cover only the tables it began with: start another source (--name) for %s", s.cfg.Name, tn, tn)
		}
	}
	return nil
}

// replicationConn opens a logical replication connection to the source.
func (s *Source) replicationConn(ctx context.Context) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(s.cfg.SourceURL)
	if err != nil {
		return nil, fmt.Errorf("source URL: %w", err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["DateStyle"] = "ISO"
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["extra_float_digits"] = "1"
	cfg.RuntimeParams["application_name"] = s.cfg.slotName()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("replication connection to the source (the role needs REPLICATION): %w", err)
	}
	return conn, nil
}

// exportedSnapshot is a snapshot exported by a replication connection
// that must stay open and idle until every reader has imported it. The
// connection holds a transaction open at the source (and, for a resumed
// snapshot, a temporary slot that keeps WAL): it is closed as soon as the
// last reader has imported the snapshot, and at the latest when Run ends.
type exportedSnapshot struct {
	mu   sync.Mutex
	conn *pgconn.PgConn
	name string
	lsn  uint64
	// resumed: a fresh snapshot for the chunks a restart found unread.
	resumed bool
}

func (e *exportedSnapshot) close() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil {
		e.conn.Close(context.Background())
		e.conn = nil
	}
}

// createSlot creates a logical slot with pgoutput and an exported
// snapshot; temporary slots are dropped with their connection.
func (s *Source) createSlot(ctx context.Context, name string, temporary bool) (*exportedSnapshot, error) {
	conn, err := s.replicationConn(ctx)
	if err != nil {
		return nil, err
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, conn, name, "pgoutput", pglogrepl.CreateReplicationSlotOptions{
		Temporary: temporary, SnapshotAction: "EXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication})
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("create replication slot %s: %w", name, err)
	}
	lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("slot %s consistent point %q: %w", name, res.ConsistentPoint, err)
	}
	return &exportedSnapshot{conn: conn, name: res.SnapshotName, lsn: uint64(lsn)}, nil
}

// inSnapshot runs fn in a repeatable-read transaction of the source that
// sees exactly the exported snapshot.
func (s *Source) inSnapshot(ctx context.Context, snap *exportedSnapshot, fn func(tx pgx.Tx) error) error {
	return s.inSnapshotThen(ctx, snap, nil, fn)
}

// inSnapshotThen is inSnapshot calling imported once the snapshot is
// imported, before fn.
func (s *Source) inSnapshotThen(ctx context.Context, snap *exportedSnapshot, imported func(), fn func(tx pgx.Tx) error) error {
	tx, err := s.source.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+snap.name+"'"); err != nil {
		return fmt.Errorf("import snapshot %s: %w", snap.name, err)
	}
	if imported != nil {
		imported()
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// bootstrap is the first start: publication, slot with exported snapshot,
// contracts and replicas, and the chunk plan, recorded in one transaction
// of the target. A crash before that commit leaves the phase "init" and
// the next start does it again (dropping the half-made slot).
func (s *Source) bootstrap(ctx context.Context) (*exportedSnapshot, error) {
	slot := s.cfg.slotName()
	if _, err := s.target.Exec(ctx, `INSERT INTO seam_cdc.connectors (name, slot, publication, phase, target_schema)
VALUES ($1, $2, $2, 'init', $3) ON CONFLICT (name) DO UPDATE SET phase = 'init', target_schema = EXCLUDED.target_schema, updated_at = now()`,
		s.cfg.Name, slot, s.cfg.TargetSchema); err != nil {
		return nil, fmt.Errorf("record source %s: %w", s.cfg.Name, err)
	}
	if _, err := s.source.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", slot); err != nil {
		return nil, fmt.Errorf("drop the half-made slot %s of an interrupted first start: %w", slot, err)
	}
	var names []string
	for _, t := range s.cfg.Tables {
		tn, _ := ParseTableName(t)
		names = append(names, tn.ident())
	}
	var exists bool
	if err := s.source.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", slot).Scan(&exists); err != nil {
		return nil, fmt.Errorf("read publication %s: %w", slot, err)
	}
	verb := "CREATE PUBLICATION %s FOR TABLE %s"
	if exists {
		verb = "ALTER PUBLICATION %s SET TABLE %s"
	}
	if _, err := s.source.Exec(ctx, fmt.Sprintf(verb, pgx.Identifier{slot}.Sanitize(), joinComma(names))); err != nil {
		return nil, fmt.Errorf("publication %s of the tables: %w (the source role must own the tables, or create the publication yourself)", slot, err)
	}

	snap, err := s.createSlot(ctx, slot, false)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			snap.close()
		}
	}()
	type planned struct {
		name     TableName
		shape    Shape
		chunks   []chunkBounds
		rows     int64
		filenode int64
	}
	var plans []planned
	err = s.inSnapshot(ctx, snap, func(tx pgx.Tx) error {
		for _, t := range s.cfg.Tables {
			tn, _ := ParseTableName(t)
			shape, err := readShape(ctx, tx, tn)
			if err != nil {
				return err
			}
			chunks, rows, err := planChunks(ctx, tx, tn, shape, s.cfg.ChunkRows)
			if err != nil {
				return err
			}
			filenode, err := relFilenode(ctx, tx, tn)
			if err != nil {
				return err
			}
			plans = append(plans, planned{name: tn, shape: shape, chunks: chunks, rows: rows, filenode: filenode})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	prefix, err := s.subjectPrefix(ctx)
	if err != nil {
		return nil, err
	}

	tx, err := s.target.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "DELETE FROM seam_cdc.tables WHERE connector = $1", s.cfg.Name); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM seam_cdc.log WHERE connector = $1", s.cfg.Name); err != nil {
		return nil, err
	}
	for _, p := range plans {
		subject := prefix + p.name.String()
		version, model, err := s.registerTable(ctx, subject, p.name, p.shape)
		if err != nil {
			return nil, err
		}
		if err := ensureReplica(ctx, tx, s.cfg.TargetSchema, p.name.Name, model); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO seam_cdc.tables (connector, source_table, subject, target_table, phase, contract_version, shape_id, snapshot_lsn, rows_total)
VALUES ($1, $2, $3, $4, 'snapshot', $5, 1, $6, $7)`, s.cfg.Name, p.name.String(), subject, p.name.Name, version, int64(snap.lsn), p.rows); err != nil {
			return nil, fmt.Errorf("record table %s: %w", p.name, err)
		}
		cols, _ := json.Marshal(p.shape)
		if _, err := tx.Exec(ctx, "INSERT INTO seam_cdc.shapes (connector, source_table, shape_id, columns, first_lsn, filenode) VALUES ($1, $2, 1, $3, $4, $5)",
			s.cfg.Name, p.name.String(), cols, int64(snap.lsn), p.filenode); err != nil {
			return nil, fmt.Errorf("record the shape of %s: %w", p.name, err)
		}
		for i, c := range p.chunks {
			if _, err := tx.Exec(ctx, "INSERT INTO seam_cdc.chunks (connector, source_table, chunk, lo, hi) VALUES ($1, $2, $3, $4, $5)",
				s.cfg.Name, p.name.String(), i, c.lo, c.hi); err != nil {
				return nil, fmt.Errorf("record chunk %d of %s: %w", i, p.name, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE seam_cdc.connectors SET phase = 'snapshot', consistent_lsn = $2, capture_lsn = $2, updated_at = now() WHERE name = $1`,
		s.cfg.Name, int64(snap.lsn)); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("record the handoff position of source %s: %w", s.cfg.Name, err)
	}
	s.log.Info("slot created; snapshot and stream hand off here", "slot", slot, "lsn", lsnText(snap.lsn), "tables", len(plans))
	ok = true
	return snap, nil
}

// resnapshot exports a fresh snapshot with an exact position for the
// chunks a restart finds unread, and records that position as the
// tables' snapshot LSN before any of them is read: changes committed
// before it are then checked against the replica row by row.
func (s *Source) resnapshot(ctx context.Context) (*exportedSnapshot, error) {
	var snap *exportedSnapshot
	var err error
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		snap, err = s.createSlot(ctx, s.cfg.slotName()+"_resume", true)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42710" || wait > 5*time.Second {
			break
		}
		// The previous fresh snapshot's temporary slot goes when the
		// server ends the connection that made it, a moment after it was
		// closed.
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.target.Exec(ctx, `UPDATE seam_cdc.tables t SET snapshot_lsn = $2, updated_at = now()
 WHERE connector = $1 AND phase = 'snapshot'
   AND EXISTS (SELECT 1 FROM seam_cdc.chunks c WHERE c.connector = t.connector AND c.source_table = t.source_table AND NOT c.done)`,
		s.cfg.Name, int64(snap.lsn)); err != nil {
		snap.close()
		return nil, fmt.Errorf("record the resumed snapshot's position: %w", err)
	}
	snap.resumed = true
	s.log.Info("resuming the snapshot in a fresh exported snapshot", "lsn", lsnText(snap.lsn))
	return snap, nil
}

// subjectPrefix is the configured prefix or "pg.<database>.".
func (s *Source) subjectPrefix(ctx context.Context) (string, error) {
	if s.cfg.SubjectPrefix != "" {
		return s.cfg.SubjectPrefix, nil
	}
	var db string
	if err := s.source.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return "", err
	}
	return "pg." + db + ".", nil
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// errStopped ends a loop when its context ends.
var errStopped = errors.New("stopped")
