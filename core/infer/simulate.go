package infer

import (
	"errors"
	"fmt"
	"slices"

	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/core/mapping"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Translator answers one batch of ids of one translation (namespace, from
// format, to format), in idmap's TranslateResponse form: values[i] and
// statuses[i] answer ids[i]. An error fails the whole simulation; a route
// that does not exist should be ErrNoRoute.
type Translator func(namespace, from, to string, ids []string) ([]string, []idmapv1.TranslateStatus, error)

// ErrNoRoute is a translation nothing can answer yet: no rule, no table.
var ErrNoRoute = errors.New("no rule or table translates these ids")

// Simulation is what replaying records through a contract version would
// do: its checks, its mapping into the canonical model, its identifier
// translations.
type Simulation struct {
	Records int `json:"records"`
	// Passed would be released.
	Passed int `json:"passed"`
	// Remain counts the records that would stay held by the code of their
	// first error (ID_UNMAPPED, TYPE_MISMATCH…); NO_ROUTE when a
	// translation has no rule or table at all.
	Remain map[string]int `json:"remain,omitempty"`
	// Examples say why some records would stay.
	Examples []string `json:"examples,omitempty"`
}

// GetPassed is Passed, and 0 for a nil simulation.
func (s *Simulation) GetPassed() int {
	if s == nil {
		return 0
	}
	return s.Passed
}

// PassRate is Passed / Records (0 for none).
func (s *Simulation) PassRate() float64 {
	if s.Records == 0 {
		return 0
	}
	return float64(s.Passed) / float64(s.Records)
}

func (s *Simulation) stay(code, why string) {
	s.Remain[code]++
	if len(s.Examples) < maxExamples {
		s.Examples = append(s.Examples, why)
	}
}

// Simulate replays records through contract ct as the gate and the adapter
// would: each record is judged by ct's checks, and those that pass are
// mapped into canonical with their identifiers translated by tr. It
// changes nothing anywhere; tr decides where translations come from (idmap,
// or a rule or table not loaded yet). It fails when ct's checks or mapping
// do not compile.
func Simulate(ct *contractv1.Contract, canonical *contractv1.CanonicalModel, namespaces []*idmapv1.Namespace, tr Translator, recs []Record) (*Simulation, error) {
	cat := newCatalog(namespaces)
	plan, err := cat.compileChecks(ct)
	if err != nil {
		return nil, fmt.Errorf("simulate %s: compile its checks: %w", ct.GetSubject(), err)
	}
	mp, err := mapping.Compile(ct, canonical, cat)
	if err != nil {
		return nil, fmt.Errorf("simulate %s: compile its mapping: %w", ct.GetSubject(), err)
	}
	sim := &Simulation{Records: len(recs), Remain: map[string]int{}}
	checks := plan.Checks()
	dec := record.NewDecoder(mp.Schema(), record.Options{})
	var pass []record.Record
	var passIdx []int
	for i, f := range judge(plan, recs) {
		if f.malformed {
			sim.stay("MALFORMED", fmt.Sprintf("record %s cannot be read as %s", where(recs[i]), recs[i].Format))
			continue
		}
		if f.held {
			for _, fl := range f.fails {
				ch := checks[fl.Check]
				if p := ch.Policy; p == contractv1.Policy_POLICY_BLOCK || p == contractv1.Policy_POLICY_QUARANTINE {
					sim.stay(codeName(fl.Code), fmt.Sprintf("%s: %s", where(recs[i]), fl.Message))
					break
				}
			}
			continue
		}
		format := recordv1.Format_FORMAT_JSON
		if recs[i].Format == recordv1.Format_FORMAT_CSV {
			format = recordv1.Format_FORMAT_CSV
		}
		b, err := dec.Decode(format, recs[i].Raw, recs[i].Position)
		if err != nil || len(b.Records) != 1 || b.Records[0].Err != nil {
			sim.stay("MALFORMED", fmt.Sprintf("record %s cannot be read as %s", where(recs[i]), recs[i].Format))
			continue
		}
		pass = append(pass, b.Records[0])
		passIdx = append(passIdx, i)
	}
	if len(pass) == 0 {
		return sim, nil
	}
	batch := mp.Map(pass)
	defer batch.Release()
	noRoute := map[*mapping.Lookup]error{}
	for _, l := range batch.Lookups() {
		vals, sts, err := tr(l.Namespace, l.From, l.To, l.IDs)
		if errors.Is(err, ErrNoRoute) {
			noRoute[l] = err
			vals, sts = make([]string, len(l.IDs)), make([]idmapv1.TranslateStatus, len(l.IDs))
			for j := range sts {
				sts[j] = idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS
			}
		} else if err != nil {
			return nil, fmt.Errorf("simulate %s: translate %d ids %s/%s→%s: %w", ct.GetSubject(), len(l.IDs), l.Namespace, l.From, l.To, err)
		}
		if err := l.Resolve(vals, sts); err != nil {
			return nil, fmt.Errorf("simulate %s: %w", ct.GetSubject(), err)
		}
	}
	results, err := batch.Results()
	if err != nil {
		return nil, fmt.Errorf("simulate %s: %w", ct.GetSubject(), err)
	}
	for j, r := range results {
		if r.OK() {
			sim.Passed++
			continue
		}
		e := r.Errors[0].Err
		code := codeName(e.GetCode())
		if e.GetCode() == recordv1.ErrorCode_ERROR_CODE_ID_UNMAPPED && len(noRoute) > 0 {
			code = "NO_ROUTE"
		}
		sim.stay(code, fmt.Sprintf("%s: %s", where(recs[passIdx[j]]), e.GetMessage()))
	}
	return sim, nil
}

func where(r Record) string {
	switch {
	case r.ID != "":
		return fmt.Sprintf("%s (partition %s, position %d)", r.ID, r.Partition, r.Position)
	case r.Partition != "":
		return fmt.Sprintf("partition %s position %d", r.Partition, r.Position)
	}
	return fmt.Sprintf("position %d", r.Position)
}

// LocalRoutes translates ids by rules and pairs held in memory: what idmap
// will do once the rule is set or the table imported.
type LocalRoutes struct {
	rules  map[[3]string]localRule
	tables map[[3]string]map[string]string
}

// localRule is one direction of a rule with the format its input must fit.
type localRule struct {
	fn   idrule.Func
	from *idrule.Format
}

// AddRule compiles rule against the formats of namespace and serves its
// direction, and the reverse too when the rule is reversible.
func (l *LocalRoutes) AddRule(namespace *idmapv1.Namespace, rule *idmapv1.Rule) error {
	var from, to *idrule.Format
	for _, f := range namespace.GetFormats() {
		cf, err := idrule.NewFormat("format", f)
		if err != nil {
			return err
		}
		switch f.GetName() {
		case rule.GetFromFormat():
			from = cf
		case rule.GetToFormat():
			to = cf
		}
	}
	c, err := idrule.Compile(rule, from, to)
	if err != nil {
		return err
	}
	if c.Lookup {
		return fmt.Errorf("a lookup rule translates by its table; add the pairs instead")
	}
	if l.rules == nil {
		l.rules = map[[3]string]localRule{}
	}
	ns := namespace.GetName()
	l.rules[[3]string{ns, rule.GetFromFormat(), rule.GetToFormat()}] = localRule{c.Forward, from}
	if c.Reverse != nil {
		l.rules[[3]string{ns, rule.GetToFormat(), rule.GetFromFormat()}] = localRule{c.Reverse, to}
	}
	return nil
}

// AddPairs serves namespace from→to (and to→from) by pairs.
func (l *LocalRoutes) AddPairs(namespace, from, to string, pairs []Pair) {
	if l.tables == nil {
		l.tables = map[[3]string]map[string]string{}
	}
	fwd, rev := map[string]string{}, map[string]string{}
	for _, p := range pairs {
		fwd[p.From], rev[p.To] = p.To, p.From
	}
	l.tables[[3]string{namespace, from, to}] = fwd
	l.tables[[3]string{namespace, to, from}] = rev
}

// Has reports whether the routes answer namespace from→to.
func (l *LocalRoutes) Has(namespace, from, to string) bool {
	k := [3]string{namespace, from, to}
	return l.rules[k].fn != nil || l.tables[k] != nil
}

// Translate implements Translator; a route it does not hold is ErrNoRoute.
func (l *LocalRoutes) Translate(namespace, from, to string, ids []string) ([]string, []idmapv1.TranslateStatus, error) {
	k := [3]string{namespace, from, to}
	rule, table := l.rules[k], l.tables[k]
	if rule.fn == nil && table == nil {
		return nil, nil, fmt.Errorf("%s/%s→%s: %w", namespace, from, to, ErrNoRoute)
	}
	vals := make([]string, len(ids))
	sts := slices.Repeat([]idmapv1.TranslateStatus{idmapv1.TranslateStatus_TRANSLATE_STATUS_MISS}, len(ids))
	for i, id := range ids {
		if rule.fn != nil {
			if !rule.from.Valid(id) {
				sts[i] = idmapv1.TranslateStatus_TRANSLATE_STATUS_INVALID
				continue
			}
			if out, st := rule.fn(id); st == idrule.Hit {
				vals[i], sts[i] = out, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
			}
			continue
		}
		if out, ok := table[id]; ok {
			vals[i], sts[i] = out, idmapv1.TranslateStatus_TRANSLATE_STATUS_HIT
		}
	}
	return vals, sts, nil
}
