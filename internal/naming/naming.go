// Package naming owns the deterministic names and well-known keys karmadaflow shares with
// Karmada on the wire: Work names, execution namespaces, and the labels and annotations that
// tie Works and dispatched EndpointSlices to their MultiClusterService.
package naming

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
)

// ExecutionNamespacePrefix starts the control-plane namespace that holds a member's Works.
const ExecutionNamespacePrefix = workv1alpha1.ExecutionNamespacePrefix

// ExecutionNamespace is the control-plane namespace of the Works for cluster.
func ExecutionNamespace(cluster string) string { return ExecutionNamespacePrefix + cluster }

// ClusterOfExecutionNamespace returns the member cluster a Work namespace belongs to.
func ClusterOfExecutionNamespace(namespace string) (string, bool) {
	cluster, ok := strings.CutPrefix(namespace, ExecutionNamespacePrefix)
	return cluster, ok && cluster != ""
}

// The capabilities, each with a Temporal task queue of its own, named from the --task-queue
// base: a worker polls only the queues of what it runs, and the starter starts a capability's
// workflows only while its queue has pollers.
const (
	// CapabilityMCS runs the MultiClusterService workflows.
	CapabilityMCS = "mcs"
	// CapabilityCluster runs the per-cluster work: Work execution and cluster health.
	CapabilityCluster = "cluster"
	// CapabilityProvisioning runs the Karmada provisioning workflows.
	CapabilityProvisioning = "provisioning"
)

// Capabilities are the capabilities, each with its task queue (CapabilityTaskQueue).
var Capabilities = []string{CapabilityMCS, CapabilityCluster, CapabilityProvisioning}

// CapabilityTaskQueue is the task queue of capability's workflows and activities, e.g.
// "karmadaflow-mcs" for the base "karmadaflow".
func CapabilityTaskQueue(base, capability string) string { return base + "-" + capability }

// BaseTaskQueue is the base a capability's task queue was named from (CapabilityTaskQueue), or
// taskQueue itself when it is the base: the single queue of every workflow before the
// capabilities had their own, where runs started then still run. It is computed from the
// queue a run is on, which its history holds, so that a replay computes it alike; it is
// unambiguous as no base ends like a capability's queue (options.Validate).
func BaseTaskQueue(taskQueue string) string {
	for _, c := range Capabilities {
		if base, ok := strings.CutSuffix(taskQueue, "-"+c); ok {
			return base
		}
	}
	return taskQueue
}

// PullTaskQueue is the Temporal task queue of a Pull cluster's agent: the activities that need
// the member (Work execution, EndpointSlice collection, the health probe) are scheduled there
// by the workflows, and only the agent inside the member polls it. It is named from the base
// task queue, which the agent is configured with.
func PullTaskQueue(base, cluster string) string { return base + "/cluster/" + cluster }

// WorkName is Karmada's deterministic Work name for an object: the object's name (lower-cased,
// ':' replaced by '.') and the FNV-32a hash of "<namespace>-<name>-<kind>" in lower case
// (without the namespace for cluster-scoped objects), safe-encoded.
func WorkName(kind, name, namespace string) string {
	key := name + "-" + kind
	if namespace != "" {
		key = namespace + "-" + key
	}
	hash := fnv.New32a()
	_, _ = hash.Write([]byte(strings.ToLower(key)))
	return fmt.Sprintf("%s-%s", strings.ToLower(strings.ReplaceAll(name, ":", ".")),
		rand.SafeEncodeString(fmt.Sprint(hash.Sum32())))
}

// DispatchedSliceName is the name of provider's slice once dispatched to a consumer. The
// provider prefix keeps equal slice names from two providers apart.
func DispatchedSliceName(provider, slice string) string { return provider + "-" + slice }

