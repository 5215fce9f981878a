// Package adapter is the adapter service: it turns source records of a
// contract version into the canonical model through that version's
// compiled mapping, translating identifiers through idmap, with an explicit
// error per failed record.
package adapter
