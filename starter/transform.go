package main

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	clusterv1alpha1 "github.com/karmadaflow/karmadaflow/api/cluster/v1alpha1"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	workv1alpha1 "github.com/karmadaflow/karmadaflow/api/work/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// What the informers keep. Each informer's transform keeps of an object only what the
// starter's keys, predicates, indexers and handlers read, so that its store does not hold
// managedFields, a Work's manifests and manifest statuses, a Cluster's API enablements and
// summaries, or a slice's endpoints. Every object keeps its identity and what the triggers
// compare: name, namespace, uid, resourceVersion (updates and resyncs), generation and
// deletionTimestamp (GenerationOrMetadata, clusterChanged). transform_test.go runs the real
// handlers on transformed objects; a handler that reads something new must be added here.
//
// Each transform returns a new object and never writes to the one it is given: client-go
// hands it freshly decoded objects, but the result may share parts of them (label maps,
// conditions, a spec), which nothing writes to afterwards. A transform is idempotent: on its
// own result it returns an equal object.

// The labels each kind's readers look at.
var (
	// indexWorksByMCS, dispatchedWorkKey, appliedByWriter, appliedReason.
	workLabels = []string{networkingv1alpha1.LabelMCSName, networkingv1alpha1.LabelMCSNamespace, naming.LabelWorkRole}
	// trigger.EndpointSliceServiceKey.
	endpointSliceLabels = []string{networkingv1alpha1.LabelServiceName}
	// The Karmada trigger's GenerationOrMetadata.
	karmadaLabels = []string{operatorv1alpha1.LabelDisableCascadingDeletion}
)

// unstructuredKeep says what an unstructured object keeps besides apiVersion, kind and the
// identity fields of its metadata.
type unstructuredKeep struct {
	labels     []string   // the label keys kept
	finalizers bool       // metadata.finalizers
	paths      [][]string // whole fields, e.g. {"spec"} or {"spec", "suspendDispatching"}
	conditions []string   // the types of the status.conditions kept
}

// identityFields are the metadata every transformed object keeps.
var identityFields = []string{"name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp"}

