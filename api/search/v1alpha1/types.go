package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceRegistry selects which resources of which member clusters are registered with
// the global resource proxy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=resourceregistries,scope=Cluster,categories={karmada-io}
// +kubebuilder:metadata:annotations="karmadaflow.io/standalone-only=never install beside a real Karmada, whose karmada-search serves search.karmada.io"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceRegistry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behavior of the ResourceRegistry.
	Spec ResourceRegistrySpec `json:"spec"`

	// Status is the observed state of the ResourceRegistry.
	// +optional
	Status ResourceRegistryStatus `json:"status,omitempty"`
}

// ResourceRegistrySpec is the desired state of a ResourceRegistry.
type ResourceRegistrySpec struct {
	// TargetCluster selects the member clusters whose resources are registered.
	// +required
	TargetCluster ClusterAffinity `json:"targetCluster"`

	// ResourceSelectors selects the kinds of resources that are registered.
	// +required
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`
}

// ClusterAffinity selects member clusters. A cluster is selected when it matches every
// selector that is set and is not excluded.
type ClusterAffinity struct {
	// LabelSelector selects clusters by their labels.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// FieldSelector selects clusters by their fields (provider, region, zone).
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`

	// ClusterNames lists the selected clusters by name.
	// +optional
	ClusterNames []string `json:"clusterNames,omitempty"`

	// Exclude lists clusters that are never selected.
	// +optional
	Exclude []string `json:"exclude,omitempty"`
}

// FieldSelector selects clusters by their fields.
type FieldSelector struct {
	// MatchExpressions is a list of field selector requirements, ANDed.
	// +optional
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// ResourceSelector selects resources by API version and kind, optionally in one namespace.
type ResourceSelector struct {
	// APIVersion of the selected resources, e.g. "v1" or "apps/v1".
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind of the selected resources.
	// +required
	Kind string `json:"kind"`

	// Namespace of the selected resources; empty selects every namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ResourceRegistryStatus is the observed state of a ResourceRegistry.
type ResourceRegistryStatus struct {
	// Conditions of the ResourceRegistry.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceRegistryList is a list of ResourceRegistry.
//
// +kubebuilder:object:root=true
type ResourceRegistryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of ResourceRegistry.
	Items []ResourceRegistry `json:"items"`
}
