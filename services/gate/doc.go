// Package gate is the gate service that pipelines call: it validates each
// batch against its source's contract, applies each check's policy (block,
// quarantine, alert), keeps the quarantine durable, monitors partitions,
// contains misbehaving sources and replays quarantine as a backfill.
//
// Every batch is written in one transaction: its idempotency row (unique
// on subject, partition and batch id, inserted first so a concurrent
// duplicate on any replica waits on the key and then finds it taken), its
// quarantined records, its partition's counters and field statistics, the
// alerts it raised and their registry events (the outbox). The row keeps
// the whole answer, canonical records included, so a retry gets exactly
// the first answer even after the id tables changed; a blocked batch keeps
// its BlockedDetail and is refused again the same way. Peers are called
// before the transaction, so an unreachable adapter or idmap refuses the
// batch with Unavailable and nothing is written.
//
// Replays read held records through the (subject, state, partition) index,
// so their cost follows the window, not the quarantine. Each page is
// released by a conditional update (only HELD rows) that records the
// replay id and the canonical record, then sent; a retried replay id first
// re-sends what it released.
package gate
