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
	svc + "Ingest":               ingesters,
	svc + "IngestStream":         ingesters,
	svc + "SealPartition":        ingesters,
	svc + "GetPartition":         readers,
	svc + "WaitPartition":        readers,
	svc + "ListQuarantine":       readers,
	svc + "GetQuarantinedRecord": readers,
	svc + "GetQuarantineStats":   readers,
	svc + "DiscardQuarantined":   operators,
	svc + "Contain":              operators,
	svc + "Release":              operators,
	svc + "ListContainments":     readers,
	svc + "PlanReplay":           readers,
	svc + "Replay":               operators,
	svc + "GetMonitor":           readers,
	svc + "ListAlerts":           readers,
	svc + "WatchAlerts":          readers,
	svc + "AcknowledgeAlert":     operators,
	svc + "ResolveAlert":         operators,
}
