package registry

import (
	"github.com/seamdata/seam/platform/auth"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// writers may change contracts and canonical models; handlers further limit
// owners to the subjects they own.
var writers = []auth.Role{auth.RoleAdmin, auth.RoleOwner}

// lineageWriters may declare and remove consumers.
var lineageWriters = []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner}

// Access lists the roles that may call each registry method; the runtime's
// interceptor enforces it before a handler runs. Reads are open to every
// authenticated role. PublishEvent is for operators and for the other
// services, which call with a pipeline or admin token.
var Access = auth.Access{
	registryv1.RegistryService_CheckContract_FullMethodName:          auth.AllRoles,
	registryv1.RegistryService_RegisterContract_FullMethodName:       writers,
	registryv1.RegistryService_GetContract_FullMethodName:            auth.AllRoles,
	registryv1.RegistryService_ListContracts_FullMethodName:          auth.AllRoles,
	registryv1.RegistryService_ListSubjects_FullMethodName:           auth.AllRoles,
	registryv1.RegistryService_DiffContracts_FullMethodName:          auth.AllRoles,
	registryv1.RegistryService_SetVersionStatus_FullMethodName:       {auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner},
	registryv1.RegistryService_GetHistory_FullMethodName:             auth.AllRoles,
	registryv1.RegistryService_RegisterCanonicalModel_FullMethodName: {auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner},
	registryv1.RegistryService_GetCanonicalModel_FullMethodName:      auth.AllRoles,
	registryv1.RegistryService_ListCanonicalModels_FullMethodName:    auth.AllRoles,
	registryv1.RegistryService_RegisterConsumer_FullMethodName:       lineageWriters,
	registryv1.RegistryService_GetConsumer_FullMethodName:            auth.AllRoles,
	registryv1.RegistryService_ListConsumers_FullMethodName:          auth.AllRoles,
	registryv1.RegistryService_DeleteConsumer_FullMethodName:         lineageWriters,
	registryv1.RegistryService_GetBlastRadius_FullMethodName:         auth.AllRoles,
	registryv1.RegistryService_GetRerunOrder_FullMethodName:          auth.AllRoles,
	registryv1.RegistryService_RecordLineage_FullMethodName:          {auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner, auth.RolePipeline},
	registryv1.RegistryService_PublishEvent_FullMethodName:           {auth.RoleAdmin, auth.RoleOperator, auth.RolePipeline},
	registryv1.RegistryService_ListEvents_FullMethodName:             auth.AllRoles,
	registryv1.RegistryService_WatchEvents_FullMethodName:            auth.AllRoles,
}
