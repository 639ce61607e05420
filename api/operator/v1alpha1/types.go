package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Karmada is a Karmada control plane to install and keep installed.
//
// Two fields are fixed at creation, because changing them would lose the instance's data. The
// rules sit on the whole object: a transition rule on an optional field runs only when both
// the old and the new object have it, so unset to set would pass. An unset etcd replicas
// counts as 1. Strings are compared by plain selection after a presence check: the cost
// estimator takes a string reached through optionals as unbounded and refuses the rule. The
// workflow refuses the same changes when an object gets around the rules (e.g. an older CRD).
//
// +kubebuilder:validation:XValidation:rule="self.?spec.?hostCluster.?secretRef.hasValue() == oldSelf.?spec.?hostCluster.?secretRef.hasValue() && (!self.?spec.?hostCluster.?secretRef.hasValue() || self.spec.hostCluster.secretRef == oldSelf.spec.hostCluster.secretRef)",fieldPath=".spec.hostCluster.secretRef",reason=FieldValueForbidden,message="spec.hostCluster.secretRef cannot be set, changed or removed after creation (the host cluster holds the instance's etcd and certificates: another host would start with an empty etcd and a new CA): create a new Karmada on the host cluster you need and move to it"
// +kubebuilder:validation:XValidation:rule="self.?spec.?components.?etcd.?local.?replicas.orValue(1) == oldSelf.?spec.?components.?etcd.?local.?replicas.orValue(1)",fieldPath=".spec.components.etcd.local.replicas",reason=FieldValueForbidden,message="spec.components.etcd.local.replicas cannot change after creation (etcd's initial cluster would be rebuilt and lose quorum): create a new Karmada with the replicas you need and move to it"
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

// KarmadaComponents configures the components of the control plane.
type KarmadaComponents struct {
	// Etcd configures the etcd of the control plane.
	// +optional
	Etcd *Etcd `json:"etcd,omitempty"`

	// KarmadaAPIServer configures the API server (a kube-apiserver).
	// +optional
	KarmadaAPIServer *KarmadaAPIServer `json:"karmadaAPIServer,omitempty"`

	// KarmadaAggregatedAPIServer configures karmada-aggregated-apiserver.
	// +optional
	KarmadaAggregatedAPIServer *KarmadaAggregatedAPIServer `json:"karmadaAggregatedAPIServer,omitempty"`

	// KubeControllerManager configures the kube-controller-manager of the control plane.
	// +optional
	KubeControllerManager *KubeControllerManager `json:"kubeControllerManager,omitempty"`

	// KarmadaControllerManager configures karmada-controller-manager.
	// +optional
	KarmadaControllerManager *KarmadaControllerManager `json:"karmadaControllerManager,omitempty"`

	// KarmadaScheduler configures karmada-scheduler.
	// +optional
	KarmadaScheduler *KarmadaScheduler `json:"karmadaScheduler,omitempty"`

	// KarmadaWebhook configures karmada-webhook.
	// +optional
	KarmadaWebhook *KarmadaWebhook `json:"karmadaWebhook,omitempty"`

	// KarmadaDescheduler configures karmada-descheduler; installed only when set.
	// +optional
	KarmadaDescheduler *KarmadaDescheduler `json:"karmadaDescheduler,omitempty"`

	// KarmadaSearch configures karmada-search; installed only when set.
	// +optional
	KarmadaSearch *KarmadaSearch `json:"karmadaSearch,omitempty"`

	// KarmadaMetricsAdapter configures karmada-metrics-adapter; installed only when set.
	// +optional
	KarmadaMetricsAdapter *KarmadaMetricsAdapter `json:"karmadaMetricsAdapter,omitempty"`
}

// Image is the image of a component.
type Image struct {
	// ImageRepository is the repository of the image, e.g. "docker.io/karmada/karmada-scheduler".
	// +optional
	ImageRepository string `json:"imageRepository,omitempty"`

	// ImageTag is the tag of the image.
	// +optional
	ImageTag string `json:"imageTag,omitempty"`
}

// CommonSettings are the settings every component has.
type CommonSettings struct {
	// Image is the image of the component.
	Image `json:",inline"`

	// ImagePullPolicy of the component's container. Defaults to IfNotPresent.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Replicas is the number of pods. Defaults to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Labels are added to the component's workload and pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the component's workload and pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Resources are the compute resources of the component's container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// PriorityClassName of the component's pods.
	// +optional
	// +kubebuilder:default="system-node-critical"
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// PodDisruptionBudgetConfig, when set, creates a PodDisruptionBudget for the
	// component's pods. Exactly one of minAvailable and maxUnavailable must be set.
	// +optional
	PodDisruptionBudgetConfig *PodDisruptionBudgetConfig `json:"podDisruptionBudgetConfig,omitempty"`

	// Tolerations of the component's pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the component's pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
}

