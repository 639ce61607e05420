package provisioning

import (
	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
)

// VersionChanges are the workflow.GetVersion changes of the Karmada provisioning workflow, for
// `worker versions` to count its runs per branch. None is asked at the start of a run: a run
// that never installs asks none of them but, when its spec is refused, recheck-invalid.
var VersionChanges = append([]versioning.Change{
	{ID: changeRetryReadyStatus, Max: 1},   // when writing the Ready status fails
	{ID: changeCertificateRenewal, Max: 1}, // once an install completes
	{ID: changeOrderedRollout, Max: 1},     // when an install starts
	{ID: changeRecheckInvalid, Max: 1},     // when a spec is refused
}, entity.VersionChanges...)
