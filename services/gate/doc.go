// Package gate is the gate service that pipelines call: it judges each
// record against its source's contract as it arrives (accepted, or
// quarantined with its reasons), judges each partition whole when it is
// sealed (partition.go), keeps the quarantine durable, monitors
// partitions, contains misbehaving sources and replays quarantine as a
// partition-true backfill.
//
// Every batch is written in one transaction (commit.go): its idempotency
// row (unique on subject, partition and batch id, bound to the batch's
// content by a digest, inserted first so a concurrent duplicate on any
// replica waits on the key and then finds it taken), the partition's row
// (locked, so batches, seals and replays of one partition go one after
// the other), the supersession of its previous sending when the batch
// replaces it, the partition's key index (which decides duplicates), the
// quarantined records, the counters and figures of the partition or
// amendment it went into, the subject's watermark and, when asked, the
// seal with its alerts and their registry events (the outbox). The
// idempotency row is compact: the summary and each record's verdict in a
// few bytes; reasons are read back from the quarantine, canonical records
// are kept apart for a limited time and only when asked for. Peers are
// called before the transaction, so an unreachable adapter or idmap
// refuses the batch with Unavailable and nothing is written.
//
// Persistence is behind gateStore and storeTx (store.go); sqlStore serves
// the embedded SQLite file and PostgreSQL with one schema (schema.go).
//
// Replays read held records through the (subject, state, partition) index,
// so their cost follows the window, not the quarantine. Each page is
// released by a conditional update (only HELD rows) that records the
// replay id and the canonical record, then sent; a retried replay id first
// re-sends what it released.
package gate
