package stream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Granularity is how event time is cut into gate partitions.
type Granularity string

// Granularities of event-time partitions, all in UTC.
const (
	Day    Granularity = "day"
	Hour   Granularity = "hour"
	Minute Granularity = "minute"
)

var layouts = map[Granularity]string{Day: "2006-01-02", Hour: "2006-01-02T15", Minute: "2006-01-02T15:04"}

var lengths = map[Granularity]time.Duration{Day: 24 * time.Hour, Hour: time.Hour, Minute: time.Minute}

// ParseGranularity reads "day", "hour" or "minute".
func ParseGranularity(s string) (Granularity, error) {
	g := Granularity(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := layouts[g]; !ok {
		return "", fmt.Errorf("granularity %q: use day, hour or minute", s)
	}
	return g, nil
}

// Name is the partition holding t, for example 2026-03-01 by day.
func (g Granularity) Name(t time.Time) string { return t.UTC().Truncate(lengths[g]).Format(layouts[g]) }

// End is when the partition named part ends (exclusive).
func (g Granularity) End(part string) (time.Time, error) {
	t, err := time.ParseInLocation(layouts[g], part, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("partition %q is not a %s partition (%s)", part, g, layouts[g])
	}
	return t.Add(lengths[g]), nil
}

// eventTime reads a record's event time from a top-level field: an
// RFC 3339 timestamp, a date, or a number of Unix seconds (milliseconds
// when above 10^12). ok is false when the record is not a JSON object or
// the field is missing or unreadable; the caller then uses the broker's
// timestamp, and the gate judges the record as it is.
func eventTime(value []byte, field string) (time.Time, bool) {
	if field == "" {
		return time.Time{}, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(value, &obj) != nil {
		return time.Time{}, false
	}
	raw, ok := obj[field]
	if !ok {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
			if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
				return t, true
			}
		}
		return time.Time{}, false
	}
	n, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	if n > 1e12 {
		return time.UnixMilli(int64(n)).UTC(), true
	}
	return time.Unix(int64(n), 0).UTC(), true
}

// Watermarks is the event-time watermark shared by the engines of one
// connector: the smallest of their maximum event times, leaving out an
// engine that has read nothing for longer than idle (a Kafka partition
// with no traffic must not hold every partition back). A partition is sealed once the
// watermark minus the allowed lateness has reached its end.
type Watermarks struct {
	mu    sync.Mutex
	idle  time.Duration
	now   func() time.Time
	marks map[string]mark
	last  time.Time
}

type mark struct {
	max     time.Time
	updated time.Time
}

// NewWatermarks returns an empty watermark set.
func NewWatermarks(idle time.Duration, now func() time.Time) *Watermarks {
	if now == nil {
		now = time.Now
	}
	return &Watermarks{idle: idle, now: now, marks: map[string]mark{}}
}

// Observe raises an engine's maximum event time (it never goes down):
// the engine read records at wall-clock time at.
func (w *Watermarks) Observe(engine string, t, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.marks[engine]
	if t.After(m.max) {
		m.max = t
	}
	if at.After(m.updated) {
		m.updated = at
	}
	w.marks[engine] = m
}

// Current is the watermark: the minimum over active engines, never lower
// than it was before. When every engine is idle nothing is in flight
// anywhere, and the furthest event time seen is the watermark.
func (w *Watermarks) Current() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	var lowest, highest time.Time
	active := false
	for _, m := range w.marks {
		if m.max.After(highest) {
			highest = m.max
		}
		if w.idle > 0 && now.Sub(m.updated) > w.idle {
			continue
		}
		if !active || m.max.Before(lowest) {
			lowest, active = m.max, true
		}
	}
	cur := lowest
	if !active {
		cur = highest
	}
	if cur.After(w.last) {
		w.last = cur
	}
	return w.last
}
