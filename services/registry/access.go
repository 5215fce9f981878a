package registry

import (
	"github.com/seamdata/seam/platform/auth"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// writers may change contracts and canonical models; handlers further limit
// owners to the subjects they own.
var writers = []auth.Role{auth.RoleAdmin, auth.RoleOwner}

// lineageWriters may declare and remove consumers; handlers further limit
// each consumer to its owner team (and admins).
var lineageWriters = []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner}

// Access lists the roles that may call each registry method; the runtime's
// interceptor enforces it before a handler runs. Reads are open to every
// authenticated role. PublishEvent is for the other Seam services, which
// report containments, backfills and alerts under their own identity (the
// service role): a pipeline or operator token cannot announce a backfill.
var Access = auth.Access{
	registryv1.RegistryService_CheckContract_FullMethodName:          {Roles: auth.AllRoles, Subject: auth.SubjectInHandler},
	registryv1.RegistryService_RegisterContract_FullMethodName:       {Roles: writers, Subject: auth.SubjectInHandler},
	registryv1.RegistryService_GetContract_FullMethodName:            {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_ListContracts_FullMethodName:          {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_ListSubjects_FullMethodName:           {Roles: auth.AllRoles},
	registryv1.RegistryService_DiffContracts_FullMethodName:          {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_SetVersionStatus_FullMethodName:       {Roles: []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner}, Subject: "subject"},
	registryv1.RegistryService_GetHistory_FullMethodName:             {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_GetSchema_FullMethodName:              {Roles: auth.AllRoles},
	registryv1.RegistryService_RegisterCanonicalModel_FullMethodName: {Roles: []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner}},
	registryv1.RegistryService_GetCanonicalModel_FullMethodName:      {Roles: auth.AllRoles},
	registryv1.RegistryService_ListCanonicalModels_FullMethodName:    {Roles: auth.AllRoles},
	registryv1.RegistryService_RegisterConsumer_FullMethodName:       {Roles: lineageWriters},
	registryv1.RegistryService_GetConsumer_FullMethodName:            {Roles: auth.AllRoles},
	registryv1.RegistryService_ListConsumers_FullMethodName:          {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_DeleteConsumer_FullMethodName:         {Roles: lineageWriters},
	registryv1.RegistryService_GetBlastRadius_FullMethodName:         {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_GetRerunOrder_FullMethodName:          {Roles: auth.AllRoles, Subject: "subject"},
	registryv1.RegistryService_RecordLineage_FullMethodName:          {Roles: []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleOwner, auth.RolePipeline}},
	registryv1.RegistryService_PublishEvent_FullMethodName:           {Roles: []auth.Role{auth.RoleAdmin, auth.RoleService}},
	registryv1.RegistryService_ListEvents_FullMethodName:             {Roles: auth.AllRoles, Subject: "subjects"},
	registryv1.RegistryService_WatchEvents_FullMethodName:            {Roles: auth.AllRoles, Subject: "subjects"},
}
