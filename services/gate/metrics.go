package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// metrics are the gate's OpenTelemetry instruments: the partition
// counters of GetMonitor as metrics, and gauges of what an operator
// alerts on (match rate, latest verdict, open alerts, held records,
// containment, events waiting for the registry). Prometheus names them
// seam_gate_…; deploy/observability has the alert rules and dashboard
// built on them.
//
// An alert rule must not depend on when a series is born: a counter
// that appears at 1 shows no increase(). So each subject's counters the
// rules and dashboard read exist at 0 from its first batch in this
// process, and the gauges an operator pages on (match rate, latest
// verdict, open alerts) are read from the store at each scrape: every
// replica reports the same, a restart loses nothing, and a value stays
// until what it measures changes in the store.
type metrics struct {
	records    metric.Int64Counter
	batches    metric.Int64Counter
	alerts     metric.Int64Counter
	released   metric.Int64Counter
	partitions metric.Int64Counter

	mu sync.Mutex
	// seen are the subjects whose counters were created at 0.
	seen map[string]bool
	// rates caches the match rates of sealed units by unit and seal time,
	// so a scrape decodes only the figures of units sealed since the last.
	rates map[rateKey]map[string]float64
}

type rateKey struct {
	pid       int64
	amendment int32
	sealedAt  int64
}

// latestUnits is how many of a subject's latest sealed units the match
// rate gauge looks through for each identifier field's latest figure.
const latestUnits = 8

// verdictNames are the partition verdicts as metric labels.
var verdictNames = []string{"PASSED", "PASSED_WITH_ALERTS", "BLOCKED"}

// alertKinds are the kinds of alerts a seal raises.
var alertKinds = []string{"MATCH_RATE", "NULL_RATE", "MEAN_DRIFT", "ROW_COUNT", "RECORD_CHECK", "PARTITION_BLOCKED", "UNANNOUNCED_CHANGE"}

// severities are the alert severities as metric labels.
var severities = map[gatev1.Severity]string{
	gatev1.Severity_SEVERITY_INFO:     "info",
	gatev1.Severity_SEVERITY_WARNING:  "warning",
	gatev1.Severity_SEVERITY_CRITICAL: "critical",
}

// newMetrics creates the instruments. The gauges read the store on each
// collection (a scrape), for the subjects subjects names; now is the
// clock in Unix nanoseconds.
func newMetrics(m metric.Meter, st gateStore, subjects func() []string, now func() int64) (*metrics, error) {
	out := metrics{seen: map[string]bool{}, rates: map[rateKey]map[string]float64{}}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	intGauge := func(name, desc, unit string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return g
	}
	floatGauge := func(name, desc, unit string) metric.Float64ObservableGauge {
		g, err := m.Float64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return g
	}
	out.records = counter("seam.gate.records", "Records ingested, by subject and verdict (accepted, quarantined).")
	out.batches = counter("seam.gate.batches", "Batches ingested, by subject and status.")
	out.alerts = counter("seam.gate.alerts", "Alerts raised, by subject and kind.")
	out.released = counter("seam.gate.released", "Quarantined records released by replays, by subject.")
	out.partitions = counter("seam.gate.partitions", "Partitions and amendments sealed, by subject and verdict (PASSED, PASSED_WITH_ALERTS, BLOCKED).")

	matchRate := floatGauge("seam.gate.match.rate",
		"Share of identifiers that resolve, in the latest sealed partition that has the field, by subject and identifier field (read from the store).", "")
	verdict := intGauge("seam.gate.latest.verdict",
		"1 for the verdict of the subject's latest sealed partition (by name), 0 for the others, by subject, partition and verdict (read from the store).", "")
	open := intGauge("seam.gate.alerts.open",
		"Alerts OPEN (raised, neither acknowledged nor resolved), by subject and severity (read from the store).", "{alert}")
	held := intGauge("seam.gate.quarantine.held",
		"Quarantined records held (not released, discarded or superseded), by subject and reason.", "{record}")
	contained := intGauge("seam.gate.contained",
		"1 while a subject is contained (everything it sends is held), 0 once released, by subject.", "")
	pending := intGauge("seam.gate.events.pending",
		"Registry events (alerts, containment, backfills) queued and not yet delivered to the registry.", "{event}")
	pendingAge := floatGauge("seam.gate.events.pending.age",
		"Seconds the oldest undelivered registry event has waited; 0 when none wait.", "s")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("gate: create metrics: %w", err)
	}
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		var errs []error
		known := subjects()
		for _, subject := range known {
			out.touch(ctx, subject) // after a restart, before the subject's first batch
			subj := attribute.String("subject", subject)
			counts, err := st.QuarantineCounts(ctx, quarantineFilter{subject: subject, state: gatev1.QuarantineState_QUARANTINE_STATE_HELD}, "reason")
			if err != nil {
				errs = append(errs, err)
			}
			for _, c := range counts {
				o.ObserveInt64(held, c.GetCount(), metric.WithAttributes(subj, attribute.String("reason", c.GetKey())))
			}
			units, err := st.LatestSealed(ctx, subject, latestUnits)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(units) > 0 {
				latest := units[0]
				for _, v := range verdictNames {
					n := int64(0)
					if v == verdictName(latest.verdict) {
						n = 1
					}
					o.ObserveInt64(verdict, n, metric.WithAttributes(subj, attribute.String("partition", latest.part), attribute.String("verdict", v)))
				}
			}
			rates, err := out.latestRates(ctx, st, units)
			errs = append(errs, err)
			for field, r := range rates {
				o.ObserveFloat64(matchRate, r, metric.WithAttributes(subj, attribute.String("field", field)))
			}
		}

		// Every known subject reports each severity, 0 when nothing holds,
		// so a rule sees an alert's first raise as a change.
		openCounts, err := st.OpenAlertCounts(ctx)
		errs = append(errs, err)
		counted := map[[2]string]int64{}
		for _, subject := range known {
			for _, sev := range severities {
				counted[[2]string{subject, sev}] = 0
			}
		}
		for _, c := range openCounts {
			if sev, ok := severities[c.severity]; ok {
				counted[[2]string{c.subject, sev}] += c.count
			}
		}
		for k, n := range counted {
			o.ObserveInt64(open, n, metric.WithAttributes(attribute.String("subject", k[0]), attribute.String("severity", k[1])))
		}

		conts, err := st.Containments(ctx)
		errs = append(errs, err)
		for _, c := range conts {
			v := int64(0)
			if c.Contained {
				v = 1
			}
			o.ObserveInt64(contained, v, metric.WithAttributes(attribute.String("subject", c.Subject)))
		}
		n, oldest, err := st.OutboxBacklog(ctx)
		errs = append(errs, err)
		if err == nil {
			o.ObserveInt64(pending, n)
			age := 0.0
			if n > 0 {
				age = float64(now()-oldest.UnixNano()) / 1e9
			}
			o.ObserveFloat64(pendingAge, max(age, 0))
		}
		return errors.Join(errs...)
	}, matchRate, verdict, open, held, contained, pending, pendingAge)
	if err != nil {
		return nil, fmt.Errorf("gate: register gauges: %w", err)
	}
	return &out, nil
}

