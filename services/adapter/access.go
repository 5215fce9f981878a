package adapter

import "github.com/seamdata/seam/platform/auth"

const svc = "/seam.adapter.v1.AdapterService/"

// Access says which roles may call each adapter method. Adapting changes
// nothing, so every authenticated role may call it.
var Access = auth.Access{
	svc + "Adapt":       {Roles: auth.AllRoles},
	svc + "AdaptStream": {Roles: auth.AllRoles},
	svc + "Preview":     {Roles: auth.AllRoles},
}
