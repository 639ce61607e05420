package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MultiClusterService exposes the Service of the same name and namespace to other clusters.
// Services with the same name in different clusters are the same service, associated with
// the same MultiClusterService.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=multiclusterservices,scope=Namespaced,shortName=mcs,categories={karmada-io}
// +kubebuilder:printcolumn:name="TYPES",type=string,JSONPath=`.spec.types`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="SERVICE-APPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="ServiceApplied")].status`
// +kubebuilder:printcolumn:name="ENDPOINTSLICE-APPLIED",type=string,JSONPath=`.status.conditions[?(@.type=="EndpointSliceApplied")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (at most 63 lower-case alphanumerics or '-', starting with a letter and ending with an alphanumeric), because it names a Service"
type MultiClusterService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the MultiClusterService.
	Spec MultiClusterServiceSpec `json:"spec"`

	// Status is the current state of the MultiClusterService.
	// +optional
	Status corev1.ServiceStatus `json:"status,omitempty"`
}

// MultiClusterServiceSpec is the desired state of the MultiClusterService.
type MultiClusterServiceSpec struct {
	// Types specifies how to expose the Service referenced by this MultiClusterService.
	// At most one distinct type may be given, and the types cannot change after creation.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(t, t == self[0])",message="spec.types must contain at most one distinct type"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.types is immutable"
	Types []ExposureType `json:"types"`

	// Ports is the list of Service ports exposed by this MultiClusterService. Ports not
	// listed are filtered out of the exposed Service and of the dispatched EndpointSlices.
	// All ports of the Service are exposed when empty.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.name) || p.name == '' || self.exists_one(q, has(q.name) && q.name == p.name))",message="spec.ports names must be unique among named ports"
	Ports []ExposurePort `json:"ports,omitempty"`

	// Range specifies the clusters where the Service is exposed.
	// Deprecated: in favor of ProviderClusters/ConsumerClusters; honoured by karmadaflow
	// when those are empty.
	// +optional
	Range *ExposureRange `json:"range,omitempty"`

	// ServiceProvisionClusters specifies the clusters that provide the Service's backends.
	// Deprecated: in favor of ProviderClusters; honoured by karmadaflow when that is empty.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=48
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="cluster name must be a non-empty DNS-1123 label of at most 48 characters"
	ServiceProvisionClusters []string `json:"serviceProvisionClusters,omitempty"`

	// ServiceConsumptionClusters specifies the clusters where the Service is exposed to
	// clients.
	// Deprecated: in favor of ConsumerClusters; honoured by karmadaflow when that is empty.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=48
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="cluster name must be a non-empty DNS-1123 label of at most 48 characters"
	ServiceConsumptionClusters []string `json:"serviceConsumptionClusters,omitempty"`

	// ProviderClusters specifies the clusters whose backends (EndpointSlices) are
	// collected. All clusters when empty.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ProviderClusters []ClusterSelector `json:"providerClusters,omitempty"`

	// ConsumerClusters specifies the clusters that receive the collected backends.
	// All clusters when empty.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	ConsumerClusters []ClusterSelector `json:"consumerClusters,omitempty"`
}

// ExposureType describes how to expose a Service.
// +kubebuilder:validation:Enum=CrossCluster;LoadBalancer
type ExposureType string

const (
	// ExposureTypeCrossCluster makes a Service reachable across clusters.
	ExposureTypeCrossCluster ExposureType = "CrossCluster"
	// ExposureTypeLoadBalancer exposes a Service through an external load balancer.
	ExposureTypeLoadBalancer ExposureType = "LoadBalancer"
)

// ExposurePort describes a Service port to expose.
type ExposurePort struct {
	// Name is the name of the Service port to expose; it must match the Service's port name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="port name must be a DNS-1123 label (lower-case alphanumerics or '-', starting and ending with an alphanumeric)"
	Name string `json:"name,omitempty"`

	// Port is the exposed Service port.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// ExposureRange is a list of clusters where a Service is exposed.
type ExposureRange struct {
	// ClusterNames is the list of clusters to select.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=48
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="cluster name must be a non-empty DNS-1123 label of at most 48 characters"
	ClusterNames []string `json:"clusterNames,omitempty"`
}

// ClusterSelector selects one cluster.
type ClusterSelector struct {
	// Name is the name of the cluster.
	// +required
	// +kubebuilder:validation:MaxLength=48
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="cluster name must be a non-empty DNS-1123 label of at most 48 characters"
	Name string `json:"name"`
}

// MultiClusterServiceList is a list of MultiClusterService.
//
// +kubebuilder:object:root=true
type MultiClusterServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of MultiClusterService.
	Items []MultiClusterService `json:"items"`
}

