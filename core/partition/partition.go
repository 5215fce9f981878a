// Package partition places records in the partitions a contract's
// partition time declares: it names the partition of an event time,
// checks partition names, and says when the event-time watermark has
// passed a partition. Partitions are named by their start in UTC:
// "2026-10-01T13" (hour), "2026-10-01" (day), "2026-10" (month), so that
// names sort in time order.
package partition

import (
	"fmt"
	"strings"
	"time"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// Spec is a contract's partition time, compiled.
type Spec struct {
	// Field is the path of the field that places a record.
	Field       string
	Granularity contractv1.Granularity
	// Lateness is how long after a partition ends its records may still
	// arrive before the watermark seals it.
	Lateness time.Duration
	// layout parses the field's values; date is set for DATE fields.
	layout string
	date   bool
}

// Compile returns the partition time of ct, or nil when it declares none.
// The contract is expected to be valid (contract.Validate); an invalid
// partition time is still an error here, never a panic.
func Compile(ct *contractv1.Contract) (*Spec, error) {
	pt := ct.GetPartitionTime()
	if pt == nil {
		return nil, nil
	}
	f := contract.Lookup(ct.GetFields(), pt.GetField())
	if f == nil {
		return nil, fmt.Errorf("partition_time.field: %q is not a field of the contract", pt.GetField())
	}
	s := &Spec{Field: pt.GetField(), Granularity: pt.GetGranularity(), layout: f.GetLayout()}
	switch f.GetType() {
	case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
		if s.layout == "" || s.layout == "RFC3339" {
			s.layout = time.RFC3339Nano
		}
	case contractv1.FieldType_FIELD_TYPE_DATE:
		s.date = true
		if s.layout == "" {
			s.layout = time.DateOnly
		}
	default:
		return nil, fmt.Errorf("partition_time.field: %q is %s; a partition time is a TIMESTAMP or DATE field", pt.GetField(), contract.ShortName(f.GetType()))
	}
	if _, ok := layouts[s.Granularity]; !ok {
		return nil, fmt.Errorf("partition_time.granularity: declare HOUR, DAY or MONTH")
	}
	late, err := ParseLateness(pt.GetAllowedLateness())
	if err != nil {
		return nil, err
	}
	s.Lateness = late
	return s, nil
}

// ParseLateness parses an allowed lateness: a Go duration ("6h"), a number
// of days ("2d"), or both ("1d12h"); empty is none.
func ParseLateness(s string) (time.Duration, error) {
	d, err := contract.ParseNoticePeriod(s)
	if err != nil {
		return 0, fmt.Errorf("partition_time.allowed_lateness: %q is not a duration such as \"6h\" or \"2d\"", s)
	}
	return d, nil
}

// layouts name partitions of each granularity.
var layouts = map[contractv1.Granularity]string{
	contractv1.Granularity_GRANULARITY_HOUR:  "2006-01-02T15",
	contractv1.Granularity_GRANULARITY_DAY:   time.DateOnly,
	contractv1.Granularity_GRANULARITY_MONTH: "2006-01",
}

// Name is the partition of t.
func (s *Spec) Name(t time.Time) string {
	return t.UTC().Format(layouts[s.Granularity])
}

// Bounds parses a partition name and returns its start and end, [start,
// end). A name that is not exactly a partition of the granularity is an
// error saying what a name looks like.
func (s *Spec) Bounds(name string) (start, end time.Time, err error) {
	layout := layouts[s.Granularity]
	start, err = time.Parse(layout, name)
	if err != nil || start.Format(layout) != name {
		return time.Time{}, time.Time{}, fmt.Errorf("partition %q is not a %s partition of %s; name it by its start in UTC, for example %q",
			name, strings.ToLower(contract.ShortName(s.Granularity)), s.Field, time.Date(2026, 10, 1, 13, 0, 0, 0, time.UTC).Format(layout))
	}
	switch s.Granularity {
	case contractv1.Granularity_GRANULARITY_HOUR:
		end = start.Add(time.Hour)
	case contractv1.Granularity_GRANULARITY_DAY:
		end = start.AddDate(0, 0, 1)
	default:
		end = start.AddDate(0, 1, 0)
	}
	return start, end, nil
}

// Time is the event time of a record's partition-time value. The value
// has passed the field's type check, so an error means it is absent.
func (s *Spec) Time(v record.Value) (time.Time, error) {
	if v.Kind() != record.KindString {
		return time.Time{}, fmt.Errorf("field %s: %s, but it places the record in its partition; send a value", s.Field, v.Kind())
	}
	t, err := time.Parse(s.layout, string(v.Bytes()))
	if err != nil {
		return time.Time{}, fmt.Errorf("field %s: %q does not parse as %s: %v", s.Field, v.Bytes(), s.layout, err)
	}
	return t.UTC(), nil
}

// Cutoff is the first partition the watermark has not passed: every
// partition named before it has ended at least Lateness before the
// watermark, so no on-time record can still arrive for it.
func (s *Spec) Cutoff(watermark time.Time) string {
	return s.Name(watermark.Add(-s.Lateness))
}
