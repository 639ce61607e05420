package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Work is a list of resources to apply to the member cluster whose execution namespace
// (karmada-es-<cluster>) holds it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=works,scope=Namespaced,shortName=wk,categories={karmada-io}
// +kubebuilder:printcolumn:name="WORKLOAD-KIND",type=string,JSONPath=`.spec.workload.manifests[*].kind`
// +kubebuilder:printcolumn:name="APPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type Work struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behavior of the Work.
	Spec WorkSpec `json:"spec"`

	// Status is the observed state of the Work.
	// +optional
	Status WorkStatus `json:"status,omitempty"`
}

// WorkSpec is the desired state of a Work.
type WorkSpec struct {
	// Workload is the manifests to apply to the member cluster.
	// +optional
	Workload WorkloadTemplate `json:"workload,omitempty"`

	// SuspendDispatching, when true, keeps the Work as a record only: its manifests are not
	// applied to the member cluster. Status collection is not affected.
	// +optional
	SuspendDispatching *bool `json:"suspendDispatching,omitempty"`

	// PreserveResourcesOnDeletion, when true, leaves the applied resources in the member
	// cluster when the Work is deleted.
	// +optional
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`
}

// WorkloadTemplate is the manifests to apply to the member cluster.
type WorkloadTemplate struct {
	// Manifests is the list of Kubernetes objects to apply.
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one Kubernetes object to apply, kept as raw JSON.
type Manifest struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	runtime.RawExtension `json:",inline"`
}

// WorkStatus is the observed state of a Work.
type WorkStatus struct {
	// Conditions of the Work; see the WorkApplied and related condition types.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ManifestStatuses is the status of each manifest in the member cluster.
	// +optional
	ManifestStatuses []ManifestStatus `json:"manifestStatuses,omitempty"`
}

// ManifestStatus is the status of one manifest in the member cluster.
type ManifestStatus struct {
	// Identifier links the status to a manifest of the spec.
	// +required
	Identifier ResourceIdentifier `json:"identifier"`

	// Status is the status of the applied object as collected from the member cluster.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *runtime.RawExtension `json:"status,omitempty"`

	// Health is the health of the applied object.
	// +optional
	Health ResourceHealth `json:"health,omitempty"`
}

// ResourceIdentifier identifies an object of any kind.
type ResourceIdentifier struct {
	// Ordinal is the index of the manifest in the spec, so a status can be linked to a
	// manifest that cannot be parsed.
	Ordinal int `json:"ordinal"`

	// Group is the API group of the object.
	// +optional
	Group string `json:"group,omitempty"`

	// Version is the API version of the object.
	Version string `json:"version"`

	// Kind is the kind of the object.
	Kind string `json:"kind"`

	// Resource is the resource (plural) of the object.
	Resource string `json:"resource"`

	// Namespace is the namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name is the name of the object.
	Name string `json:"name"`
}

// ResourceHealth is the health of an applied object.
// +kubebuilder:validation:Enum=Healthy;Unhealthy;Unknown
type ResourceHealth string

const (
	// ResourceHealthy means the object is healthy.
	ResourceHealthy ResourceHealth = "Healthy"
	// ResourceUnhealthy means the object is not healthy.
	ResourceUnhealthy ResourceHealth = "Unhealthy"
	// ResourceUnknown means the health of the object is not known.
	ResourceUnknown ResourceHealth = "Unknown"
)

// Condition types of a Work.
const (
	// WorkApplied means the manifests are applied to the member cluster.
	WorkApplied = "Applied"
	// WorkProgressing means the manifests are being applied.
	WorkProgressing = "Progressing"
	// WorkAvailable means every manifest exists in the member cluster.
	WorkAvailable = "Available"
	// WorkDegraded means the member's state has not matched the manifests for a while.
	WorkDegraded = "Degraded"
)

// ExecutionNamespacePrefix starts the control-plane namespace that holds the Works of a
// member cluster: karmada-es-<cluster>.
const ExecutionNamespacePrefix = "karmada-es-"

// WorkList is a list of Work.
//
// +kubebuilder:object:root=true
type WorkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of Work.
	Items []Work `json:"items"`
}
