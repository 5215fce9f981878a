// Package gate is the gate service that pipelines call: it validates each
// batch against its source's contract, applies each check's policy (block,
// quarantine, alert), keeps the quarantine durable, monitors partitions,
// contains misbehaving sources and replays quarantine as a backfill.
package gate
