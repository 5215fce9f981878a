package registry

import (
	"testing"

	"github.com/seamdata/seam/platform/auth/authtest"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// TestAccessTable: every registry method has a rule, and every method
// whose request names a subject holds a token limited to b.* to b.
// subjects, for every role (method × role × subject in and out of scope).
func TestAccessTable(t *testing.T) {
	t.Parallel()
	authtest.CheckTable(t, Access, registryv1.File_seam_registry_v1_registry_proto.Services().ByName("RegistryService"), map[string]string{
		registryv1.RegistryService_PublishEvent_FullMethodName:           "only the Seam services (service role) and admins publish events, about any subject",
		registryv1.RegistryService_RegisterCanonicalModel_FullMethodName: "a canonical model belongs to no subject; its document's subject field names none",
		registryv1.RegistryService_GetSchema_FullMethodName:              "a schema id is shared by every subject registered from the document; the answer lists only the versions of subjects in the caller's scope",
	})
}
