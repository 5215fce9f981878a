package partition_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/partition"
	"github.com/seamdata/seam/core/record"
)

func spec(t *testing.T, fieldType, granularity, lateness string) *partition.Spec {
	t.Helper()
	c, err := contract.Load([]byte(`
subject: bank.payments
owner: team-payments
fields:
  - {name: id, type: STRING, required: true, key: true}
  - {name: at, type: `+fieldType+`, required: true}
partition_time: {field: at, granularity: `+granularity+`, allowed_lateness: "`+lateness+`"}
`), "payments.yaml")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if ps := contract.Validate(c); len(ps) > 0 {
		t.Fatalf("validate: %v", ps)
	}
	s, err := partition.Compile(c)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

func TestNamesAndBounds(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 10, 31, 23, 30, 0, 0, time.UTC)
	tests := []struct {
		granularity, name, next string
		bad                     []string
	}{
		{"HOUR", "2026-10-31T23", "2026-11-01T00", []string{"2026-10-31", "2026-10-31T23:00", "2026-10-31T24"}},
		{"DAY", "2026-10-31", "2026-11-01", []string{"2026-10-31T23", "2026-10-1", "2026-02-30", "20261031", ""}},
		{"MONTH", "2026-10", "2026-11", []string{"2026-10-01", "2026-13"}},
	}
	for _, tt := range tests {
		s := spec(t, "TIMESTAMP", tt.granularity, "")
		if got := s.Name(at); got != tt.name {
			t.Errorf("%s: Name = %q, want %q", tt.granularity, got, tt.name)
		}
		start, end, err := s.Bounds(tt.name)
		if err != nil || !start.Before(at.Add(time.Nanosecond)) || !end.After(at) || s.Name(end) != tt.next {
			t.Errorf("%s: Bounds(%q) = %v..%v (%v), want a span holding %v and ending at %s", tt.granularity, tt.name, start, end, err, at, tt.next)
		}
		for _, b := range tt.bad {
			if _, _, err := s.Bounds(b); err == nil || !strings.Contains(err.Error(), "name it by its start in UTC") {
				t.Errorf("%s: Bounds(%q) error %v, want one saying how partitions are named", tt.granularity, b, err)
			}
		}
	}
}

// Event times place records by their instant in UTC, whatever offset they
// are written with.
func TestTime(t *testing.T) {
	t.Parallel()
	s := spec(t, "TIMESTAMP", "DAY", "")
	for in, want := range map[string]string{
		"2026-10-01T23:30:00Z":      "2026-10-01",
		"2026-10-02T01:30:00+02:00": "2026-10-01",
		"2026-10-01T23:30:00-02:00": "2026-10-02",
	} {
		got, err := s.Time(record.StringValue([]byte(in)))
		if err != nil || s.Name(got) != want {
			t.Errorf("Time(%s) = %v (%v), want partition %s", in, got, err, want)
		}
	}
	if _, err := s.Time(record.NullValue()); err == nil {
		t.Errorf("a null partition time placed a record")
	}
	d := spec(t, "DATE", "MONTH", "")
	got, err := d.Time(record.StringValue([]byte("2026-10-31")))
	if err != nil || d.Name(got) != "2026-10" {
		t.Errorf("DATE Time = %v (%v), want partition 2026-10", got, err)
	}
}

// A partition is due once the watermark passed its end plus the allowed
// lateness: every partition named before the cutoff.
func TestCutoff(t *testing.T) {
	t.Parallel()
	s := spec(t, "TIMESTAMP", "DAY", "6h")
	tests := []struct {
		watermark time.Time
		cutoff    string
	}{
		{time.Date(2026, 10, 2, 5, 59, 0, 0, time.UTC), "2026-10-01"}, // 10-01 ended 5h59m ago: not yet
		{time.Date(2026, 10, 2, 6, 0, 0, 0, time.UTC), "2026-10-02"},  // exactly 6h after its end: due
	}
	for _, tt := range tests {
		if got := s.Cutoff(tt.watermark); got != tt.cutoff {
			t.Errorf("Cutoff(%v) = %s, want %s", tt.watermark, got, tt.cutoff)
		}
	}
}
