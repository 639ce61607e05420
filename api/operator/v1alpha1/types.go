package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Karmada is a Karmada control plane to install and keep installed.
//
// What holds the instance's data is fixed at creation, because changing it would lose the data:
// the host cluster, the etcd replicas, whether etcd is local or external, and where a local
// etcd keeps its data (volumeClaim, hostPath or emptyDir). The rules sit on the whole object: a
// transition rule on an optional field runs only when both the old and the new object have it,
// so unset to set would pass (the rules on VolumeData's fields, which compare what is there
// on both sides, rely on that). An unset etcd replicas counts as 1, an unset volumeData as an
// emptyDir. Strings are compared by plain selection after a presence check: the cost
// estimator takes a string reached through optionals as unbounded and refuses the rule. The
// workflow refuses the same changes when an object gets around the rules (e.g. an older CRD).
//
// +kubebuilder:validation:XValidation:rule="self.?spec.?hostCluster.?secretRef.hasValue() == oldSelf.?spec.?hostCluster.?secretRef.hasValue() && (!self.?spec.?hostCluster.?secretRef.hasValue() || self.spec.hostCluster.secretRef == oldSelf.spec.hostCluster.secretRef)",fieldPath=".spec.hostCluster.secretRef",reason=FieldValueForbidden,message="spec.hostCluster.secretRef cannot be set, changed or removed after creation (the host cluster holds the instance's etcd and certificates: another host would start with an empty etcd and a new CA): create a new Karmada on the host cluster you need and move to it"
// +kubebuilder:validation:XValidation:rule="self.?spec.?components.?etcd.?local.?replicas.orValue(1) == oldSelf.?spec.?components.?etcd.?local.?replicas.orValue(1)",fieldPath=".spec.components.etcd.local.replicas",reason=FieldValueForbidden,message="spec.components.etcd.local.replicas cannot change after creation (etcd's initial cluster would be rebuilt and lose quorum): create a new Karmada with the replicas you need and move to it"
// +kubebuilder:validation:XValidation:rule="self.?spec.?components.?etcd.?external.hasValue() == oldSelf.?spec.?components.?etcd.?external.hasValue()",fieldPath=".spec.components.etcd",reason=FieldValueForbidden,message="spec.components.etcd cannot change between local and external after creation (the instance's data is in the etcd it has, and a local etcd given up for an external one is deleted): set it back; to move to another etcd, copy the data into it (etcdctl snapshot save, then etcdutl snapshot restore there) and create a new Karmada that names it"
// +kubebuilder:validation:XValidation:rule="self.?spec.?components.?etcd.?external.hasValue() || oldSelf.?spec.?components.?etcd.?external.hasValue() || (self.?spec.?components.?etcd.?local.?volumeData.?volumeClaim.hasValue() == oldSelf.?spec.?components.?etcd.?local.?volumeData.?volumeClaim.hasValue() && self.?spec.?components.?etcd.?local.?volumeData.?hostPath.hasValue() == oldSelf.?spec.?components.?etcd.?local.?volumeData.?hostPath.hasValue())",fieldPath=".spec.components.etcd.local.volumeData",reason=FieldValueForbidden,message="spec.components.etcd.local.volumeData cannot change between volumeClaim, hostPath and emptyDir after creation (etcd's data is in the storage it has, and an emptyDir or a new volume starts empty): set it back; to move etcd's data, take a snapshot (etcdctl snapshot save), create a new Karmada with the storage you need and restore it there"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=karmadas,scope=Namespaced,categories={karmada-io}
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type Karmada struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired Karmada control plane.
	// +optional
	Spec KarmadaSpec `json:"spec,omitempty"`

	// Status is the most recently observed state of the control plane.
	// +optional
	Status KarmadaStatus `json:"status,omitempty"`
}

