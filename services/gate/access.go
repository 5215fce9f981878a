package gate

import "github.com/seamdata/seam/platform/auth"

const svc = "/seam.gate.v1.GateService/"

var (
	readers   = auth.AllRoles
	ingesters = []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RolePipeline}
	operators = []auth.Role{auth.RoleAdmin, auth.RoleOperator}
)

// Access says which roles may call each gate method: pipelines ingest and
// seal their partitions; operators contain, release, discard and replay;
// everyone may read.
var Access = auth.Access{
	svc + "Ingest":               {Roles: ingesters, Subject: "subject"},
	svc + "IngestStream":         {Roles: ingesters, Subject: "header.subject"},
	svc + "SealPartition":        {Roles: ingesters, Subject: "subject"},
	svc + "GetPartition":         {Roles: readers, Subject: "subject"},
	svc + "WaitPartition":        {Roles: readers, Subject: "subject"},
	svc + "ListQuarantine":       {Roles: readers, Subject: "filter.subject"},
	svc + "GetQuarantinedRecord": {Roles: readers, Subject: auth.SubjectInHandler},
	svc + "GetQuarantineStats":   {Roles: readers, Subject: "filter.subject"},
	svc + "DiscardQuarantined":   {Roles: operators, Subject: auth.SubjectInHandler},
	svc + "Contain":              {Roles: operators, Subject: "subject"},
	svc + "Release":              {Roles: operators, Subject: "subject"},
	svc + "ListContainments":     {Roles: readers},
	svc + "PlanReplay":           {Roles: readers, Subject: "window.subject"},
	svc + "Replay":               {Roles: operators, Subject: "window.subject"},
	svc + "GetMonitor":           {Roles: readers, Subject: "subject"},
	svc + "ListAlerts":           {Roles: readers, Subject: "subject"},
	svc + "WatchAlerts":          {Roles: readers, Subject: "subject"},
	svc + "AcknowledgeAlert":     {Roles: operators, Subject: auth.SubjectInHandler},
	svc + "ResolveAlert":         {Roles: operators, Subject: auth.SubjectInHandler},
}
