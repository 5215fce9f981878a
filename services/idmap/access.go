package idmap

import (
	"github.com/seamdata/seam/platform/auth"
	idmapv1 "github.com/seamdata/seam/proto/seam/idmap/v1"
)

// loaders may define namespaces and rules and change lookup tables.
var loaders = []auth.Role{auth.RoleAdmin, auth.RoleOperator}

// Access says which roles may call each idmap method: operators (and
// admins) change namespaces, rules and tables; every authenticated role may
// translate and read, since pipelines and the other services translate on
// their hot path.
var Access = auth.Access{
	idmapv1.IdMapService_CreateNamespace_FullMethodName: loaders,
	idmapv1.IdMapService_GetNamespace_FullMethodName:    auth.AllRoles,
	idmapv1.IdMapService_ListNamespaces_FullMethodName:  auth.AllRoles,
	idmapv1.IdMapService_SetRule_FullMethodName:         loaders,
	idmapv1.IdMapService_ImportPairs_FullMethodName:     loaders,
	idmapv1.IdMapService_UpsertPair_FullMethodName:      loaders,
	idmapv1.IdMapService_DeletePair_FullMethodName:      loaders,
	idmapv1.IdMapService_Translate_FullMethodName:       auth.AllRoles,
	idmapv1.IdMapService_TranslateStream_FullMethodName: auth.AllRoles,
	idmapv1.IdMapService_Contains_FullMethodName:        auth.AllRoles,
	idmapv1.IdMapService_DescribeRoutes_FullMethodName:  auth.AllRoles,
	idmapv1.IdMapService_GetStats_FullMethodName:        auth.AllRoles,
	idmapv1.IdMapService_ListAudit_FullMethodName:       auth.AllRoles,
}
