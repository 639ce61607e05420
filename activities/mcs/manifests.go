package mcs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// serviceManifest is the Service as members receive it: same name and namespace, the spec
// without cluster-allocated fields, and only the exposed ports. As Karmada's own propagation
// does, a headless Service stays headless (clusterIP None: StatefulSets across clusters
// resolve their pods by name) and the IP families and their policy are kept (clearing them
// would make a dual-stack Service single-stack); cluster IPs and node ports are the member's.
func serviceManifest(svc *corev1.Service, filters []PortFilter) (map[string]any, error) {
	out := corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: svc.Namespace,
			Labels: svc.Labels, Annotations: withoutLastApplied(svc.Annotations),
		},
		Spec: *svc.Spec.DeepCopy(),
	}
	if svc.UID != "" {
		// Karmada's execution controller records the sync's Events on the control plane's Service.
		out.Annotations = merged(out.Annotations, map[string]string{naming.AnnotationResourceTemplateUID: string(svc.UID)})
	}
	out.Spec.ClusterIP, out.Spec.ClusterIPs, out.Spec.HealthCheckNodePort = "", nil, 0
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		out.Spec.ClusterIP, out.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	}
	out.Spec.Ports = filterPorts(out.Spec.Ports, filters)
	for i := range out.Spec.Ports {
		out.Spec.Ports[i].NodePort = 0
	}
	return toMap(&out)
}

// filterPorts keeps the ports that spec.ports exposes (all ports when it is empty). A filter
// matches by port number and, when it has one, by name.
func filterPorts(ports []corev1.ServicePort, filters []PortFilter) []corev1.ServicePort {
	if len(filters) == 0 {
		return ports
	}
	var out []corev1.ServicePort
	for _, p := range ports {
		if slices.ContainsFunc(filters, func(f PortFilter) bool { return f.Port == p.Port && (f.Name == "" || f.Name == p.Name) }) {
			out = append(out, p)
		}
	}
	return out
}

// collectedSliceManifest is a provider's slice as recorded in the control plane.
func collectedSliceManifest(slice *discoveryv1.EndpointSlice) map[string]any {
	out := discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name: slice.Name, Namespace: slice.Namespace, Labels: slice.Labels,
			Annotations: map[string]string{networkingv1alpha1.AnnotationEndpointSliceGeneration: strconv.FormatInt(slice.Generation, 10)},
		},
		AddressType: slice.AddressType,
		Endpoints:   slice.Endpoints,
		Ports:       slice.Ports,
	}
	m, _ := toMap(&out)
	return m
}

// dispatchedSliceManifest is a collected slice as a consumer receives it: renamed after its
// provider, in the namespace of the MultiClusterService ref and labelled for its Service
// whatever the collected slice says (see collectedSlice), and limited to the exposed port
// names.
func dispatchedSliceManifest(slice *discoveryv1.EndpointSlice, ref Ref, provider string, portNames []string) map[string]any {
	out := discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      naming.DispatchedSliceName(provider, slice.Name),
			Namespace: ref.Namespace,
			Labels: map[string]string{
				networkingv1alpha1.LabelServiceName:            ref.Name,
				networkingv1alpha1.LabelEndpointSliceManagedBy: networkingv1alpha1.ManagedByEndpointSliceDispatch,
			},
			Annotations: map[string]string{
				networkingv1alpha1.AnnotationProvisionCluster:        provider,
				networkingv1alpha1.AnnotationEndpointSliceGeneration: slice.Annotations[networkingv1alpha1.AnnotationEndpointSliceGeneration],
			},
		},
		AddressType: slice.AddressType,
		Endpoints:   make([]discoveryv1.Endpoint, 0, len(slice.Endpoints)),
	}
	for _, ep := range slice.Endpoints {
		ep.NodeName, ep.Zone, ep.Hints = nil, nil, nil // they name the provider's nodes and zones
		ep.TargetRef = nil
		out.Endpoints = append(out.Endpoints, ep)
	}
	for _, p := range slice.Ports {
		if portNames == nil || (p.Name != nil && slices.Contains(portNames, *p.Name)) || (p.Name == nil && slices.Contains(portNames, "")) {
			out.Ports = append(out.Ports, p)
		}
	}
	m, _ := toMap(&out)
	return m
}

