package gate

import (
	"testing"

	"github.com/seamdata/seam/platform/auth/authtest"
	gatev1 "github.com/seamdata/seam/proto/seam/gate/v1"
)

// TestAccessTable: every gate method has a rule, and every method whose
// request names a subject holds a token limited to b.* to b. subjects,
// for every role (method × role × subject in and out of scope).
func TestAccessTable(t *testing.T) {
	t.Parallel()
	authtest.CheckTable(t, Access, gatev1.File_seam_gate_v1_gate_proto.Services().ByName("GateService"), nil)
}
