package execution

import (
	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
)

// VersionChanges are the workflow.GetVersion changes of the Work execution workflow, for
// `worker versions` to count its runs per branch. All but the Pull clusters' two are asked at
// the start of every run.
var VersionChanges = append([]versioning.Change{
	{ID: changeApplyAsActivity, Max: 1, AtStart: true},
	{ID: changePassVersions, Max: 1, AtStart: true},
	{ID: changeJitteredResync, Max: 1, AtStart: true},
	{ID: changeKeepFailed, Max: 1, AtStart: true},
	{ID: changeEndWhenClusterGone, Max: 1, AtStart: true},
	{ID: changeBoundCarriedWorks, Max: 1, AtStart: true},
	{ID: changePullClusters, Max: 1},      // when the cluster first answers Pull
	{ID: changeAgentWatchesWorks, Max: 1}, // when the cluster first answers Pull, after pull-clusters
	{ID: changeSlowAppliesAsActivity, Max: 1, AtStart: true},
}, entity.VersionChanges...)
