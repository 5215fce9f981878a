// Package infer proposes the fix for a source that changed without
// notice, from what Seam held: the records' profile field by field
// (type, shape, nullability, values, bounds), the next contract version
// with the changes against the active one and a mapping that keeps the
// canonical model unchanged where it can, the idmap rule that translates
// a changed identifier back (or the plain statement that only a lookup
// table will), and a simulation of replaying the records through it all.
//
// It is pure: records, contracts and namespaces come in, proposals come
// out; the seam command fetches them from the gate, the registry and
// idmap, and carries the proposal out.
package infer
