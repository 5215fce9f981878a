package naming_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/seamdata/seam/core/naming"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value, want string // want is a part of the message; "" means valid
	}{
		{"2026-10-01", ""},
		{"batch-0001", ""},
		{"shop.orders", ""},
		{"données été", ""},
		{"", "is empty"},
		{"../x", "path separator"},
		{`a\b`, "path separator"},
		{"..", `"." or ".."`},
		{strings.Repeat("x", 2000), "2000 bytes long"},
		{strings.Repeat("é", 129), "258 bytes long"},
		{"a\x00b", "U+0000 at byte 1"},
		{"a\nb", "U+000A"},
		{"a\u200bb", "U+200B"},
		{"a\ufeff", "U+FEFF"},
		{"a.ltv ", "leading or trailing space"},
		{" a", "leading or trailing space"},
		{"\xff", "not valid UTF-8"},
	}
	for _, tc := range cases {
		err := naming.Check("partition", tc.value)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v, want valid", tc.value, err)
			}
			continue
		}
		var ne *naming.Error
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "partition ") {
			t.Errorf("Check(%.40q) = %v, want an error naming the field and saying %q", tc.value, err, tc.want)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("Check(%.40q): the message is %d bytes; it must not echo a long name whole", tc.value, len(err.Error()))
		}
	}
}

func TestCheckConsumer(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"features.customer_ltv", "team-a/nightly", "ns/sub/job"} {
		if err := naming.CheckConsumer("consumer.name", ok); err != nil {
			t.Errorf("CheckConsumer(%q) = %v, want valid", ok, err)
		}
	}
	for _, bad := range []string{"/job", "ns/", "ns//job", "ns/../job", "a.ltv ", "ns/ job", `ns\job`, "a\u200b"} {
		if err := naming.CheckConsumer("consumer.name", bad); err == nil {
			t.Errorf("CheckConsumer(%q) = nil, want an error", bad)
		}
	}
}
