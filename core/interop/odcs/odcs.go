// Package odcs converts Open Data Contract Standard (ODCS) v3 contracts —
// v3.0.x and v3.1.0 — into Seam contracts and Seam contracts back into ODCS
// v3.1.0. One ODCS schema object becomes one Seam contract (one subject).
//
// What ODCS says and Seam cannot check is listed in the conversion's
// interop.Report: dropped (no Seam equivalent), approximated (carried with a
// different meaning) or kept (stored as a contract label, exported again,
// not acted on). Export writes Seam's own parts that ODCS has no word for
// (identifiers, time layouts, the mapping, compatibility, policies) as
// custom properties named seam*, which import reads back, so export then
// import gives back the same contract.
package odcs

import (
	"regexp"
	"strings"
)

// APIVersion is the ODCS version Export writes.
const APIVersion = "v3.1.0"

// Custom properties Seam writes on export and reads on import.
const (
	propSubject       = "seamSubject"
	propCompatibility = "seamCompatibility"
	propLabels        = "seamLabels"
	propMapping       = "seamMapping"
	propIdentifier    = "seamIdentifier"
	propLayout        = "seamLayout"
	propPolicy        = "seamPolicy"
	propThreshold     = "seamThreshold"
	// engineSeam names Seam as the engine of a custom quality rule whose
	// implementation is a Seam check rule.
	engineSeam = "seam"
	// slaNotice is the SLA property that carries the notice period.
	slaNotice = "noticePeriod"
)

// Labels under which import keeps ODCS metadata Seam stores but does not
// act on; export writes them back where they came from.
const (
	labelPrefix       = "odcs."
	objectLabelPrefix = "odcs.schema."
	customLabelPrefix = "odcs.custom."
)

// rootLabels are the scalar root keys kept as labels.
var rootLabels = []string{"id", "name", "version", "status", "domain", "dataProduct", "tenant", "contractCreatedTs"}

// objectLabels are the scalar schema object keys kept as labels.
var objectLabels = []string{"id", "name", "physicalName", "physicalType", "businessName", "dataGranularityDescription"}

var (
	nonName  = regexp.MustCompile(`[^a-z0-9_]+`)
	nameHead = regexp.MustCompile(`^[^a-z]+`)
)

// subjectPart turns free text ("My Quantum", "Orders-Event Stream") into a
// segment of a dotted Seam name ("my_quantum", "orders_event_stream").
func subjectPart(s string) string {
	s = nonName.ReplaceAllString(strings.ToLower(strings.TrimSpace(s)), "_")
	s = nameHead.ReplaceAllString(s, "")
	return strings.Trim(s, "_")
}