// sliceOfWork decodes the EndpointSlice a collected Work carries.
func sliceOfWork(work *unstructured.Unstructured) (*discoveryv1.EndpointSlice, error) {
	manifests, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
	if len(manifests) != 1 {
		return nil, fmt.Errorf("work %s/%s carries %d manifests, want one EndpointSlice", work.GetNamespace(), work.GetName(), len(manifests))
	}
	m, ok := manifests[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("work %s/%s: manifest is not an object", work.GetNamespace(), work.GetName())
	}
	var slice discoveryv1.EndpointSlice
	if err := kube.FromUnstructured(&unstructured.Unstructured{Object: m}, &slice); err != nil {
		return nil, err
	}
	return &slice, nil
}

// newWork builds a Work with one manifest, marked as Karmada marks the manifests of its own
// Works (see markedForKarmada); the manifest hash annotation lets unchanged Works be skipped.
func newWork(name, namespace string, labels, annotations map[string]string, suspend bool, manifest map[string]any) *unstructured.Unstructured {
	manifest = markedForKarmada(manifest, name, namespace, annotations[naming.AnnotationConflictResolution])
	spec := map[string]any{"workload": map[string]any{"manifests": []any{manifest}}}
	if suspend {
		spec["suspendDispatching"] = true
	}
	annotations = maps.Clone(annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[naming.AnnotationManifestHash] = hashOf(spec, labels, annotations)
	work := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.karmada.io/v1alpha1",
		"kind":       "Work",
		"spec":       spec,
	}}
	work.SetName(name)
	work.SetNamespace(namespace)
	work.SetLabels(labels)
	work.SetAnnotations(annotations)
	return work
}

// markedForKarmada is the manifest with the marks Karmada puts on the manifests of its Works
// (ctrlutil.CreateOrUpdateWork upstream): the label karmada.io/managed, the Work's name and
// namespace, and the Work's conflict resolution, if any. Beside Karmada, its execution
// controller applies karmadaflow's Works; it updates and deletes only member objects labelled
// managed, and takes over an object that exists already only with conflict resolution
// overwrite. Without the marks, the first generation of a slice reached the member and no later
// one did, and a withdrawn slice stayed. karmadaflow's own applier ignores them.
func markedForKarmada(manifest map[string]any, workName, workNamespace, conflictResolution string) map[string]any {
	obj := unstructured.Unstructured{Object: maps.Clone(manifest)}
	metadata, _ := manifest["metadata"].(map[string]any)
	metadata = maps.Clone(metadata) // written below; the caller's stays as it is
	if metadata == nil {
		metadata = map[string]any{}
	}
	obj.Object["metadata"] = metadata
	obj.SetLabels(merged(obj.GetLabels(), map[string]string{naming.LabelManagedByKarmada: "true"}))
	marks := map[string]string{naming.AnnotationWorkName: workName, naming.AnnotationWorkNamespace: workNamespace}
	if conflictResolution != "" {
		marks[naming.AnnotationConflictResolution] = conflictResolution
	}
	obj.SetAnnotations(merged(obj.GetAnnotations(), marks))
	return obj.Object
}

func hashOf(values ...any) string {
	data, _ := json.Marshal(values) // maps marshal with sorted keys
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

func sortedWorks(works map[string]*unstructured.Unstructured) []*unstructured.Unstructured {
	keys := slices.Sorted(maps.Keys(works))
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		out = append(out, works[k])
	}
	return out
}

func toMap(obj any) (map[string]any, error) {
	u, err := kube.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u.Object, nil
}

func withoutLastApplied(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	return out
}

func earliest(t, fallback time.Time) time.Time {
	if t.IsZero() || t.After(fallback) {
		return fallback
	}
	return t
}
