// Package jetstream connects the streaming connector to NATS JetStream:
// a source stream (optionally one subject of it) read by an ordered
// consumer from the journal's position, an output subject written with
// Nats-Msg-Id, and the connector's journal in a stream of its own.
package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seamdata/seam/connectors/stream"
)

// Config names the streams a connector uses.
type Config struct {
	// Connector is the connector's name; its journal is the stream
	// SEAM_JOURNAL_<NAME> on subject seam.journal.<name>.
	Connector string
	// Stream is the source stream; Subject, when set, reads only that
	// subject of it.
	Stream  string
	Subject string
	// OutputStream holds OutputSubject, which this connector alone writes.
	OutputStream  string
	OutputSubject string
	// JournalReplicas is the journal stream's replica count (1 by default;
	// 3 on a clustered server).
	JournalReplicas int
}

// Validate reports every missing name.
func (c Config) Validate() error {
	var errs []error
	if c.Stream == "" {
		errs = append(errs, errors.New("jetstream: name the source stream"))
	}
	if c.OutputStream == "" || c.OutputSubject == "" {
		errs = append(errs, errors.New("jetstream: name the output stream and the output subject"))
	}
	if c.Connector == "" {
		errs = append(errs, errors.New("jetstream: name the connector"))
	}
	return errors.Join(errs...)
}

// JournalStream is the name of a connector's journal stream.
func JournalStream(connector string) string {
	return "SEAM_JOURNAL_" + strings.ToUpper(strings.NewReplacer("-", "_").Replace(connector))
}

// Open checks the streams, creates the journal stream when it is missing,
// and returns the connector's one partition.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (stream.Partition, error) {
	if err := cfg.Validate(); err != nil {
		return stream.Partition{}, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return stream.Partition{}, fmt.Errorf("jetstream: %w", err)
	}
	src, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return stream.Partition{}, fmt.Errorf("jetstream: source stream %s: %w (create it, or fix --stream)", cfg.Stream, err)
	}
	out, err := js.Stream(ctx, cfg.OutputStream)
	if err != nil {
		return stream.Partition{}, fmt.Errorf("jetstream: output stream %s: %w (create it with the output subject and a duplicate window)", cfg.OutputStream, err)
	}
	jname := JournalStream(cfg.Connector)
	jsubj := "seam.journal." + cfg.Connector
	replicas := max(cfg.JournalReplicas, 1)
	journal, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: jname, Subjects: []string{jsubj},
		Description: "journal of Seam stream connector " + cfg.Connector, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Replicas: replicas, Discard: jetstream.DiscardNew, MaxMsgSize: int32(nc.MaxPayload())})
	if err != nil {
		return stream.Partition{}, fmt.Errorf("jetstream: journal stream %s: %w", jname, err)
	}
	name := cfg.Stream
	if cfg.Subject != "" {
		name += ":" + cfg.Subject
	}
	return stream.Partition{
		Source:  &source{js: js, stream: src, name: name, subject: cfg.Subject},
		Journal: &journalLog{js: js, stream: journal, subject: jsubj, max: int(nc.MaxPayload()) - 4096},
		Output:  &output{js: js, stream: out, subject: cfg.OutputSubject},
	}, nil
}

// source reads the source stream with an ordered consumer: no server-side
// state to clean up, redelivery-free, and recreated by the client from
// the last sequence it saw if a message goes missing in transit.
type source struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	subject string
	iter    jetstream.MessagesContext
}

func (s *source) Name() string { return s.name }

func (s *source) Start(ctx context.Context, from int64) error {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: time.Minute}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, uint64(from)
	}
	if s.subject != "" {
		cfg.FilterSubjects = []string{s.subject}
	}
	cons, err := s.stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("jetstream: consumer on %s: %w", s.name, err)
	}
	if s.iter, err = cons.Messages(); err != nil {
		return fmt.Errorf("jetstream: read %s: %w", s.name, err)
	}
	return nil
}

func (s *source) Fetch(ctx context.Context, max int, wait time.Duration) ([]stream.Message, error) {
	var out []stream.Message
	for len(out) < max {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		w := wait
		if len(out) > 0 {
			w = time.Millisecond // what is already buffered
		}
		msg, err := s.iter.Next(jetstream.NextMaxWait(w))
		if errors.Is(err, nats.ErrTimeout) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("jetstream: read %s: %w", s.name, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return out, fmt.Errorf("jetstream: message of %s without metadata: %w", s.name, err)
		}
		out = append(out, stream.Message{Position: int64(meta.Sequence.Stream), Time: meta.Timestamp, Value: msg.Data()})
	}
	return out, nil
}

