// Package registry is Seam's contract registry service: it versions source
// contracts and canonical models, classifies every change, enforces the
// notice period and migration a breaking version owes, keeps consumer lineage
// for blast-radius queries and publishes a durable, ordered event stream.
//
// The durable truth is a SQL store (SQLite by default, PostgreSQL when
// replicas share one); every write appends to an ordered change log in the
// same transaction, and each replica's go-memdb read model follows that log,
// so replicas agree and serve no state older than the events they have seen.
package registry
