package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Message is one message read from a source: one record.
type Message struct {
	// Position is the message's place in its source partition: a Kafka
	// offset or a JetStream stream sequence. Positions increase; they may
	// skip (compaction, transaction markers, filtered subjects).
	Position int64
	// Time is the broker's timestamp, the fallback event time.
	Time  time.Time
	Key   []byte
	Value []byte
}

// Source reads one ordered source partition. The connector keeps its
// position in the journal, so a Source only has to start where it is told.
type Source interface {
	// Name identifies the partition in batch ids and output headers, for
	// example "orders.raw/3" or "ORDERS:orders.raw".
	Name() string
	// Start positions the reader so the next Fetch returns messages at or
	// after from.
	Start(ctx context.Context, from int64) error
	// Fetch returns the next messages in position order, at most max of
	// them, waiting up to wait for the first one; it returns none (and no
	// error) when nothing arrived in time.
	Fetch(ctx context.Context, max int, wait time.Duration) ([]Message, error)
	// Commit records, for monitoring and retention, that every message
	// before next is done (a consumer group offset). The connector calls it
	// only after the journal says so; the journal stays the truth.
	Commit(ctx context.Context, next int64) error
	// End returns the position the next produced message will get, to
	// report lag.
	End(ctx context.Context) (int64, error)
	Close() error
}

// OutMessage is one canonical record for the output.
type OutMessage struct {
	// Seq numbers the connector's output messages on its output partition
	// from 1, without gaps; it is carried in the Seam-Seq header and is what
	// a restart reads back to know where the output stands.
	Seq int64
	// ID is the delivery id, unique per accepted source record: the
	// JetStream Nats-Msg-Id.
	ID string
	// Key is the record id: the Kafka record key, so an upsert or a
	// compacted topic keeps one row per key.
	Key     string
	Value   []byte
	Headers map[string]string
}

// Output is where accepted canonical records go: one JetStream subject or
// one Kafka topic partition, written by this connector alone.
type Output interface {
	// Publish writes messages in order; when it returns nil every one is
	// durable. A retried call must not duplicate what an earlier failed
	// call wrote (message ids, idempotent producer).
	Publish(ctx context.Context, msgs []OutMessage) error
	// Last returns the headers of the last message on the output (the zero
	// Mark when it holds none).
	Last(ctx context.Context) (Mark, error)
	Close() error
}

// Journal is the connector's own append-only log on the broker.
type Journal interface {
	// Append writes entries in order and returns the offset of each; they
	// are durable when it returns. It fails when another process has
	// appended since this one last read or wrote (a second connector with
	// the same name), where the broker can tell.
	Append(ctx context.Context, entries [][]byte) ([]int64, error)
	// Read calls fn with every entry from the oldest kept to the end, in
	// order.
	Read(ctx context.Context, fn func(offset int64, entry []byte) error) error
	// Trim drops every entry before offset.
	Trim(ctx context.Context, before int64) error
	// MaxEntryBytes is the largest entry the broker accepts.
	MaxEntryBytes() int
	Close() error
}

// Partition is one source partition with its journal and output.
type Partition struct {
	Source  Source
	Journal Journal
	Output  Output
}

// Output headers the connector sets on every message. Seq, Part, Chunk
// and Index say exactly which staged record a message is, so a restart
// that finds the output ahead of the journal knows what is already out.
const (
	HeaderConnector = "Seam-Connector"
	HeaderSubject   = "Seam-Subject"
	HeaderRecordID  = "Seam-Record-Id"
	HeaderPartition = "Seam-Partition"
	HeaderBatch     = "Seam-Batch"
	HeaderPosition  = "Seam-Position"
	HeaderSeq       = "Seam-Seq"
	HeaderChunk     = "Seam-Chunk"
	HeaderIndex     = "Seam-Index"
)

// Mark is where the output stands: the last message's sequence and the
// staged record it carried.
type Mark struct {
	Seq       int64
	Connector string
	// Part, Chunk and Index name the staged record: its partition, the
	// journal offset of its stage entry, its index in that entry.
	Part  string
	Chunk int64
	Index int
}

// MarkFromHeaders reads a Mark from a message's headers; get returns ""
// for a missing header.
func MarkFromHeaders(get func(string) string) (Mark, error) {
	var m Mark
	if get(HeaderSeq) == "" {
		return m, fmt.Errorf("the last output message has no %s header: the output must be written by this connector alone", HeaderSeq)
	}
	var err error
	if m.Seq, err = strconv.ParseInt(get(HeaderSeq), 10, 64); err != nil {
		return m, fmt.Errorf("header %s %q: %w", HeaderSeq, get(HeaderSeq), err)
	}
	if m.Chunk, err = strconv.ParseInt(get(HeaderChunk), 10, 64); err != nil {
		return m, fmt.Errorf("header %s %q: %w", HeaderChunk, get(HeaderChunk), err)
	}
	if m.Index, err = strconv.Atoi(get(HeaderIndex)); err != nil {
		return m, fmt.Errorf("header %s %q: %w", HeaderIndex, get(HeaderIndex), err)
	}
	m.Part, m.Connector = get(HeaderPartition), get(HeaderConnector)
	return m, nil
}
