package mcs

import (
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
)

// The Activities type: the clients, caches and options the MultiClusterService activities
// share.

// Activities holds the clients the MultiClusterService activities use.
type Activities struct {
	ControlPlane   dynamic.Interface
	Core           kubernetes.Interface // of the control plane
	Members        *members.Registry
	UnhealthyGrace time.Duration
	Metrics        *Metrics
	// WorkCache, when set, answers reads of the MultiClusterService's Works in place of lists.
	WorkCache *workcache.Cache
	// Events, when set, receives an Event on the MultiClusterService for each failure and
	// provider withdrawal a status write records.
	Events EventRecorder
	// Execution, when set (karmadaflow runs Work execution), applies at once every Work these
	// activities write, and every one they find not applied at its generation, so that a change
	// reaches the members within the workflow task that decided it. The Work stays the record:
	// what this leaves undone, Work execution does.
	Execution WorkApplier
	// WorkNamespace, when set, is the only namespace whose Works are listed: a Pull cluster's
	// agent, whose rights reach its execution namespace only, collects there.
	WorkNamespace string

	seen     lastSeen
	services observedServices
}
