// Package classify lists the differences between two versions of a source
// contract, one change per difference with a stable rule id, and decides for
// a compatibility mode which of them are breaking. docs/rules.md documents
// every rule with an example and its level in each direction.
package classify
