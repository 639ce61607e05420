// Package naming owns the deterministic names and well-known keys karmadaflow shares with
// Karmada on the wire: Work names, execution namespaces, and the labels and annotations that
// tie Works and dispatched EndpointSlices to their MultiClusterService.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"

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

// PullTaskQueue is the Temporal task queue a Pull cluster's agent once polled for the
// activities that need the member. Agents hold no Temporal credential any more and nothing new
// is scheduled there; the workflows name it only in the branches that replay runs from before.
func PullTaskQueue(base, cluster string) string { return base + "/cluster/" + cluster }

// AgentLease is the name of the Lease (coordination.k8s.io) a Pull cluster's agent renews in
// the cluster's execution namespace: the control plane's health probe of a Pull cluster reads
// it, as Karmada's cluster controller reads karmada-agent's.
const AgentLease = "karmadaflow-agent"

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

// DispatchedSliceName is the name of provider's slice once dispatched to a consumer:
// "<provider>.<slice>". A provider's name is a DNS-1123 label, without '.' (Karmada's rule for
// cluster names; a MultiClusterService ignores Clusters named otherwise), so the first '.' ends
// the provider's part and two providers' slices never share a name, whatever their names: "a" with
// "b-x" and "a-b" with "x" are "a.b-x" and "a-b.x". A name that would be longer than
// MaxDispatchedSliceName keeps the provider's part whole, and of the slice's, its beginning and
// a hash of all of it. The result is a DNS-1123 subdomain, as an EndpointSlice's name must be.
func DispatchedSliceName(provider, slice string) string {
	name := provider + "." + slice
	if len(name) <= MaxDispatchedSliceName {
		return name
	}
	sum := sha256.Sum256([]byte(slice))
	hash := hex.EncodeToString(sum[:dispatchedSliceHashBytes])
	kept := slice[:max(0, MaxDispatchedSliceName-len(provider)-len(".-")-len(hash))]
	// The part ends where a label may: not on '-' or '.', which would leave "-." or ".-".
	kept = strings.TrimRight(kept, "-.")
	if kept == "" {
		return provider + "." + hash
	}
	return provider + "." + kept + "-" + hash
}

// MaxDispatchedSliceName is the longest name DispatchedSliceName gives: short enough that the
// dispatched slice's Work name (WorkName adds '-' and up to ten characters of hash) is a DNS-1123
// subdomain of at most 253 characters too.
const MaxDispatchedSliceName = validation.DNS1123SubdomainMaxLength - len("-") - workNameHashMaxLength

// workNameHashMaxLength is the longest hash WorkName appends: a 32-bit number's decimal
// digits, each encoded as one character.
const workNameHashMaxLength = 10

// dispatchedSliceHashBytes is how much of a long slice name's SHA-256 a dispatched name keeps
// (16 hex digits): two slices of one provider sharing a long beginning stay apart.
const dispatchedSliceHashBytes = 8

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
