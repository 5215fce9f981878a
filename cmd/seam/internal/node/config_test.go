package node

import (
	"strings"
	"testing"
	"time"
)

// The gate's retention flags are checked before anything starts, naming
// the flags.
func TestValidateGateSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gate GateSettings
		want string
	}{
		{"defaults", GateSettings{}, ""},
		{"set", GateSettings{AnswerTTL: time.Hour, BatchRetention: 48 * time.Hour, QuarantineRetention: 24 * time.Hour, RetentionInterval: time.Minute}, ""},
		{"negative", GateSettings{QuarantineRetention: -time.Hour}, "must not be negative"},
		{"negative key cache", GateSettings{KeyCacheKeys: -1}, "--key-cache-keys must not be negative"},
		{"answer outlives batch", GateSettings{AnswerTTL: 72 * time.Hour, BatchRetention: 48 * time.Hour}, "--answer-ttl 72h0m0s exceeds --batch-retention 48h0m0s"},
	} {
		cfg := Config{Services: ServiceNames, GRPCAddr: "127.0.0.1:0", DataDir: t.TempDir(), Gate: tc.gate}
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
