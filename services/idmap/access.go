package idmap

import (
	"github.com/seamdata/seam/platform/auth"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// loaders may define namespaces and rules and change lookup tables.
var loaders = []auth.Role{auth.RoleAdmin, auth.RoleOperator}

// readers may read whole tables: a bulk export is more than the
// translation a pipeline needs, so pipelines and owners may not.
var readers = []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleViewer}

// Access says which roles may call each idmap method: operators (and
// admins) change namespaces, rules and tables; every authenticated role may
// translate and read, since pipelines and the other services translate on
// their hot path; whole tables are exported to readers only.
var Access = auth.Access{
	idmapv1.IdMapService_CreateNamespace_FullMethodName: {Roles: loaders},
	idmapv1.IdMapService_GetNamespace_FullMethodName:    {Roles: auth.AllRoles},
	idmapv1.IdMapService_ListNamespaces_FullMethodName:  {Roles: auth.AllRoles},
	idmapv1.IdMapService_AddFormat_FullMethodName:       {Roles: loaders},
	idmapv1.IdMapService_SetRule_FullMethodName:         {Roles: loaders},
	idmapv1.IdMapService_ImportPairs_FullMethodName:     {Roles: loaders},
	idmapv1.IdMapService_ExportPairs_FullMethodName:     {Roles: readers},
	idmapv1.IdMapService_UpsertPair_FullMethodName:      {Roles: loaders},
	idmapv1.IdMapService_DeletePair_FullMethodName:      {Roles: loaders},
	idmapv1.IdMapService_Translate_FullMethodName:       {Roles: auth.AllRoles},
	idmapv1.IdMapService_TranslateStream_FullMethodName: {Roles: auth.AllRoles},
	idmapv1.IdMapService_Contains_FullMethodName:        {Roles: auth.AllRoles},
	idmapv1.IdMapService_DescribeRoutes_FullMethodName:  {Roles: auth.AllRoles},
	idmapv1.IdMapService_GetStats_FullMethodName:        {Roles: auth.AllRoles},
	idmapv1.IdMapService_ListAudit_FullMethodName:       {Roles: auth.AllRoles},
}