// PodDisruptionBudgetConfig is the disruption budget of a component's pods.
type PodDisruptionBudgetConfig struct {
	// MinAvailable is the number or percentage of pods that must stay available.
	// Mutually exclusive with MaxUnavailable.
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// MaxUnavailable is the number or percentage of pods that may be unavailable.
	// Mutually exclusive with MinAvailable.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// Etcd is the etcd of the control plane: exactly one of Local and External.
type Etcd struct {
	// Local runs etcd in the host cluster.
	// +optional
	Local *LocalEtcd `json:"local,omitempty"`

	// External connects to an existing etcd cluster.
	// +optional
	External *ExternalEtcd `json:"external,omitempty"`
}

// LocalEtcd is an etcd run in the host cluster.
type LocalEtcd struct {
	// CommonSettings of etcd.
	CommonSettings `json:",inline"`

	// VolumeData is where etcd stores its data: exactly one of a volume claim template, a
	// host path or an empty dir.
	// +optional
	VolumeData *VolumeData `json:"volumeData,omitempty"`

	// ServerCertSANs are extra subject alternative names of the etcd server certificate.
	// +optional
	ServerCertSANs []string `json:"serverCertSANs,omitempty"`

	// PeerCertSANs are extra subject alternative names of the etcd peer certificate.
	// +optional
	PeerCertSANs []string `json:"peerCertSANs,omitempty"`
}

// VolumeData is where etcd stores its data.
type VolumeData struct {
	// VolumeClaim is the template of the PersistentVolumeClaim of each etcd pod.
	// +optional
	VolumeClaim *corev1.PersistentVolumeClaimTemplate `json:"volumeClaim,omitempty"`

	// HostPath is a directory of the node.
	// +optional
	HostPath *corev1.HostPathVolumeSource `json:"hostPath,omitempty"`

	// EmptyDir is a directory that lives as long as the pod.
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`
}

// ExternalEtcd is an existing etcd cluster.
type ExternalEtcd struct {
	// Endpoints of the etcd members.
	// +required
	Endpoints []string `json:"endpoints"`

	// CAData is the CA certificate of etcd.
	// Deprecated: use SecretRef.
	// +optional
	CAData []byte `json:"caData,omitempty"`

	// CertData is the client certificate for etcd.
	// Deprecated: use SecretRef.
	// +optional
	CertData []byte `json:"certData,omitempty"`

	// KeyData is the client key for etcd.
	// Deprecated: use SecretRef.
	// +optional
	KeyData []byte `json:"keyData,omitempty"`

	// SecretRef names the Secret with the etcd client credentials: keys ca.crt, tls.crt and
	// tls.key.
	// +required
	SecretRef LocalSecretReference `json:"secretRef"`
}

// KarmadaAPIServer configures the API server of the control plane (a kube-apiserver).
type KarmadaAPIServer struct {
	// CommonSettings of the API server.
	CommonSettings `json:",inline"`

	// ServiceSubnet is the Service IP range of the control plane. Defaults to "10.96.0.0/12".
	// +optional
	ServiceSubnet *string `json:"serviceSubnet,omitempty"`

	// ServiceType is the type of the API server's Service: ClusterIP, NodePort or
	// LoadBalancer. Defaults to ClusterIP.
	// +optional
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +kubebuilder:default=ClusterIP
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// LoadBalancerClass is the load balancer class of the API server's Service; only with
	// ServiceType LoadBalancer.
	// +optional
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`

	// ServiceAnnotations are added to the API server's Service.
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// ExtraArgs are flags passed to the API server, overriding the defaults: the flag name
	// without leading dashes, and its value.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`

	// ExtraVolumes are added to the API server pod.
	// +optional
	ExtraVolumes []corev1.Volume `json:"extraVolumes,omitempty"`

	// ExtraVolumeMounts are added to the API server container.
	// +optional
	ExtraVolumeMounts []corev1.VolumeMount `json:"extraVolumeMounts,omitempty"`

	// CertSANs are extra subject alternative names of the API server certificate.
	// +optional
	CertSANs []string `json:"certSANs,omitempty"`

	// FeatureGates of the API server.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`

	// SidecarContainers are added to the API server pod after the API server container,
	// e.g. a KMS plugin sharing a socket volume with it.
	// +optional
	SidecarContainers []corev1.Container `json:"sidecarContainers,omitempty"`
}

// KarmadaAggregatedAPIServer configures karmada-aggregated-apiserver.
type KarmadaAggregatedAPIServer struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`

	// CertSANs are extra subject alternative names of the component's certificate.
	// +optional
	CertSANs []string `json:"certSANs,omitempty"`

	// FeatureGates of the component.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// KubeControllerManager configures the kube-controller-manager of the control plane.
type KubeControllerManager struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// Controllers to enable: "*" for the defaults, "foo" to enable and "-foo" to disable
	// the controller foo.
	// +optional
	Controllers []string `json:"controllers,omitempty"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`

	// FeatureGates of the component.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// KarmadaControllerManager configures karmada-controller-manager.
type KarmadaControllerManager struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// Controllers to enable: "*" for the defaults, "foo" to enable and "-foo" to disable
	// the controller foo.
	// +optional
	Controllers []string `json:"controllers,omitempty"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`

	// FeatureGates of the component.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// KarmadaScheduler configures karmada-scheduler.
type KarmadaScheduler struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`

	// FeatureGates of the component.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// KarmadaWebhook configures karmada-webhook.
type KarmadaWebhook struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
}

// KarmadaDescheduler configures karmada-descheduler.
type KarmadaDescheduler struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
}

// KarmadaSearch configures karmada-search.
type KarmadaSearch struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
}

// KarmadaMetricsAdapter configures karmada-metrics-adapter.
type KarmadaMetricsAdapter struct {
	// CommonSettings of the component.
	CommonSettings `json:",inline"`

	// ExtraArgs are flags passed to the component, overriding the defaults.
	// +optional
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
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
