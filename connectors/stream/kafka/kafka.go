// Package kafka connects the streaming connector to Kafka with franz-go:
// one engine per source partition, each reading its partition from the
// journal's position, writing the same-numbered partition of the output
// topic with the idempotent producer (acks=all), and keeping its journal
// in the same-numbered partition of the journal topic. The consumer
// group's committed offsets follow the journal, for lag tools.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seamdata/seam/connectors/stream"
)

// maxEntryBytes keeps journal records under Kafka's default 1 MB
// message.max.bytes with room for headers and batch overhead.
const maxEntryBytes = 900_000

// Config names the topics a connector uses.
type Config struct {
	Brokers []string
	// Connector is the connector's name; the default journal topic is
	// seam.journal.<name> and the consumer group seam-stream-<name>.
	Connector string
	Topic     string
	// Partitions limits the source partitions read; empty reads all.
	Partitions []int32
	// Output is the output topic: at least as many partitions as the
	// source, partition p written by the engine of source partition p only.
	Output string
	// Journal and Group override the defaults.
	Journal string
	Group   string
	// JournalReplication is the journal topic's replication factor when
	// the connector creates it (-1: the broker's default).
	JournalReplication int16
	// Opts are extra client options (TLS, SASL, …).
	Opts []kgo.Opt
}

func (c *Config) setDefaults() {
	if c.Journal == "" {
		c.Journal = "seam.journal." + c.Connector
	}
	if c.Group == "" {
		c.Group = "seam-stream-" + c.Connector
	}
	if c.JournalReplication == 0 {
		c.JournalReplication = -1
	}
}

// Validate reports every missing setting.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("kafka: name at least one broker"))
	}
	if c.Topic == "" || c.Output == "" {
		errs = append(errs, errors.New("kafka: name the source topic and the output topic"))
	}
	if c.Connector == "" {
		errs = append(errs, errors.New("kafka: name the connector"))
	}
	return errors.Join(errs...)
}

// Conn is the clients shared by a connector's partitions.
type Conn struct {
	cfg   Config
	admin *kadm.Client
	base  *kgo.Client
	prod  *kgo.Client
	mu    sync.Mutex
	open  []*kgo.Client
}

// Open checks the topics, creates the journal topic when it is missing
// and returns one stream.Partition per source partition.
func Open(ctx context.Context, cfg Config) (*Conn, []stream.Partition, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	base, err := kgo.NewClient(append(slices.Clone(cfg.Opts), kgo.SeedBrokers(cfg.Brokers...))...)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: %w", err)
	}
	prod, err := kgo.NewClient(append(slices.Clone(cfg.Opts), kgo.SeedBrokers(cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1_000_000), kgo.ProducerLinger(0))...)
	if err != nil {
		base.Close()
		return nil, nil, fmt.Errorf("kafka: %w", err)
	}
	c := &Conn{cfg: cfg, admin: kadm.NewClient(base), base: base, prod: prod}
	parts, err := c.partitions(ctx)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, parts, nil
}

func (c *Conn) partitions(ctx context.Context) ([]stream.Partition, error) {
	cfg := c.cfg
	topics, err := c.admin.ListTopics(ctx, cfg.Topic, cfg.Output, cfg.Journal)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", err)
	}
	count := func(t string) int {
		d, ok := topics[t]
		if !ok || d.Err != nil {
			return 0
		}
		return len(d.Partitions)
	}
	n := count(cfg.Topic)
	if n == 0 {
		return nil, fmt.Errorf("kafka: source topic %s does not exist", cfg.Topic)
	}
	if o := count(cfg.Output); o < n {
		return nil, fmt.Errorf("kafka: output topic %s has %d partitions, the source %s has %d: create it with at least %d (partition p of the output takes partition p of the source, which keeps per-key order)",
			cfg.Output, o, cfg.Topic, n, n)
	}
	switch j := count(cfg.Journal); {
	case j == 0:
		retention := "-1"
		policy := "delete"
		if _, err := c.admin.CreateTopic(ctx, int32(n), cfg.JournalReplication, map[string]*string{"retention.ms": &retention, "cleanup.policy": &policy}, cfg.Journal); err != nil {
			return nil, fmt.Errorf("kafka: create journal topic %s: %w", cfg.Journal, err)
		}
		// A new topic takes a moment to have leaders everywhere.
		for p := range int32(n) {
			if err := c.waitPartition(ctx, cfg.Journal, p); err != nil {
				return nil, err
			}
		}
	case j < n:
		return nil, fmt.Errorf("kafka: journal topic %s has %d partitions, fewer than the source's %d: add partitions to it", cfg.Journal, j, n)
	}
	ids := cfg.Partitions
	if len(ids) == 0 {
		for p := range n {
			ids = append(ids, int32(p))
		}
	}
	var out []stream.Partition
	for _, p := range ids {
		if int(p) >= n || p < 0 {
			return nil, fmt.Errorf("kafka: source topic %s has no partition %d", cfg.Topic, p)
		}
		out = append(out, stream.Partition{
			Source:  &source{c: c, partition: p},
			Journal: &journalLog{c: c, partition: p},
			Output:  &output{c: c, partition: p},
		})
	}
	return out, nil
}

