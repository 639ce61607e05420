package clusterhealth

import (
	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
)

// VersionChanges are the workflow.GetVersion changes of the cluster health workflow, for
// `worker versions` to count its runs per branch.
var VersionChanges = append([]versioning.Change{
	{ID: changeFailureThreshold, Max: 1, AtStart: true},
	{ID: changePullClusters, Max: 1}, // when the cluster first answers Pull
	{ID: changeAgentLease, Max: 1},   // when the cluster first answers Pull
	{ID: changeProbeAsActivity, Max: 1, AtStart: true},
	{ID: changeEntityLoop, Max: 1, AtStart: true},
}, entity.VersionChanges...)