// latestRates returns, per identifier field, the match rate of the latest
// of units (latest first) that checked identifiers of that field.
func (m *metrics) latestRates(ctx context.Context, st gateStore, units []sealedUnit) (map[string]float64, error) {
	out := map[string]float64{}
	for _, u := range units {
		k := rateKey{pid: u.pid, amendment: u.amendment, sealedAt: u.sealedAt}
		m.mu.Lock()
		rates, ok := m.rates[k]
		m.mu.Unlock()
		if !ok {
			var err error
			if rates, err = st.UnitMatchRates(ctx, u.pid, u.amendment); err != nil {
				return out, err
			}
			m.mu.Lock()
			if len(m.rates) > 4096 {
				clear(m.rates) // units sealed long ago; the next scrape reads the few it needs
			}
			m.rates[k] = rates
			m.mu.Unlock()
		}
		for field, r := range rates {
			if _, ok := out[field]; !ok {
				out[field] = r
			}
		}
	}
	return out, nil
}

// matchRates is a unit's match rate per identifier field it checked.
func matchRates(f unitFigures) map[string]float64 {
	out := map[string]float64{}
	for field, fs := range f.Stats.Fields {
		if fs.IDs > 0 {
			out[field] = float64(fs.Matched) / float64(fs.IDs)
		}
	}
	return out
}

// touch creates a subject's counters at 0 the first time this process
// sees it, so the first BLOCKED partition or first alert of a kind is an
// increase from 0 and not the birth of a series.
func (m *metrics) touch(ctx context.Context, subject string) {
	m.mu.Lock()
	seen := m.seen[subject]
	m.seen[subject] = true
	m.mu.Unlock()
	if seen {
		return
	}
	subj := attribute.String("subject", subject)
	for _, v := range verdictNames {
		m.partitions.Add(ctx, 0, metric.WithAttributes(subj, attribute.String("verdict", v)))
	}
	for _, k := range alertKinds {
		m.alerts.Add(ctx, 0, metric.WithAttributes(subj, attribute.String("kind", k)))
	}
	for _, v := range []string{"accepted", "quarantined"} {
		m.records.Add(ctx, 0, metric.WithAttributes(subj, attribute.String("verdict", v)))
	}
	m.released.Add(ctx, 0, metric.WithAttributes(subj))
}

func (m *metrics) batch(ctx context.Context, subject string, sum *gatev1.BatchSummary) {
	m.touch(ctx, subject)
	subj := attribute.String("subject", subject)
	m.batches.Add(ctx, 1, metric.WithAttributes(subj, attribute.String("status", sum.GetStatus().String())))
	m.records.Add(ctx, sum.GetAccepted(), metric.WithAttributes(subj, attribute.String("verdict", "accepted")))
	m.records.Add(ctx, sum.GetQuarantined(), metric.WithAttributes(subj, attribute.String("verdict", "quarantined")))
}

func (m *metrics) alert(ctx context.Context, subject, kind string) {
	m.touch(ctx, subject)
	m.alerts.Add(ctx, 1, metric.WithAttributes(attribute.String("subject", subject), attribute.String("kind", kind)))
}

// sealed counts a unit's verdict.
func (m *metrics) sealed(ctx context.Context, subject string, verdict gatev1.PartitionVerdict) {
	m.touch(ctx, subject)
	m.partitions.Add(ctx, 1, metric.WithAttributes(attribute.String("subject", subject), attribute.String("verdict", verdictName(verdict))))
}

// verdictName is a verdict without its enum prefix.
func verdictName(v gatev1.PartitionVerdict) string {
	return strings.TrimPrefix(v.String(), "PARTITION_VERDICT_")
}

// severityName is an alert severity as a metric label and log level word.
func severityName(s gatev1.Severity) string {
	if n, ok := severities[s]; ok {
		return n
	}
	return strings.ToLower(strings.TrimPrefix(s.String(), "SEVERITY_"))
}