// Keys karmadaflow shares with Karmada (the MultiClusterService ones live in
// api/networking/v1alpha1).
const (
	// FinalizerExecution holds a Work until its manifests are removed from the member.
	FinalizerExecution = "karmada.io/execution-controller"
	// FinalizerSliceDispatch holds a Work karmada-agent collected until the endpointsliceDispatch
	// controller, which karmadaflow replaces, has seen it go: karmadaflow releases it.
	FinalizerSliceDispatch = "karmada.io/mcs-endpointslice-dispatch-controller"

	// Labels karmadaflow puts on what it applies to a member cluster, so that it only ever
	// deletes objects it created there.
	LabelWorkName      = "work.karmada.io/name"
	LabelWorkNamespace = "work.karmada.io/namespace"

	// Marks Karmada's own Works put on each manifest, by which its execution controller
	// recognises the member objects it manages (it updates and deletes only those, or, with
	// conflict resolution overwrite, takes over an object that exists already): the label
	// karmada.io/managed, the Work's name and namespace as annotations, and the conflict
	// resolution.
	LabelManagedByKarmada        = "karmada.io/managed"
	AnnotationWorkName           = "work.karmada.io/name"
	AnnotationWorkNamespace      = "work.karmada.io/namespace"
	AnnotationConflictResolution = "work.karmada.io/conflict-resolution"
	// AnnotationResourceTemplateUID is the UID of the control plane's object a manifest was
	// made from: Karmada's execution controller records its Events on that object.
	AnnotationResourceTemplateUID = "resourcetemplate.karmada.io/uid"
	ConflictResolutionOverwrite   = "overwrite"

	// LabelClaimedBy on a resource template (the control plane's Service) names what
	// propagates it; Karmada's resource detector leaves a template so labelled alone, so that
	// no PropagationPolicy propagates it too. ClaimedByMultiClusterService is its value for a
	// Service a MultiClusterService propagates.
	LabelClaimedBy               = "resourcetemplate.karmada.io/claimed-by"
	ClaimedByMultiClusterService = "MultiClusterService"

	// The claim a PropagationPolicy or a ClusterPropagationPolicy puts on a resource template
	// it matched: its permanent ID as a label, its name (and namespace) as annotations.
	LabelPropagationPolicyPermanentID        = "propagationpolicy.karmada.io/permanent-id"
	LabelClusterPropagationPolicyPermanentID = "clusterpropagationpolicy.karmada.io/permanent-id"
	AnnotationPropagationPolicyName          = "propagationpolicy.karmada.io/name"
	AnnotationPropagationPolicyNamespace     = "propagationpolicy.karmada.io/namespace"
	AnnotationClusterPropagationPolicyName   = "clusterpropagationpolicy.karmada.io/name"
)

// Keys of karmadaflow's own.
const (
	// LabelWorkRole says what a Work of a MultiClusterService carries.
	LabelWorkRole = "karmadaflow.io/work-role"
	// AnnotationManifestHash is the hash of a Work's manifests, so unchanged Works are not
	// written again.
	AnnotationManifestHash = "karmadaflow.io/manifest-hash"
	// LabelProvider names the provider cluster of a dispatched Work.
	LabelProvider = "karmadaflow.io/provider"
	// AnnotationDetectedAt is when the starter saw the change a dispatched Work carries
	// (RFC 3339), for the end-to-end propagation metric. It is not part of the manifest hash.
	AnnotationDetectedAt = "karmadaflow.io/detected-at"
	// AnnotationWorkUID and AnnotationWorkGeneration stamp an object applied to a member with
	// the Work it came from, so that an older generation of that Work is never applied over a
	// newer one.
	AnnotationWorkUID        = "karmadaflow.io/work-uid"
	AnnotationWorkGeneration = "karmadaflow.io/work-generation"
	// LabelCreatedBy marks what karmadaflow creates in a member for its own needs (namespaces).
	LabelCreatedBy = "karmadaflow.io/created-by"
	// FieldManager is the server-side-apply field manager of every write.
	FieldManager = "karmadaflow"
)

// Work roles.
const (
	RoleService    = "service"
	RoleCollected  = "collected"
	RoleDispatched = "dispatched"
	// RoleCollectRequest is the Work that holds the MultiClusterService itself in a Pull
	// provider's execution namespace, beside Karmada: it has karmada-agent's endpointsliceCollect
	// controller collect the provider's slices, as Karmada's MultiClusterService controller's
	// Work does. It goes with the collected Works: removing those removes it too.
	RoleCollectRequest = "collect-request"
)

// RoleOf is the role of a Work of a MultiClusterService, given its labels: its role label, or,
// for a Work karmada-agent's endpointsliceCollect controller wrote (marked managed by
// MultiClusterService, with no role of karmadaflow's), RoleCollected.
func RoleOf(labels map[string]string) string {
	if role, ok := labels[LabelWorkRole]; ok {
		return role
	}
	if slices.Contains(strings.Split(labels[networkingv1alpha1.LabelEndpointSliceWorkManagedBy], "."), networkingv1alpha1.ManagedByMultiClusterService) {
		return RoleCollected
	}
	return ""
}
