package infer

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/seamdata/seam/core/check"
	"github.com/seamdata/seam/core/idrule"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// Verification is what a contract version's checks say about records:
// how many pass, and why the others would be held.
type Verification struct {
	Records int `json:"records"`
	Passed  int `json:"passed"`
	// Malformed records cannot be read as their format at all.
	Malformed int `json:"malformed"`
	// ByCheck counts the failing records by the first check (of policy
	// BLOCK or QUARANTINE) they fail; ByCode by its error code.
	ByCheck map[string]int `json:"by_check,omitempty"`
	ByCode  map[string]int `json:"by_code,omitempty"`
	// Error says why the version's checks could not be compiled; the
	// counts are then empty.
	Error string `json:"error,omitempty"`
}

// failures are one record's failed checks, as the gate would judge it.
type failures struct {
	malformed bool
	fails     []check.Failure
	held      bool // a BLOCK or QUARANTINE check failed
}

// catalog is the idmap namespaces a contract refers to, with the formats a
// proposal would create: check's identifier formats and mapping's catalog.
type catalog struct {
	namespaces map[string]*idmapv1.Namespace
	// id is the namespaces' content, part of the key of compiled plans;
	// uncached when it could not be encoded, so no two catalogs share one.
	id       string
	uncached bool
}

type compiled struct {
	plan *check.Plan
	err  error
}

// plans keeps the most recent compiled check plans by content (the
// catalog's namespaces and the contract): a proposal compiles the active
// version and its own draft several times over, and proposals against
// the same active version compile it again each time.
var plans = struct {
	sync.Mutex
	byKey map[string]compiled
	order []string
}{byKey: map[string]compiled{}}

// maxPlans bounds plans; the oldest entry goes first.
const maxPlans = 64

func newCatalog(nss []*idmapv1.Namespace) *catalog {
	c := &catalog{namespaces: map[string]*idmapv1.Namespace{}}
	for _, ns := range nss {
		if ns != nil {
			c.namespaces[ns.GetName()] = &idmapv1.Namespace{Name: ns.GetName(), Formats: slices.Clone(ns.GetFormats())}
		}
	}
	var id []byte
	for _, name := range slices.Sorted(maps.Keys(c.namespaces)) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.namespaces[name])
		if err != nil {
			c.uncached = true
			break
		}
		id = binary.AppendUvarint(id, uint64(len(b)))
		id = append(id, b...)
	}
	c.id = string(id)
	return c
}

