// Package contract is Seam's contract model: loading contracts authored as
// YAML into their proto messages, validating them with field-path errors,
// and the facts about fields that the classifier and compilers share.
package contract