// Condition types of a MultiClusterService.
const (
	// ConditionServiceApplied reports whether the Service is propagated to the provider and
	// consumer clusters.
	ConditionServiceApplied = "ServiceApplied"
	// ConditionEndpointSliceCollected reports whether the providers' EndpointSlices are
	// collected.
	ConditionEndpointSliceCollected = "EndpointSliceCollected"
	// ConditionEndpointSliceDispatched reports whether the collected EndpointSlices are
	// written as Works for every consumer (the name Karmada uses).
	ConditionEndpointSliceDispatched = "EndpointSliceDispatched"
	// ConditionEndpointSliceApplied reports whether the dispatched EndpointSlices are present
	// in every reachable consumer.
	ConditionEndpointSliceApplied = "EndpointSliceApplied"
	// ConditionReady sums the four above up (karmadaflow's own, shown by `kubectl get mcs`):
	// True when they all are, otherwise False with the reason and message of the first that is
	// not.
	ConditionReady = "Ready"
)

// Condition reasons of a MultiClusterService.
const (
	ReasonReady                          = "Ready"
	ReasonServiceAppliedSuccess          = "ServiceAppliedSuccess"
	ReasonServiceAppliedFailed           = "ServiceAppliedFailed"
	ReasonInvalidSpec                    = "InvalidSpec"
	ReasonUnsupportedType                = "UnsupportedType"
	ReasonEndpointSliceCollectedSuccess  = "EndpointSliceCollectedSuccess"
	ReasonEndpointSliceCollectedFailed   = "EndpointSliceCollectedFailed"
	ReasonEndpointSliceDispatchedSuccess = "EndpointSliceDispatchedSuccess"
	ReasonEndpointSliceDispatchedFailed  = "EndpointSliceDispatchedFailed"
	ReasonEndpointSliceAppliedSuccess    = "EndpointSliceAppliedSuccess"
	ReasonEndpointSliceAppliedFailed     = "EndpointSliceAppliedFailed"
)

// Condition messages Karmada uses on success.
const (
	MessageServiceAppliedSuccess       = "Service is propagated to target clusters."
	MessageEndpointSliceAppliedSuccess = "EndpointSlices are propagated to target clusters."
)

// Finalizer holds a MultiClusterService until every Work it caused is removed.
const Finalizer = "karmada.io/multiclusterservice-controller"

// Labels shared with Karmada.
const (
	// LabelMCSName and LabelMCSNamespace are put on every Work a MultiClusterService causes.
	LabelMCSName      = "multiclusterservice.karmada.io/name"
	LabelMCSNamespace = "multiclusterservice.karmada.io/namespace"
	// LabelMCSPermanentID is the ID karmada-webhook gives a MultiClusterService; Karmada's
	// MultiClusterService controller copies it onto the Work that holds the object.
	LabelMCSPermanentID = "multiclusterservice.karmada.io/permanent-id"
	// LabelEndpointSliceWorkManagedBy, with ManagedByMultiClusterService, marks the Works of
	// EndpointSlices collected for a MultiClusterService, as Karmada's own collection marks them.
	LabelEndpointSliceWorkManagedBy = "endpointslice.karmada.io/managed-by"
	ManagedByMultiClusterService    = "MultiClusterService"
	// LabelEndpointSliceName and LabelEndpointSliceNamespace mark the Works of EndpointSlices
	// collected for a ServiceExport (Karmada's pkg/controllers/mcs), which karmadaflow does not
	// implement. Collected Works carried them once: beside Karmada, its ServiceExport
	// controller then took them for its own and wrote imported slices of a derived Service
	// into the control plane. A Work updated now loses them.
	LabelEndpointSliceName      = "endpointslice.karmada.io/name"
	LabelEndpointSliceNamespace = "endpointslice.karmada.io/namespace"
	// LabelServiceName is the standard label naming an EndpointSlice's Service.
	LabelServiceName = "kubernetes.io/service-name"
	// LabelEndpointSliceManagedBy names the controller that manages an EndpointSlice.
	LabelEndpointSliceManagedBy = "endpointslice.kubernetes.io/managed-by"
)

// Annotations by which a Service a MultiClusterService claimed names it (with the label
// LabelMCSPermanentID), as Karmada's MultiClusterService controller writes them.
const (
	AnnotationMCSName      = "multiclusterservice.karmada.io/name"
	AnnotationMCSNamespace = "multiclusterservice.karmada.io/namespace"
)

// Values of LabelEndpointSliceManagedBy that mark EndpointSlices written by karmadaflow or
// Karmada; they are never collected.
const (
	ManagedByEndpointSliceDispatch = "endpointslice-dispatch-controller.karmada.io"
	ManagedByEndpointSliceKarmada  = "endpointslice-controller.karmada.io"
)

// Annotations shared with Karmada.
const (
	// AnnotationProvisionCluster names the provider a dispatched EndpointSlice (and its
	// Work) came from.
	AnnotationProvisionCluster = "endpointslice.karmada.io/provision-cluster"
	// AnnotationEndpointSliceGeneration is the generation of the source EndpointSlice.
	AnnotationEndpointSliceGeneration = "endpointslice.karmada.io/endpointslice-generation"
	// AnnotationWorkProvisionCluster names the provider on the Work of a dispatched slice.
	AnnotationWorkProvisionCluster = "endpointslice.karmada.io/work-provision-cluster"
)