func (c *catalog) format(ns, name string) *idmapv1.Format {
	for _, f := range c.namespaces[ns].GetFormats() {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func (c *catalog) add(ns string, f *idmapv1.Format) {
	n := c.namespaces[ns]
	if n == nil {
		n = &idmapv1.Namespace{Name: ns}
		c.namespaces[ns] = n
	}
	n.Formats = append(n.Formats, f)
}

// IdentifierFormat implements check.IdentifierFormats.
func (c *catalog) IdentifierFormat(ns, name string) (check.IdentifierFormat, bool) {
	f := c.format(ns, name)
	if f == nil {
		return nil, false
	}
	cf, err := idrule.NewFormat("format", f)
	if err != nil {
		return nil, false
	}
	return cf, true
}

// Formats implements mapping.IDCatalog.
func (c *catalog) Formats(ns string) ([]*idmapv1.Format, bool, error) {
	n, ok := c.namespaces[ns]
	if !ok {
		return nil, false, nil
	}
	return n.GetFormats(), true, nil
}

// compileChecks compiles c's checks, with identifier format checks where
// the catalog knows every namespace the contract names.
func (c *catalog) compileChecks(ct *contractv1.Contract) (*check.Plan, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ct)
	if err != nil || c.uncached {
		return c.compile(ct)
	}
	key := string(binary.AppendUvarint([]byte(c.id), uint64(len(b)))) + string(b)
	plans.Lock()
	m, ok := plans.byKey[key]
	plans.Unlock()
	if ok {
		return m.plan, m.err
	}
	plan, err := c.compile(ct)
	plans.Lock()
	defer plans.Unlock()
	if _, ok := plans.byKey[key]; !ok {
		if len(plans.order) == maxPlans {
			delete(plans.byKey, plans.order[0])
			plans.order = plans.order[1:]
		}
		plans.byKey[key] = compiled{plan, err}
		plans.order = append(plans.order, key)
	}
	return plan, err
}

func (c *catalog) compile(ct *contractv1.Contract) (*check.Plan, error) {
	known := true
	for ref := range idFields(ct.GetFields()) {
		if c.format(ref.GetNamespace(), ref.GetFormat()) == nil {
			known = false
		}
	}
	if known {
		return check.Compile(ct, check.WithIdentifierFormats(c))
	}
	return check.Compile(ct)
}

// idFields yields the identifier of every field that declares one.
func idFields(fields []*contractv1.Field) func(func(*contractv1.Identifier) bool) {
	return func(yield func(*contractv1.Identifier) bool) {
		var walk func([]*contractv1.Field) bool
		walk = func(fs []*contractv1.Field) bool {
			for _, f := range fs {
				if id := f.GetIdentifier(); id != nil && !yield(id) {
					return false
				}
				if !walk(f.GetFields()) {
					return false
				}
				if it := f.GetItems(); it != nil && !walk([]*contractv1.Field{it}) {
					return false
				}
			}
			return true
		}
		walk(fields)
	}
}

// judge runs plan on each record alone, as the gate judges a record at
// ingest (uniqueness within a batch aside: the records came from many).
func judge(plan *check.Plan, recs []Record) []failures {
	out := make([]failures, len(recs))
	dec := record.NewDecoder(plan.Schema(), record.Options{})
	checks := plan.Checks()
	for i, r := range recs {
		format := recordv1.Format_FORMAT_JSON
		if r.Format == recordv1.Format_FORMAT_CSV {
			format = recordv1.Format_FORMAT_CSV
		}
		b, err := dec.Decode(format, r.Raw, r.Position)
		if err != nil || len(b.Records) != 1 || b.Records[0].Err != nil {
			out[i] = failures{malformed: true, held: true}
			dec.Recycle()
			continue
		}
		res := plan.ValidatePartition(b.Records, r.Partition)
		rr := res.Records[0]
		f := failures{fails: slices.Clone(rr.Failures)}
		for _, fl := range rr.Failures {
			if checks[fl.Check].Kind == check.KindUnique {
				continue // a key seen twice in this one-record batch cannot be
			}
			if p := checks[fl.Check].Policy; p == contractv1.Policy_POLICY_BLOCK || p == contractv1.Policy_POLICY_QUARANTINE {
				f.held = true
			}
		}
		out[i] = f
		dec.Recycle()
	}
	return out
}

// Verify runs contract ct's record checks on records, as the gate would
// judge each one, with the identifier formats of namespaces. It does not
// run the mapping (see Simulate).
func Verify(ct *contractv1.Contract, namespaces []*idmapv1.Namespace, recs []Record) Verification {
	return newCatalog(namespaces).verify(ct, recs)
}

func (c *catalog) verify(ct *contractv1.Contract, recs []Record) Verification {
	v := Verification{Records: len(recs), ByCheck: map[string]int{}, ByCode: map[string]int{}}
	plan, err := c.compileChecks(ct)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	checks := plan.Checks()
	for _, f := range judge(plan, recs) {
		switch {
		case f.malformed:
			v.Malformed++
			v.ByCode["MALFORMED"]++
		case !f.held:
			v.Passed++
		default:
			for _, fl := range f.fails {
				ch := checks[fl.Check]
				if ch.Kind == check.KindUnique || ch.Policy == contractv1.Policy_POLICY_ALERT {
					continue
				}
				v.ByCheck[ch.Name]++
				v.ByCode[codeName(fl.Code)]++
				break
			}
		}
	}
	return v
}

func codeName(c recordv1.ErrorCode) string { return strings.TrimPrefix(c.String(), "ERROR_CODE_") }

// fieldFailures counts, per field path and check kind, the records whose
// value failed; record-level failures are under "".
type fieldFailures map[string]map[check.Kind]int

func (c *catalog) fieldFailures(ct *contractv1.Contract, recs []Record) (fieldFailures, error) {
	// The checks the fields imply are what the decisions rest on; the
	// declared ones (statistics, CEL) say nothing about a field's shape
	// and may not compile until the proposal is done.
	ct = proto.Clone(ct).(*contractv1.Contract)
	ct.Checks = nil
	plan, err := c.compileChecks(ct)
	if err != nil {
		return nil, fmt.Errorf("compile the checks of %s: %w", ct.GetSubject(), err)
	}
	checks := plan.Checks()
	out := fieldFailures{}
	for _, f := range judge(plan, recs) {
		seen := map[string]bool{}
		for _, fl := range f.fails {
			ch := checks[fl.Check]
			key := fl.Field + "\x00" + ch.Kind.String()
			if seen[key] {
				continue
			}
			seen[key] = true
			m := out[fl.Field]
			if m == nil {
				m = map[check.Kind]int{}
				out[fl.Field] = m
			}
			m[ch.Kind]++
		}
	}
	return out, nil
}