// Commit is a no-op: an ordered consumer keeps no position on the server,
// and the journal holds the connector's. The source stream must keep
// messages (limits retention) until the connector has read them.
func (s *source) Commit(context.Context, int64) error { return nil }

func (s *source) End(ctx context.Context) (int64, error) {
	if s.subject != "" {
		// The last message of the subject, not of the stream: other
		// subjects would count as lag.
		msg, err := s.stream.GetLastMsgForSubject(ctx, s.subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("jetstream: last message of %s: %w", s.name, err)
		}
		return int64(msg.Sequence) + 1, nil
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("jetstream: info of %s: %w", s.name, err)
	}
	return int64(info.State.LastSeq) + 1, nil
}

func (s *source) Close() error {
	if s.iter != nil {
		s.iter.Stop()
	}
	return nil
}

// output publishes to the output subject with Nats-Msg-Id, so a retry
// inside the stream's duplicate window is dropped by the server; past the
// window the connector's restart check (Last) decides.
type output struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	subject string
}

func (o *output) Publish(ctx context.Context, msgs []stream.OutMessage) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		nm := nats.NewMsg(o.subject)
		nm.Data = m.Value
		for k, v := range m.Headers {
			nm.Header.Set(k, v)
		}
		f, err := o.js.PublishMsgAsync(nm, jetstream.WithMsgID(m.ID))
		if err != nil {
			return fmt.Errorf("jetstream: publish to %s: %w", o.subject, err)
		}
		futures = append(futures, f)
	}
	var errs []error
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("jetstream: %d of %d messages to %s not acknowledged: %w", len(errs), len(msgs), o.subject, errs[0])
	}
	return nil
}

func (o *output) Last(ctx context.Context) (stream.Mark, error) {
	msg, err := o.stream.GetLastMsgForSubject(ctx, o.subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return stream.Mark{}, nil
	}
	if err != nil {
		return stream.Mark{}, fmt.Errorf("jetstream: last message of %s: %w", o.subject, err)
	}
	return stream.MarkFromHeaders(msg.Header.Get)
}

func (o *output) Close() error { return nil }

// journalLog is the journal stream. Each append expects the stream's last
// sequence to be the one this process last saw, so a second connector
// with the same name fails instead of interleaving its entries.
type journalLog struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	subject string
	max     int
	last    uint64
}

func (j *journalLog) Append(ctx context.Context, entries [][]byte) ([]int64, error) {
	out := make([]int64, 0, len(entries))
	for _, b := range entries {
		ack, err := j.js.Publish(ctx, j.subject, b, jetstream.WithExpectLastSequence(j.last))
		if err != nil {
			return out, fmt.Errorf("jetstream: journal %s: %w (another connector with this name running?)", j.subject, err)
		}
		j.last = ack.Sequence
		out = append(out, int64(ack.Sequence))
	}
	return out, nil
}

func (j *journalLog) Read(ctx context.Context, fn func(int64, []byte) error) error {
	info, err := j.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("jetstream: journal info: %w", err)
	}
	j.last = info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil
	}
	cons, err := j.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("jetstream: read the journal: %w", err)
	}
	iter, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("jetstream: read the journal: %w", err)
	}
	defer iter.Stop()
	for {
		msg, err := iter.Next(jetstream.NextMaxWait(10 * time.Second))
		if err != nil {
			return fmt.Errorf("jetstream: read the journal up to %d: %w", info.State.LastSeq, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("jetstream: journal message without metadata: %w", err)
		}
		if err := fn(int64(meta.Sequence.Stream), msg.Data()); err != nil {
			return err
		}
		if meta.Sequence.Stream >= info.State.LastSeq {
			return nil
		}
	}
}

func (j *journalLog) Trim(ctx context.Context, before int64) error {
	if before <= 1 {
		return nil
	}
	if err := j.stream.Purge(ctx, jetstream.WithPurgeSequence(uint64(before))); err != nil {
		return fmt.Errorf("jetstream: trim the journal below %d: %w", before, err)
	}
	return nil
}

func (j *journalLog) MaxEntryBytes() int { return j.max }

func (j *journalLog) Close() error { return nil }
