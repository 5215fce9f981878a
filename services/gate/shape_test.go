package gate

import (
	"testing"

	"github.com/seamdata/seam/core/record"
)

// TestShapeOf: one changed source is one shape, and values that differ
// only in what they say (how many digits a decimal has) are not a change.
func TestShapeOf(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"100.00", "decimal string"},
		{"99.99", "decimal string"},
		{"-7.5", "decimal string"},
		{"1.5e3", "decimal string"},
		{"12345", "digit string"},
		{"ACC-00012345", "ACC-{digits:8}"},
		{"1.2.3", "{digits:1}.{digits:1}.{digits:1}"},
		{"7c9e6679-7425-40de-944b-e07fc1f90ae7", "uuid"},
		{"2026-10-01", "date"},
		{"a@b.io", "email"},
		{"hello world", "text"},
		{"", "empty string"},
	} {
		if got := shapeOf(record.StringValue([]byte(tc.value))); got != tc.want {
			t.Errorf("shapeOf(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
}