// transform is the TransformFunc keeping only what k names; objects that are not
// *unstructured.Unstructured (tombstones, which client-go does not transform) pass unchanged.
func (k unstructuredKeep) transform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := make(map[string]any, 2+1+len(k.paths))
	for _, field := range []string{"apiVersion", "kind"} {
		if v, ok := u.Object[field]; ok {
			out[field] = v
		}
	}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		kept := make(map[string]any, len(identityFields)+2)
		for _, field := range identityFields {
			if v, ok := md[field]; ok {
				kept[field] = v
			}
		}
		if l, ok := md["labels"].(map[string]any); ok {
			if l = keepKeys(l, k.labels); len(l) > 0 {
				kept["labels"] = l
			}
		}
		if f, ok := md["finalizers"]; ok && k.finalizers {
			kept["finalizers"] = f
		}
		out["metadata"] = kept
	}
	for _, path := range k.paths {
		if v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...); found && err == nil {
			setNested(out, v, path)
		}
	}
	if conds := keepConditions(u, k.conditions); len(conds) > 0 {
		setNested(out, conds, []string{"status", "conditions"})
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// keepConditions are the object's status.conditions of the types named, in their order.
func keepConditions(u *unstructured.Unstructured, types []string) []any {
	if len(types) == 0 {
		return nil
	}
	conds, found, err := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions")
	list, ok := conds.([]any)
	if !found || err != nil || !ok {
		return nil
	}
	var kept []any
	for _, c := range list {
		cond, _ := c.(map[string]any)
		if typ, ok := cond["type"].(string); ok && slices.Contains(types, typ) {
			kept = append(kept, c)
		}
	}
	return kept
}

// keepKeys is m with only the keys named, m itself when that is all of it.
func keepKeys[V any](m map[string]V, keys []string) map[string]V {
	kept := make(map[string]V, len(keys))
	for _, key := range keys {
		if v, ok := m[key]; ok {
			kept[key] = v
		}
	}
	if len(kept) == len(m) {
		return m
	}
	return kept
}

// setNested sets obj's field at path to v, without copying v (unstructured.SetNestedField
// copies it deeply).
func setNested(obj map[string]any, v any, path []string) {
	for _, field := range path[:len(path)-1] {
		next, ok := obj[field].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[field] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
}

var (
	// transformWork keeps of a Work its MultiClusterService labels (indexWorksByMCS,
	// dispatchedWorkKey, appliedByWriter, appliedReason), finalizers and
	// spec.suspendDispatching (recordOnly), and its Applied condition (appliedStatus,
	// WorkApplied). spec.workload.manifests, status.manifestStatuses, the other conditions
	// and the annotations go.
	transformWork = unstructuredKeep{
		labels: workLabels, finalizers: true,
		paths:      [][]string{{"spec", "suspendDispatching"}},
		conditions: []string{workv1alpha1.WorkApplied},
	}.transform
	// transformMCS keeps of a MultiClusterService its spec (involves) and its
	// EndpointSliceApplied condition (appliedReasonChanged, appliedDisagrees).
	transformMCS = unstructuredKeep{
		paths:      [][]string{{"spec"}},
		conditions: []string{networkingv1alpha1.ConditionEndpointSliceApplied},
	}.transform
	// transformCluster keeps of a Cluster its Ready condition (clusterChanged,
	// memberSlices.ensure, unreadyClusters) and its sync mode (a Pull member is not watched);
	// the spec's changes show in the generation.
	transformCluster = unstructuredKeep{paths: [][]string{{"spec", "syncMode"}}, conditions: []string{clusterv1alpha1.ClusterConditionReady}}.transform
	// transformKarmada keeps of a Karmada the disable-cascading-deletion label and
	// status.certificates.items, each a name and a notAfter (starter/certexpiry serves them);
	// the provisioning workflow reads the rest itself.
	transformKarmada = unstructuredKeep{labels: karmadaLabels, paths: [][]string{{"status", "certificates", "items"}}}.transform
)

// identity is the metadata every transformed typed object keeps.
func identity(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// transformService keeps of a Service its spec, labels and annotations, which serviceChanged
// compares, without kubectl's last-applied-configuration: the Service propagated to the
// members leaves it out too (activities/mcs), so a change of it alone changes nothing there.
func transformService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	meta := identity(&svc.ObjectMeta)
	meta.Labels = svc.Labels
	meta.Annotations = svc.Annotations
	if _, ok := svc.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		meta.Annotations = make(map[string]string, len(svc.Annotations)-1)
		for k, v := range svc.Annotations {
			if k != corev1.LastAppliedConfigAnnotation {
				meta.Annotations[k] = v
			}
		}
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
	}
	return &corev1.Service{TypeMeta: svc.TypeMeta, ObjectMeta: meta, Spec: svc.Spec}, nil
}

// transformEndpointSlice keeps of a member's EndpointSlice its identity and Service label
// (trigger.EndpointSliceServiceKey): a change of its endpoints or ports shows in its generation.
func transformEndpointSlice(obj any) (any, error) {
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	meta := identity(&slice.ObjectMeta)
	if l := keepKeys(slice.Labels, endpointSliceLabels); len(l) > 0 {
		meta.Labels = l
	}
	return &discoveryv1.EndpointSlice{TypeMeta: slice.TypeMeta, ObjectMeta: meta}, nil
}

// worksListOptions narrows the list and watch of Works. With Work execution, every Work of
// the control plane may be one to execute (Karmada's own carry no label of karmadaflow), so
// it selects nothing. Without it, the starter only reads the Works a MultiClusterService
// dispatched: the works-applied trigger and the worksByMCS index, which appliedReason reads
// for dispatched Works only.
func worksListOptions(executionEnabled bool) func(*metav1.ListOptions) {
	if executionEnabled {
		return nil
	}
	return func(o *metav1.ListOptions) { o.LabelSelector = dispatchedWorksSelector }
}

// dispatchedWorksSelector selects the Works a MultiClusterService dispatched to a consumer.
var dispatchedWorksSelector = networkingv1alpha1.LabelMCSName + "," + naming.LabelWorkRole + "=" + naming.RoleDispatched

// setTransforms sets each informer's transform; informers must not have started.
func setTransforms(transforms map[cache.SharedIndexInformer]cache.TransformFunc) error {
	for informer, transform := range transforms {
		if err := informer.SetTransform(transform); err != nil {
			return err
		}
	}
	return nil
}