// consumer returns a client reading topic partition p from offset at.
func (c *Conn) consumer(topic string, p int32, at int64) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(slices.Clone(c.cfg.Opts), kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(at)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return cl, nil
}

// waitPartition waits until topic partition p answers offset requests.
func (c *Conn) waitPartition(ctx context.Context, topic string, p int32) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, err := c.offsets(ctx, topic, p)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// offsets returns the start and end offsets of topic partition p.
func (c *Conn) offsets(ctx context.Context, topic string, p int32) (start, end int64, err error) {
	s, err := c.admin.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("kafka: start offsets of %s: %w", topic, err)
	}
	e, err := c.admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("kafka: end offsets of %s: %w", topic, err)
	}
	so, ok1 := s.Lookup(topic, p)
	eo, ok2 := e.Lookup(topic, p)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("kafka: offsets of %s/%d: the broker does not list that partition (yet)", topic, p)
	}
	if err := errors.Join(so.Err, eo.Err); err != nil {
		return 0, 0, fmt.Errorf("kafka: offsets of %s/%d: %w", topic, p, err)
	}
	return so.Offset, eo.Offset, nil
}

// readRange calls fn with the records of topic partition p from offset
// from up to (not including) end.
func (c *Conn) readRange(ctx context.Context, topic string, p int32, from, end int64, fn func(*kgo.Record) error) error {
	if from >= end {
		return nil
	}
	cl, err := c.consumer(topic, p, from)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		if err := fetchErr(fs); err != nil {
			return fmt.Errorf("kafka: read %s/%d: %w", topic, p, err)
		}
		if fs.Empty() && ctx.Err() != nil {
			return ctx.Err()
		}
		if fs.Empty() {
			return fmt.Errorf("kafka: read %s/%d: nothing arrived in 30s before offset %d", topic, p, end)
		}
		var ferr error
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil || done {
				return
			}
			if r.Offset >= end {
				done = true
				return
			}
			ferr = fn(r)
			if r.Offset == end-1 {
				done = true
			}
		})
		if ferr != nil || done {
			return ferr
		}
	}
}

func fetchErr(fs kgo.Fetches) error {
	var errs []error
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// Close closes every client.
func (c *Conn) Close() {
	c.mu.Lock()
	for _, cl := range c.open {
		cl.Close()
	}
	c.open = nil
	c.mu.Unlock()
	c.prod.Close()
	c.base.Close()
}

type source struct {
	c         *Conn
	partition int32
	cl        *kgo.Client
	buf       []*kgo.Record
}

func (s *source) Name() string { return s.c.cfg.Topic + "/" + strconv.Itoa(int(s.partition)) }

func (s *source) Start(_ context.Context, from int64) error {
	cl, err := s.c.consumer(s.c.cfg.Topic, s.partition, from)
	if err != nil {
		return err
	}
	s.c.mu.Lock()
	s.c.open = append(s.c.open, cl)
	s.c.mu.Unlock()
	s.cl = cl
	return nil
}

func (s *source) Fetch(ctx context.Context, max int, wait time.Duration) ([]stream.Message, error) {
	if len(s.buf) == 0 {
		fctx, cancel := context.WithTimeout(ctx, wait)
		fs := s.cl.PollFetches(fctx)
		cancel()
		if err := fetchErr(fs); err != nil {
			return nil, fmt.Errorf("kafka: read %s: %w", s.Name(), err)
		}
		s.buf = fs.Records()
	}
	n := min(max, len(s.buf))
	out := make([]stream.Message, n)
	for i, r := range s.buf[:n] {
		out[i] = stream.Message{Position: r.Offset, Time: r.Timestamp, Key: r.Key, Value: r.Value}
	}
	s.buf = s.buf[n:]
	return out, nil
}

// Commit mirrors the journal's position into the consumer group, as a
// simple (memberless) commit, so kafka-consumer-groups and lag exporters
// see the connector.
func (s *source) Commit(ctx context.Context, next int64) error {
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: s.c.cfg.Topic, Partition: s.partition, At: next, LeaderEpoch: -1})
	resp, err := s.c.admin.CommitOffsets(ctx, s.c.cfg.Group, os)
	if err != nil {
		return err
	}
	return resp.Error()
}

