package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cluster is a member cluster: how to reach it and its observed state. Its name is at most 48
// characters, as Karmada's webhook has it: it names the execution namespace karmada-es-<name>.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusters,scope=Cluster,categories={karmada-io}
// +kubebuilder:metadata:annotations="karmadaflow.io/standalone-only=never install beside a real Karmada, whose karmada-aggregated-apiserver serves cluster.karmada.io"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48",message="a cluster name must be at most 48 characters (it names the execution namespace karmada-es-<name>)"
// +kubebuilder:printcolumn:name="VERSION",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the member cluster.
	Spec ClusterSpec `json:"spec"`

	// Status is the observed state of the member cluster.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec is the desired state of a member cluster.
type ClusterSpec struct {
	// ID is the unique identifier of the member cluster.
	// +optional
	ID string `json:"id,omitempty"`

	// SyncMode is how the cluster receives resources from the control plane.
	// +required
	SyncMode ClusterSyncMode `json:"syncMode"`

	// APIEndpoint is the API endpoint of the member cluster: a hostname, hostname:port, IP,
	// IP:port or URL.
	// +optional
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the Secret with the credentials to reach the member cluster: key
	// "token" and optional key "caBundle".
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// ImpersonatorSecretRef names the Secret with the token (key "token") used to
	// impersonate callers towards the member cluster.
	// +optional
	ImpersonatorSecretRef *LocalSecretReference `json:"impersonatorSecretRef,omitempty"`

	// InsecureSkipTLSVerification disables verification of the member's serving certificate.
	// +optional
	InsecureSkipTLSVerification bool `json:"insecureSkipTLSVerification,omitempty"`

	// ProxyURL is the proxy to reach the member cluster through.
	// +optional
	ProxyURL string `json:"proxyURL,omitempty"`

	// ProxyHeader is the HTTP headers the proxy requires; several values of one header are
	// separated by commas.
	// +optional
	ProxyHeader map[string]string `json:"proxyHeader,omitempty"`

	// Provider is the cloud provider of the member cluster.
	// +optional
	Provider string `json:"provider,omitempty"`

	// Region is the region of the member cluster.
	// +optional
	Region string `json:"region,omitempty"`

	// Zone is the zone of the member cluster.
	// +optional
	Zone string `json:"zone,omitempty"`

	// Taints of the member cluster.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// ClusterSyncMode is how a member cluster receives resources from the control plane.
// +kubebuilder:validation:Enum=Push;Pull
type ClusterSyncMode string

const (
	// Push means the control plane applies resources to the member cluster.
	Push ClusterSyncMode = "Push"
	// Pull means an agent in the member cluster fetches and applies them.
	Pull ClusterSyncMode = "Pull"
)

// Keys of the Secret named by ClusterSpec.SecretRef.
const (
	SecretTokenKey  = "token"
	SecretCADataKey = "caBundle"
)

// LocalSecretReference names a Secret.
type LocalSecretReference struct {
	// Namespace of the Secret.
	Namespace string `json:"namespace"`

	// Name of the Secret.
	Name string `json:"name"`
}

// ClusterConditionReady means the member cluster is healthy and reachable.
const ClusterConditionReady = "Ready"

// ClusterStatus is the observed state of a member cluster.
type ClusterStatus struct {
	// KubernetesVersion is the version of the member cluster.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// APIEnablements is the list of APIs served by the member cluster.
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`

	// Conditions of the member cluster, among them Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// NodeSummary summarizes the nodes of the member cluster.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`

	// ResourceSummary summarizes the resources of the member cluster.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`
}

// APIEnablement is the resources served in one group and version.
type APIEnablement struct {
	// GroupVersion is the group and version, e.g. "apps/v1".
	GroupVersion string `json:"groupVersion"`

	// Resources is the list of resources served in GroupVersion.
	// +optional
	Resources []APIResource `json:"resources,omitempty"`
}

// APIResource is the name and kind of a resource.
type APIResource struct {
	// Name is the plural name of the resource.
	Name string `json:"name"`

	// Kind is the kind of the resource.
	Kind string `json:"kind"`
}

// NodeSummary summarizes the nodes of a member cluster.
type NodeSummary struct {
	// TotalNum is the number of nodes.
	// +optional
	TotalNum int32 `json:"totalNum,omitempty"`

	// ReadyNum is the number of Ready nodes.
	// +optional
	ReadyNum int32 `json:"readyNum,omitempty"`
}

// ResourceSummary summarizes the resources of a member cluster.
type ResourceSummary struct {
	// Allocatable is the total allocatable resources of all nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Allocating is the total requests of the pods waiting to be scheduled.
	// +optional
	Allocating corev1.ResourceList `json:"allocating,omitempty"`

	// Allocated is the total requests of the pods scheduled to nodes.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
}

// ClusterList is a list of Cluster.
//
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of Cluster.
	Items []Cluster `json:"items"`
}
