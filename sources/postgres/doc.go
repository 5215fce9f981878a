// Package postgres is Seam's PostgreSQL change-data-capture source: it
// replicates chosen tables of a database through the gate into a target
// database. A logical replication slot (pgoutput) is created with an
// exported snapshot; each table is read in that snapshot in primary-key
// chunks, in parallel, while the stream from the slot's consistent point is
// staged; a table's staged changes are applied, in log order, once its
// snapshot is in. Every table has a contract derived from the catalog;
// every shape the stream announces is classified against it: additive
// shapes register a new version, breaking ones halt the table, hold its
// changes and raise an UNANNOUNCED_CHANGE event until a migration version
// is active. docs/sources.md explains the design.
package postgres
