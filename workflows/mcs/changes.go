package mcs

import (
	"slices"
	"time"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
)

// The changes the starter signals, and the pending work they add up to.

// ChangeKind says what changed, so the workflow redoes only what it affects.
type ChangeKind string

const (
	ChangeSpec           ChangeKind = "spec"           // the MultiClusterService or its Service
	ChangeClusters       ChangeKind = "clusters"       // a Cluster joined, left or changed health (Change.Cluster)
	ChangeEndpointSlices ChangeKind = "endpointslices" // slices changed in Change.Cluster
	ChangeWorks          ChangeKind = "works"          // the status of a dispatched Work changed
)

// Change is the payload of the change signal the starter sends.
type Change struct {
	Kind ChangeKind
	// Cluster is the provider whose slices changed, or the cluster that changed. A cluster
	// change without one (from starters before targeted-cluster-changes) asks for a full
	// reconcile.
	Cluster string `json:",omitempty"`
	// State is the changed cluster as the starter saw it when it sent the change (absent
	// from older starters, and for a Cluster that is gone or ignored): a change of its health
	// alone then needs no observation (healthFromSignals).
	State *act.ClusterState `json:",omitempty"`
	// DetectedAt is when the starter saw the change, for the sync-duration metrics.
	DetectedAt time.Time `json:",omitempty"`
}

// Pending is the work the signals received so far ask for.
type Pending struct {
	Full      bool     `json:",omitempty"` // re-read and redo everything
	Providers []string `json:",omitempty"` // providers whose slices changed
	// Clusters changed: a reconcile reads them again, and does only what a change of their
	// health alone asks for (targeted.go), or everything when more changed.
	Clusters []string `json:",omitempty"`
	// States are the latest states the changes of Clusters carried, one per cluster; a
	// cluster whose latest change carried none has none here.
	States  []act.ClusterState `json:",omitempty"`
	Applied bool               `json:",omitempty"` // re-check the dispatched Works' Applied state
	// Members asks the member clusters' Work execution to re-apply everything (a user's
	// resync: objects deleted by hand in a member come back).
	Members bool `json:",omitempty"`
	// DetectedAt is the earliest detection time of the pending changes.
	DetectedAt time.Time `json:",omitempty"`
}

func (p Pending) any() bool {
	return p.Full || p.Applied || len(p.Providers) > 0 || len(p.Clusters) > 0
}

func (p *Pending) add(c Change) {
	if !c.DetectedAt.IsZero() && (p.DetectedAt.IsZero() || c.DetectedAt.Before(p.DetectedAt)) {
		p.DetectedAt = c.DetectedAt
	}
	switch c.Kind {
	case ChangeEndpointSlices:
		if !slices.Contains(p.Providers, c.Cluster) {
			p.Providers = append(p.Providers, c.Cluster)
		}
	case ChangeWorks:
		p.Applied = true
	case ChangeClusters:
		if c.Cluster == "" {
			p.Full = true
			break
		}
		if !slices.Contains(p.Clusters, c.Cluster) {
			p.Clusters = append(p.Clusters, c.Cluster)
		}
		p.States = slices.DeleteFunc(p.States, func(s act.ClusterState) bool { return s.Name == c.Cluster })
		if c.State != nil && c.State.Name == c.Cluster {
			p.States = append(p.States, *c.State)
		}
	default:
		p.Full = true
	}
}