// KarmadaSpec is the desired Karmada control plane.
type KarmadaSpec struct {
	// HostCluster is the cluster to install the control plane into. Without it (or without
	// its SecretRef) the control plane is installed into the cluster karmadaflow runs against.
	// +optional
	HostCluster *HostCluster `json:"hostCluster,omitempty"`

	// PrivateRegistry is the registry every image is pulled from, for offline installs.
	// +optional
	PrivateRegistry *ImageRegistry `json:"privateRegistry,omitempty"`

	// Components configures the components of the control plane; not all are installed.
	// +optional
	Components *KarmadaComponents `json:"components,omitempty"`

	// FeatureGates are the Karmada feature gates enabled for every Karmada component.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`

	// CRDTarball is where the Karmada CRDs are downloaded from. Without it the CRDs built into
	// karmadaflow are installed.
	// +optional
	CRDTarball *CRDTarball `json:"crdTarball,omitempty"`

	// CustomCertificate customizes the certificates of the control plane.
	// +optional
	CustomCertificate *CustomCertificate `json:"customCertificate,omitempty"`

	// Suspend, when true, pauses the reconciliation of this control plane.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`
}

// HostCluster is the cluster the control plane is installed into.
type HostCluster struct {
	// APIEndpoint is the address at which the host cluster's nodes (serviceType NodePort) or
	// the API server's Service (LoadBalancer, ClusterIP) are reached from outside, e.g. a VIP
	// or a load balancer in front of the node port: a hostname, hostname:port, IP or IP:port,
	// or an https:// URL of one. When set, the admin kubeconfig and status.apiServerEndpoint
	// reach the API server at https://<its host>:<its port>, the port defaulting to the node
	// port for NodePort and to 5443 otherwise, and the API server certificate names its host.
	// Unset, they use the first Ready node's address (NodePort), the load balancer's address
	// (LoadBalancer) or the Service's in-cluster name (ClusterIP). karmadaflow's semantics;
	// karmada-operator ignores the field. It may change after creation.
	// +optional
	APIEndpoint string `json:"apiEndpoint,omitempty"`

	// SecretRef names the Secret whose "kubeconfig" key reaches the host cluster.
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// Networking is the networking configuration of the host cluster.
	// +optional
	Networking *Networking `json:"networking,omitempty"`
}

// Networking is the networking configuration of a cluster.
type Networking struct {
	// DNSDomain is the DNS domain of the cluster's Services. Defaults to "cluster.local".
	// +optional
	DNSDomain *string `json:"dnsDomain,omitempty"`
}

// ImageRegistry is an image registry.
type ImageRegistry struct {
	// Registry is the registry host name, e.g. "docker.io" or "registry.example".
	// +required
	Registry string `json:"registry"`
}

// CRDDownloadPolicy is when the Karmada CRD tarball is downloaded.
type CRDDownloadPolicy string

const (
	// DownloadAlways downloads the tarball every time.
	DownloadAlways CRDDownloadPolicy = "Always"
	// DownloadIfNotPresent downloads the tarball only when it is not cached.
	DownloadIfNotPresent CRDDownloadPolicy = "IfNotPresent"
)

// CRDTarball is where the Karmada CRD tarball comes from and when it is downloaded.
type CRDTarball struct {
	// HTTPSource downloads the tarball over HTTP or HTTPS.
	// +optional
	HTTPSource *HTTPSource `json:"httpSource,omitempty"`

	// CRDDownloadPolicy is when the tarball is downloaded: Always or IfNotPresent.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent
	// +kubebuilder:default=IfNotPresent
	CRDDownloadPolicy *CRDDownloadPolicy `json:"crdDownloadPolicy,omitempty"`
}

// HTTPSource is an HTTP or HTTPS download.
type HTTPSource struct {
	// URL of the CRD tarball.
	// +required
	URL string `json:"url,omitempty"`

	// Proxy is the proxy server to download through; without it the download is direct.
	// +optional
	Proxy *ProxyConfig `json:"proxy,omitempty"`
}

// ProxyConfig is an HTTP or HTTPS proxy server.
type ProxyConfig struct {
	// ProxyURL is the URL of the proxy, e.g. "http://proxy.example.com:8080".
	// +required
	ProxyURL string `json:"proxyURL"`
}