func (s *source) End(ctx context.Context) (int64, error) {
	_, end, err := s.c.offsets(ctx, s.c.cfg.Topic, s.partition)
	return end, err
}

func (s *source) Close() error { return nil }

// output writes partition p of the output topic with the idempotent
// producer: a retry inside one producer session is never written twice;
// across sessions the connector's restart check (Last) decides.
type output struct {
	c         *Conn
	partition int32
}

func (o *output) Publish(ctx context.Context, msgs []stream.OutMessage) error {
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		r := &kgo.Record{Topic: o.c.cfg.Output, Partition: o.partition, Key: []byte(m.Key), Value: m.Value}
		for k, v := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		slices.SortFunc(r.Headers, func(a, b kgo.RecordHeader) int { return strings.Compare(a.Key, b.Key) })
		recs[i] = r
	}
	if err := o.c.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: produce to %s/%d: %w", o.c.cfg.Output, o.partition, err)
	}
	return nil
}

func (o *output) Last(ctx context.Context) (stream.Mark, error) {
	start, end, err := o.c.offsets(ctx, o.c.cfg.Output, o.partition)
	if err != nil || end <= start {
		return stream.Mark{}, err
	}
	var mark stream.Mark
	err = o.c.readRange(ctx, o.c.cfg.Output, o.partition, end-1, end, func(r *kgo.Record) error {
		mark, err = stream.MarkFromHeaders(func(k string) string {
			for _, h := range r.Headers {
				if h.Key == k {
					return string(h.Value)
				}
			}
			return ""
		})
		return err
	})
	return mark, err
}

func (o *output) Close() error { return nil }

// journalLog is partition p of the journal topic.
type journalLog struct {
	c         *Conn
	partition int32
}

func (j *journalLog) Append(ctx context.Context, entries [][]byte) ([]int64, error) {
	recs := make([]*kgo.Record, len(entries))
	for i, b := range entries {
		recs[i] = &kgo.Record{Topic: j.c.cfg.Journal, Partition: j.partition, Value: b}
	}
	res := j.c.prod.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		return nil, fmt.Errorf("kafka: append to journal %s/%d: %w", j.c.cfg.Journal, j.partition, err)
	}
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Record.Offset
	}
	return out, nil
}

func (j *journalLog) Read(ctx context.Context, fn func(int64, []byte) error) error {
	start, end, err := j.c.offsets(ctx, j.c.cfg.Journal, j.partition)
	if err != nil {
		return err
	}
	return j.c.readRange(ctx, j.c.cfg.Journal, j.partition, start, end, func(r *kgo.Record) error { return fn(r.Offset, r.Value) })
}

func (j *journalLog) Trim(ctx context.Context, before int64) error {
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: j.c.cfg.Journal, Partition: j.partition, At: before, LeaderEpoch: -1})
	resp, err := j.c.admin.DeleteRecords(ctx, os)
	if err != nil {
		return fmt.Errorf("kafka: trim journal %s/%d below %d: %w", j.c.cfg.Journal, j.partition, before, err)
	}
	for _, ps := range resp {
		for _, r := range ps {
			if r.Err != nil {
				return fmt.Errorf("kafka: trim journal %s/%d below %d: %w", j.c.cfg.Journal, j.partition, before, r.Err)
			}
		}
	}
	return nil
}

func (j *journalLog) MaxEntryBytes() int { return maxEntryBytes }

func (j *journalLog) Close() error { return nil }
