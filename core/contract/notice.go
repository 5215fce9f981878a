package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseNoticePeriod parses a notice period: a Go duration ("336h", "90m"),
// a number of days ("14d"), or days followed by a Go duration ("1d12h").
// The empty string means no notice is owed.
func ParseNoticePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	const day = 24 * time.Hour
	var total time.Duration
	rest := s
	if days, after, found := strings.Cut(s, "d"); found {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("notice period %q: want whole days before \"d\", such as \"14d\"", s)
		}
		if n > int64(math.MaxInt64/day) {
			return 0, fmt.Errorf("notice period %q: too long", s)
		}
		total = time.Duration(n) * day
		rest = after
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("notice period %q: want a duration such as \"336h\" or \"14d\": %w", s, err)
		}
		if d < 0 {
			return 0, fmt.Errorf("notice period %q: must not be negative", s)
		}
		if total > math.MaxInt64-d {
			return 0, fmt.Errorf("notice period %q: too long", s)
		}
		total += d
	}
	return total, nil
}