// CustomCertificate customizes the certificates of the control plane.
type CustomCertificate struct {
	// APIServerCACert names a Secret (keys tls.crt and tls.key) holding the CA that signs
	// the client certificates of the components reaching the API server.
	// +optional
	APIServerCACert *LocalSecretReference `json:"apiServerCACert,omitempty"`

	// LeafCertValidityDays is the validity of leaf certificates in days. Defaults to one
	// year.
	// +optional
	// +kubebuilder:validation:Minimum=1
	LeafCertValidityDays *int32 `json:"leafCertValidityDays,omitempty"`
}

// LocalSecretReference names a Secret.
type LocalSecretReference struct {
	// Namespace of the Secret.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the Secret.
	// +optional
	Name string `json:"name,omitempty"`
}

// KarmadaStatus is the most recently observed state of a Karmada control plane.
type KarmadaStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SecretRef names the Secret with the admin kubeconfig of the control plane.
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// KarmadaVersion is the version of the Karmada components.
	// +optional
	KarmadaVersion string `json:"karmadaVersion,omitempty"`

	// KubernetesVersion is the version of the API server.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// Conditions of the control plane, among them Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// APIServerService is the Service of the API server, so that others (e.g. an Ingress)
	// can reach it without guessing its name or ports.
	// +optional
	APIServerService *APIServerServiceStatus `json:"apiServerService,omitempty"`

	// APIServerEndpoint is the URL at which the admin kubeconfig reaches the API server.
	// karmadaflow's addition; upstream has no such field.
	// +optional
	APIServerEndpoint string `json:"apiServerEndpoint,omitempty"`

	// Certificates tells when the instance's certificates expire and when they are renewed
	// next. karmadaflow's addition; upstream has no such field.
	// +optional
	Certificates *CertificatesStatus `json:"certificates,omitempty"`
}

// CertificatesStatus is the expiry of the instance's certificates: the serving and client
// certificates of its components, their kubeconfigs and the admin kubeconfig (not the CAs).
type CertificatesStatus struct {
	// NotAfter is the earliest expiry among them.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`

	// RenewalTime is when they are renewed next: when the first of them enters the last
	// third of its validity.
	// +optional
	RenewalTime *metav1.Time `json:"renewalTime,omitempty"`

	// Items is the expiry of each certificate.
	// +optional
	// +listType=map
	// +listMapKey=name
	Items []CertificateExpiry `json:"items,omitempty"`
}

// CertificateExpiry is the expiry of one certificate.
type CertificateExpiry struct {
	// Name of the certificate: the Secret and key it is stored under, e.g.
	// "karmada-cert/apiserver.crt" or "karmada-scheduler-config/kubeconfig".
	// +required
	Name string `json:"name"`

	// NotAfter is when it expires.
	// +required
	NotAfter metav1.Time `json:"notAfter"`
}

// APIServerServiceStatus is the Service of the API server. Its namespace is the namespace
// of the Karmada object.
type APIServerServiceStatus struct {
	// Name of the Service.
	// +required
	Name string `json:"name"`

	// ServiceType of the Service.
	// +optional
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// Port is the Service port of the API server.
	// +optional
	Port int32 `json:"port,omitempty"`

	// NodePort is the node port of the API server, for NodePort and LoadBalancer Services.
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`

	// LoadBalancerStatus is the load balancer of a LoadBalancer Service.
	// +optional
	LoadBalancerStatus *corev1.LoadBalancerStatus `json:"loadBalancerStatus,omitempty"`
}

// KarmadaList is a list of Karmada.
//
// +kubebuilder:object:root=true
type KarmadaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of Karmada.
	Items []Karmada `json:"items"`
}

// ConditionReady is the condition type that reports whether the control plane is
// installed and ready.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	ReasonProgressing     = "Progressing"
	ReasonCompleted       = "Completed"
	ReasonFailed          = "Failed"
	ReasonValidationError = "ValidationError"
)

// Finalizer holds a Karmada object until what it installed is removed.
const Finalizer = "operator.karmada.io/finalizer"

// LabelDisableCascadingDeletion, set to "true" on a Karmada object, leaves everything it
// installed in place when it is deleted.
const LabelDisableCascadingDeletion = "operator.karmada.io/disable-cascading-deletion"
