package mcs

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// WorkApplier executes one Work of a cluster's execution namespace in that cluster: Work
// execution's applier (activities/execution), the one code path that applies Works.
type WorkApplier interface {
	ApplyWork(ctx context.Context, cluster string, work *unstructured.Unstructured) error
	// ApplyWhileWriting applies an update of a Work the member holds already (held: as last
	// read) while write records it, then records Applied on the Work as written.
	ApplyWhileWriting(ctx context.Context, cluster string, held, work *unstructured.Unstructured,
		write func() (*unstructured.Unstructured, error)) (written *unstructured.Unstructured, writeErr, applyErr error)
}

// Ref names a MultiClusterService (and its Service, which has the same name).
type Ref struct {
	Namespace string
	Name      string
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// PortFilter is one entry of spec.ports: a Service port exposed by the MultiClusterService.
type PortFilter struct {
	Name string
	Port int32
}

// ClusterState is what the control plane says of one member cluster.
type ClusterState struct {
	Name  string
	Ready bool
	// Since is when Ready last changed (zero when the cluster has no Ready condition yet).
	Since time.Time
	// Pull: the cluster is in Pull mode; its agent collects its EndpointSlices.
	Pull bool `json:",omitempty"`
}

// Observation is a MultiClusterService as the workflow needs it: names, flags and small
// lists, never object bodies.
type Observation struct {
	Exists       bool
	Deleting     bool
	HasFinalizer bool
	Generation   int64
	// Invalid lists each problem of the spec, naming the field. Empty when the spec is valid.
	Invalid []string
	// CrossCluster is true when spec.types asks for CrossCluster.
	CrossCluster bool
	Ports        []PortFilter
	// Providers and Consumers as the spec names them (deprecated fields honoured when the new
	// ones are empty); empty means every cluster.
	Providers []string
	Consumers []string
	// ServiceExists tells whether the same-name Service exists in the control plane.
	ServiceExists bool
	// Clusters are all member clusters of the control plane, sorted by name.
	Clusters []ClusterState
	// UnhealthyGrace is how long a provider may be not Ready before its slices are withdrawn.
	UnhealthyGrace time.Duration
	// KarmadaAgents: karmadaflow runs beside Karmada (no Work execution of its own), where a
	// Pull provider's slices are collected by its karmada-agent (ReadAgentCollection), not by
	// an agent of karmadaflow's.
	KarmadaAgents bool `json:",omitempty"`
	// WorkCache is the Work cache of the worker that observed (see CollectResult); not part of
	// what was observed.
	WorkCache string `json:",omitempty"`
}

// PropagateServiceInput asks for the Service's Work in exactly these clusters.
type PropagateServiceInput struct {
	MCS      Ref
	Clusters []string
	Ports    []PortFilter
	// DetectedAt is when the starter saw the change that led here (zero if unknown).
	DetectedAt time.Time
	// Unready are the clusters that are not Ready (see DispatchInput).
	Unready []string `json:",omitempty"`
	EarlierWrites
}

// EarlierWrites tells an activity that reads the Works of a MultiClusterService whether this
// worker's Work cache shows every earlier write to them. Its fields are flattened into the
// inputs that embed it.
type EarlierWrites struct {
	// OthersWroteBefore, when set, says that another worker may have written the Works until
	// then: the workflow sets it on its first reconcile after it was loaded into a worker. The
	// Works are then listed from the API server rather than read from this worker's cache,
	// which may not show those writes yet, unless the cache started watching well after then
	// (workcache.Cache.StartedAfter). The list stands in the cache (workcache.Listed).
	OthersWroteBefore time.Time `json:",omitempty"`
	// WorkCache names the Work cache (workcache.Cache.Instance) through which the workflow's
	// activities made every write to its Works so far, as their results reported it (empty
	// when unknown). An activity that runs where that cache is knows the cache shows each of
	// those writes, and ignores OthersWroteBefore: after the workflow left this worker's
	// workflow cache and was replayed here, or continued as new here, its Works are read
	// from the Work cache, not listed.
	WorkCache string `json:",omitempty"`
}

// CollectInput asks to record provider's EndpointSlices of the Service as Works.
type CollectInput struct {
	MCS      Ref
	Provider string
	EarlierWrites
}

// SliceRef names a collected EndpointSlice and the generation collected.
type SliceRef struct {
	Name       string
	Generation int64
}

// WorkWriteResult is the result of a step that writes Works and has nothing else to report.
type WorkWriteResult struct {
	// WorkCache: see CollectResult.
	WorkCache string `json:",omitempty"`
}

// CollectResult says what was collected and whether any Work changed.
type CollectResult struct {
	Slices  []SliceRef
	Changed bool
	// WorkCache is the Work cache the activity read and wrote the Works through
	// (workcache.Cache.Instance; empty where there is none).
	WorkCache string `json:",omitempty"`
}

// DispatchInput asks that consumer hold exactly the slices collected from Providers (other
// than itself). With Exclusive, Works dispatched from any other provider are removed too;
// without it only the listed providers' Works are touched.
type DispatchInput struct {
	MCS       Ref
	Consumer  string
	Providers []string
	Exclusive bool
	Ports     []PortFilter
	// DetectedAt is when the starter saw the slice change that led here (zero if unknown).
	DetectedAt time.Time
	// Unready are the clusters that are not Ready: their Works are written, and left to Work
	// execution rather than applied at once.
	Unready []string `json:",omitempty"`
	EarlierWrites
	// CollectedByAgents: some of Providers are Pull clusters, whose agents write their
	// collected Works, so this process's cache may not know of each (see listWorksOfOthers).
	CollectedByAgents bool `json:",omitempty"`
}

// DispatchResult counts the Works the consumer holds after the dispatch.
type DispatchResult struct {
	Works   int
	Changed bool
	// WorkCache: see CollectResult.
	WorkCache string `json:",omitempty"`
}

// CollectAndDispatchInput asks to collect the provider's slices and dispatch them to each
// consumer of Dispatch (each naming Provider alone) at the same time.
type CollectAndDispatchInput struct {
	MCS      Ref
	Provider string
	Dispatch []DispatchInput
	EarlierWrites
}

// CollectAndDispatchResult is the collection's result and each consumer's, by name.
type CollectAndDispatchResult struct {
	Collect      CollectResult
	CollectErr   string                    `json:",omitempty"`
	Dispatched   map[string]DispatchResult `json:",omitempty"`
	DispatchErrs map[string]string         `json:",omitempty"`
	// WorkCache: see CollectResult.
	WorkCache string `json:",omitempty"`
}

// ObserveAppliedInput asks whether the dispatched Works in these consumers are applied.
type ObserveAppliedInput struct {
	MCS       Ref
	Consumers []string
	// Announced says a signal announced a change of the Works' status, which the cache may
	// not show yet: an answer from the cache that is not all applied is then read again from
	// the API server. Without it, the cache's answer stands.
	Announced bool `json:",omitempty"`
	EarlierWrites
}

// ConsumerApplied is the Applied state of one consumer's dispatched Works.
type ConsumerApplied struct {
	Consumer string
	Works    int
	Applied  int
	// Message is the first failure reported by a Work, if any.
	Message string
}

// Condition is a status condition the workflow decided on; the activity stamps the time.
type Condition struct {
	Type    string
	Status  string
	Reason  string
	Message string
}

// StatusInput replaces the MultiClusterService's conditions of the types karmadaflow owns.
type StatusInput struct {
	MCS        Ref
	Generation int64
	Conditions []Condition
	// Withdrawn are the providers whose EndpointSlices are withdrawn (WithdrawnProblem): the
	// status writer reports those the conditions did not name before.
	Withdrawn []string `json:",omitempty"`
}

// DeleteWorksInput removes Works of the MultiClusterService with the given roles (all roles
// when empty), except those in the execution namespaces of ExceptClusters.
type DeleteWorksInput struct {
	MCS            Ref
	Roles          []string `json:",omitempty"`
	ExceptClusters []string `json:",omitempty"`
	// Prune: the Works are those a reconcile no longer wants, and may be found in this
	// worker's cache (when OthersWroteBefore allows it). A deletion of every Work of a
	// MultiClusterService that goes is final, and always reads the API server.
	Prune bool `json:",omitempty"`
	EarlierWrites
}
