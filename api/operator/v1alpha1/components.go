package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The components of a Karmada control plane and the settings they share.

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

// VolumeData is where etcd stores its data. Which of the three it is cannot change after
// creation (a rule on Karmada), nor the volume claim template or the host path.
type VolumeData struct {
	// VolumeClaim is the template of the PersistentVolumeClaim of each etcd pod.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",reason=FieldValueForbidden,message="spec.components.etcd.local.volumeData.volumeClaim cannot change after creation (the etcd StatefulSet's claim template is fixed, and etcd's data is in the claims made from it): set it back; to move etcd's data, take a snapshot (etcdctl snapshot save), create a new Karmada with the storage you need and restore it there"
	VolumeClaim *corev1.PersistentVolumeClaimTemplate `json:"volumeClaim,omitempty"`

	// HostPath is a directory of the node. Only the Karmadas of the namespaces the worker's
	// --host-access-namespaces lists may ask for it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.path == oldSelf.path",fieldPath=".path",reason=FieldValueForbidden,message="spec.components.etcd.local.volumeData.hostPath.path cannot change after creation (etcd's data is in the directory it has, and another one starts empty): set it back; to move etcd's data, take a snapshot (etcdctl snapshot save), create a new Karmada with the storage you need and restore it there"
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

	// ExtraVolumes are added to the API server pod. A hostPath volume, or one the node mounts
	// itself (other than configMap, csi, downwardAPI, emptyDir, ephemeral, image,
	// persistentVolumeClaim, projected and secret), needs the worker's --host-access-namespaces
	// to list the Karmada's namespace.
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
	// e.g. a KMS plugin sharing a socket volume with it. One that is privileged, escalates
	// privileges, adds capabilities, binds a host port or lifts seccomp, AppArmor or SELinux
	// confinement needs the worker's --host-access-namespaces to list the Karmada's namespace.
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
