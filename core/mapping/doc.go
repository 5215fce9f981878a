// Package mapping compiles a contract version's mapping into a plan that
// turns decoded source records into canonical records: renames and nested
// source paths, casts, enum value maps, defaults, constants, CEL
// expressions and identifier translation through idmap, batched so a
// caller makes one idmap call per batch and format pair. Compiling checks
// the mapping against the source contract and the canonical model once, so
// applying a plan to a record needs no lookups by name.
package mapping
