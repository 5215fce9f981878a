package main

import (
	"fmt"
	"strings"
	"time"
)

// report is what a run found, and the targets it is held to.
type report struct {
	opts       options
	started    time.Time
	took       time.Duration
	ledger     *ledger
	kills      []recovery
	killTime   time.Duration
	outage     *recovery
	hangs      []hangResult
	reconciled *reconciliation
	corpus     []caseResult
}

// recoveryTarget is how soon after a peer is back ingest must work again.
const recoveryTarget = 3 * time.Second

func (r *report) recoveries() []time.Duration {
	var out []time.Duration
	for _, k := range r.kills {
		out = append(out, k.took)
	}
	if r.outage != nil {
		out = append(out, r.outage.took)
	}
	for _, h := range r.hangs {
		out = append(out, h.recovery)
	}
	return out
}

// passed reports whether every target was met.
func (r *report) passed() bool {
	if r.opts.corpusOnly {
		for _, c := range r.corpus {
			if !c.pass {
				return false
			}
		}
		return len(r.corpus) > 0
	}
	if r.reconciled == nil || r.reconciled.lost != 0 || r.reconciled.duplicated != 0 {
		return false
	}
	r.ledger.mu.Lock()
	bad := len(r.ledger.wrong) + len(r.ledger.undelivered)
	r.ledger.mu.Unlock()
	if bad > 0 || len(r.kills) < r.opts.kills {
		return false
	}
	for _, d := range r.recoveries() {
		if d >= recoveryTarget {
			return false
		}
	}
	for _, h := range r.hangs {
		if !h.pass {
			return false
		}
	}
	for _, c := range r.corpus {
		if !c.pass {
			return false
		}
	}
	return true
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func mib(b int64) string { return fmt.Sprintf("%+.1f MB", float64(b)/(1<<20)) }

func (r *report) markdown() string {
	var b strings.Builder
	form := "long"
	if r.opts.short {
		form = "short"
	}
	store := "SQLite (embedded)"
	if r.opts.store != "" {
		store = "PostgreSQL"
	}
	fmt.Fprintf(&b, "\n## Chaos run (%s form), %s\n\n", form, r.started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Command: `%s`. Store: %s. Peer deadline (`--peer-timeout`): %s. Took %s.\n\n",
		strings.TrimSpace(r.opts.commandShown), store, r.opts.peerTimeout, r.took.Round(time.Second))

	if r.opts.corpusOnly {
		r.corpusMarkdown(&b)
		return b.String()
	}
	b.WriteString("### kill -9 under load\n\n")
	per := map[string]int{}
	var took []time.Duration
	for _, k := range r.kills {
		per[k.service]++
		took = append(took, k.took)
	}
	fmt.Fprintf(&b, "%d SIGKILLs in %s (gate %d, registry %d, adapter %d, idmap %d), each service restarted at once, %d load workers retrying.\n\n",
		len(r.kills), r.killTime.Round(time.Second), per["gate"], per["registry"], per["adapter"], per["idmap"], r.opts.workers)
	if rec := r.reconciled; rec != nil {
		b.WriteString("| | acknowledged | stored by the gate |\n| --- | ---: | ---: |\n")
		fmt.Fprintf(&b, "| batches | %d | %d |\n| records | %d | %d |\n| accepted | %d | %d |\n| quarantined | %d | %d (monitors), %d (quarantine) |\n\n",
			rec.batches, rec.storedBatches, rec.records, rec.storedRecords, rec.accepted, rec.storedAccepted, rec.quarantined, rec.storedQuarantined, rec.quarantineHeld)
		fmt.Fprintf(&b, "**Lost records: %d. Duplicated records: %d.**", rec.lost, rec.duplicated)
	}
	r.ledger.mu.Lock()
	fmt.Fprintf(&b, " Batches sent again on purpose after their answer: %d (each answered as the first time, marked retried). "+
		"Answers with a wrong verdict: %d. Batches never acknowledged: %d.\n\n", r.ledger.resent, len(r.ledger.wrong), len(r.ledger.undelivered))
	for _, w := range append(append([]string(nil), r.ledger.wrong...), r.ledger.undelivered...) {
		fmt.Fprintf(&b, "- %s\n", w)
	}
	r.ledger.mu.Unlock()
	fmt.Fprintf(&b, "Answers the load got, by code (retried until acknowledged): %s.\n\n", r.ledger.answerSummary())
	if len(took) > 0 {
		fmt.Fprintf(&b, "Recovery after each kill (service serving again → next batch acknowledged): median %s, p95 %s, max %s.\n\n",
			percentile(took, 0.5).Round(time.Millisecond), percentile(took, 0.95).Round(time.Millisecond), percentile(took, 1).Round(time.Millisecond))
	}
	if r.outage != nil {
		fmt.Fprintf(&b, "### A long outage\n\nThe adapter was down %s under load; ingest worked again %s after it was back (target: under %s).\n\n",
			r.opts.outage, r.outage.took.Round(time.Millisecond), recoveryTarget)
	}
	if len(r.hangs) > 0 {
		b.WriteString("### Hung peers (SIGSTOP)\n\n| peer | answer | after | wanted | met | ingest again after SIGCONT |\n| --- | --- | ---: | --- | --- | ---: |\n")
		for _, h := range r.hangs {
			fmt.Fprintf(&b, "| %s | %s: %s | %s | %s | %s | %s |\n", h.service, h.code, clip(h.message, 90), h.took.Round(time.Millisecond),
				h.want, yes(h.pass), h.recovery.Round(time.Millisecond))
		}
		b.WriteString("\n")
	}
	r.corpusMarkdown(&b)
	return b.String()
}

func (r *report) corpusMarkdown(b *strings.Builder) {
	if len(r.corpus) > 0 {
		b.WriteString("### Bad inputs\n\nEach against a `seam up` node whose RSS is sampled every 10 ms; after each, the node must still serve.\n\n")
		b.WriteString("| via | input | wanted | got | RSS growth | met |\n| --- | --- | --- | --- | ---: | --- |\n")
		for _, c := range r.corpus {
			name := c.name
			growth := mib(c.rssGrowth)
			if c.rssLimit > 0 {
				growth += fmt.Sprintf(" (limit +%d MB)", c.rssLimit>>20)
			}
			met := yes(c.pass)
			if !c.alive {
				met = "**no: the server died**"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", c.transport, name, c.want, strings.ReplaceAll(clip(c.got, 140), "|", "\\|"), growth, met)
		}
		b.WriteString("\n")
	}
}
