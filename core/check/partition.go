package check

import (
	"fmt"
	"time"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// partitionLayouts are the partition names in_partition understands, each
// with the span it covers.
var partitionLayouts = []struct {
	layout string
	next   func(time.Time) time.Time
}{
	{"2006-01-02", func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }},
	{"2006-01-02T15", func(t time.Time) time.Time { return t.Add(time.Hour) }},
	{"2006-01-02-15", func(t time.Time) time.Time { return t.Add(time.Hour) }},
	{"2006-01", func(t time.Time) time.Time { return t.AddDate(0, 1, 0) }},
}

// PartitionWindow returns the span [start, end) a partition named by its
// date covers in loc: "2026-03-01" a day, "2026-03-01T09" (or
// "2026-03-01-09") an hour, "2026-03" a month. A nil loc is UTC.
func PartitionWindow(partition string, loc *time.Location) (start, end time.Time, err error) {
	if loc == nil {
		loc = time.UTC
	}
	for _, l := range partitionLayouts {
		if t, err := time.ParseInLocation(l.layout, partition, loc); err == nil {
			return t, l.next(t), nil
		}
	}
	return time.Time{}, time.Time{}, fmt.Errorf("partition %q is not named by its date; in_partition needs partitions such as 2026-03-01 (a day), 2026-03-01T09 (an hour) or 2026-03 (a month)", partition)
}

// InPartition reports whether t lies in [start − tolerance, end + tolerance).
func InPartition(t, start, end time.Time, tolerance time.Duration) bool {
	return !t.Before(start.Add(-tolerance)) && t.Before(end.Add(tolerance))
}

// partitionPlan is a compiled in_partition check of one field.
type partitionPlan struct {
	check     int
	slot      int
	typ       contractv1.FieldType
	layout    string
	zone      *time.Location
	tolerance time.Duration
}

// inPartition compiles in_partition(field, zone: "…", tolerance: 2h).
func (c *compiler) inPartition(where string, call *call, args map[string]argValue, ch Check, slot int) {
	fp := &c.p.fields[slot]
	if fp.typ != contractv1.FieldType_FIELD_TYPE_TIMESTAMP && fp.typ != contractv1.FieldType_FIELD_TYPE_DATE {
		c.errorf(where+".rule", "column %d: in_partition needs a TIMESTAMP or DATE field; %q is %s", call.args[0].col, fp.path, contract.ShortName(fp.typ))
		return
	}
	ch.Zone = time.UTC
	if a, ok := args["zone"]; ok {
		ch.Zone = a.zone
	}
	ch.Tolerance = args["tolerance"].duration
	ch.Code = recordv1.ErrorCode_ERROR_CODE_OUTSIDE_PARTITION
	i := c.add(ch)
	c.p.partition = append(c.p.partition, partitionPlan{check: i, slot: slot, typ: fp.typ, layout: fp.layout, zone: ch.Zone, tolerance: ch.Tolerance})
}

// eventTime parses a TIMESTAMP or DATE value that passed its type check.
// Values without an offset are read in zone.
func (pp *partitionPlan) eventTime(v record.Value) (time.Time, bool) {
	s := string(v.Bytes())
	layout := pp.layout
	switch {
	case pp.typ == contractv1.FieldType_FIELD_TYPE_DATE && layout == "":
		layout = "2006-01-02"
	case layout == "" || layout == "RFC3339":
		layout = time.RFC3339Nano
	}
	t, err := time.ParseInLocation(layout, s, pp.zone)
	return t, err == nil
}

// partitionWindow is a batch's partition span for the in_partition checks,
// by zone; err is set when the partition is not named by its date.
type partitionWindow struct {
	name       string
	start, end time.Time
	err        error
}

// windows computes each in_partition check's span once per batch.
func (p *Plan) windows(partition string) []partitionWindow {
	if partition == "" || len(p.partition) == 0 {
		return nil
	}
	out := make([]partitionWindow, len(p.partition))
	for i := range p.partition {
		out[i].name = partition
		out[i].start, out[i].end, out[i].err = PartitionWindow(partition, p.partition[i].zone)
	}
	return out
}

// inPartition runs the in_partition checks on one record.
func (v *validator) inPartition(r *record.Record) {
	for k := range v.p.partition {
		pp := &v.p.partition[k]
		fp := &v.p.fields[pp.slot]
		if fp.parent >= 0 && r.Values[fp.parent].Kind() != record.KindObject {
			continue
		}
		val := r.Values[pp.slot]
		if !val.Present() || !typeOK(fp.typ, fp.layout, fp.items, val) {
			continue // required and type checks report these
		}
		w := &v.windows[k]
		if w.err != nil {
			v.fail(pp.check, fp.path, r.Position, fmt.Sprintf("field %s: %v", fp.path, w.err))
			continue
		}
		t, ok := pp.eventTime(val)
		if !ok {
			v.fail(pp.check, fp.path, r.Position, fmt.Sprintf("field %s: %s cannot be read as a time", fp.path, describe(val)))
			continue
		}
		if !InPartition(t, w.start, w.end, pp.tolerance) {
			tol := ""
			if pp.tolerance > 0 {
				tol = fmt.Sprintf(" (with %s tolerance)", pp.tolerance)
			}
			v.fail(pp.check, fp.path, r.Position, fmt.Sprintf("field %s: %s lies outside partition %s [%s, %s)%s; send it in the partition of its date",
				fp.path, describe(val), w.name, w.start.Format(time.RFC3339), w.end.Format(time.RFC3339), tol))
		}
	}
}
