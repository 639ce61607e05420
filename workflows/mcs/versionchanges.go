package mcs

import (
	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
)

// VersionChanges are the workflow.GetVersion changes of the MultiClusterService workflow, for
// `worker versions` to count its runs per branch. Only the safety resync's is asked at the start
// of every run; the others are asked when a run first needs them.
var VersionChanges = append([]versioning.Change{
	{ID: changeJitteredResync, Max: 1, AtStart: true},
	{ID: changeContinueAsNewOnRequest, Max: 1}, // on a resync that asks to continue as new
	{ID: changeCollectAndDispatch, Max: 1},     // on a partial reconcile of Push providers' slices
	{ID: changePullClusters, Max: 1},           // when a Pull provider is collected
	{ID: changeTargetedClusters, Max: 1},       // on a change of a named cluster
	{ID: changeCarriedState, Max: 1},           // in a run that continued one that carried its state
	{ID: changeHealthFromSignals, Max: 1},      // on a targeted reconcile whose changes carried their clusters' states
	{ID: changeAgentCollectsIntoWorks, Max: 1}, // when a Pull provider is collected standalone
}, entity.VersionChanges...)
