package provisioning

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The building blocks of the host cluster's manifests: names, ports, pod template, Deployment,
// PDB, Service, Secret volumes, and the flags of etcd's clients.

// Names of containers and volumes.
const (
	APIServerContainer = "kube-apiserver"
	volumeCerts        = "certs"
	volumeEtcdCerts    = "etcd-certs"
	volumeKubeconfig   = "kubeconfig"
	volumeWebhookCerts = "webhook-certs"
	volumeEtcdData     = "etcd-data"

	pkiDir         = "/etc/karmada/pki"
	etcdPKIDir     = "/etc/karmada/pki/etcd"
	kubeconfigDir  = "/etc/karmada/config"
	kubeconfigFile = kubeconfigDir + "/" + KeyKubeconfig
	webhookPKIDir  = "/var/serving-cert"
	etcdDataDir    = "/var/lib/etcd"
)

// Ports the components listen on (upstream's), each on its pod's IP only.
const (
	etcdClientPort  = 2379
	etcdPeerPort    = 2380
	etcdMetricsPort = 2381
	// extensionServerPort is the secure port of the API servers the aggregator proxies to
	// (aggregated API server, search, metrics adapter) and of their Services.
	extensionServerPort         = 443
	webhookPort                 = 8443
	webhookHealthPort           = 8000
	kubeControllerManagerPort   = 10257
	controllerManagerHealthPort = 10357
	schedulerHealthPort         = 10351
	deschedulerHealthPort       = 10358
	metricsPort                 = 8080
	profilingPort               = 6060
)

// podIP is the pod's IP as the kubelet expands it in a container's command from the POD_IP
// variable every container gets. Every server listens on it rather than on all interfaces:
// nothing but the pod's own address is ever dialled, and where several pods share a network
// namespace (a test machine) fixed ports on all interfaces would collide.
const podIP = "$(POD_IP)"

// onPodIP is a host:port flag value on the pod's IP.
func onPodIP(port int) string { return podIP + ":" + strconv.Itoa(port) }

var podIPEnv = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}

// readinessProbe probes path on port of the pod's IP (an empty host is the pod's IP). Ready
// is what each install and rollout step waits for, and the components roll one at a time, so
// it is probed every other second (a rollout then takes a few seconds, not one period of
// five), with room for a busy host to answer slowly.
func readinessProbe(path string, port int32, scheme corev1.URIScheme) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port), Scheme: scheme}},
		PeriodSeconds:  readinessPeriodSeconds,
		TimeoutSeconds: 5,
	}
}

// readinessPeriodSeconds is how often the components' readiness is probed.
const readinessPeriodSeconds = 2

// AnnotationCertHash on a pod template is the hash of the certificates its pods mount, so
// that a re-issued certificate rolls them.
const AnnotationCertHash = "karmadaflow.io/cert-hash"

var (
	deploymentType = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	statefulType   = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	serviceType    = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	pdbType        = metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}
)

// selector selects the pods of component c of instance cr.
func selector(cr string, c Component) map[string]string {
	return map[string]string{LabelName: c.Name, LabelInstance: cr}
}

func objectMeta(k *operatorv1alpha1.Karmada, c Component, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: Labels(k.Name, c.Name)}
}

// flags renders defaults overlaid with extra ("name" -> value, without dashes) as sorted
// "--name=value" arguments.
func flags(defaults, extra map[string]string) []string {
	merged := maps.Clone(defaults)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, extra)
	out := make([]string, 0, len(merged))
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		out = append(out, "--"+strings.TrimLeft(name, "-")+"="+merged[name])
	}
	return out
}

// featureGates renders gates as the value of --feature-gates ("" when none).
func featureGates(gates ...map[string]bool) string {
	merged := map[string]bool{}
	for _, g := range gates {
		maps.Copy(merged, g)
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		parts = append(parts, name+"="+strconv.FormatBool(merged[name]))
	}
	return strings.Join(parts, ",")
}

// podTemplate is the pod template of component c with its common settings applied.
func podTemplate(k *operatorv1alpha1.Karmada, c Component, container corev1.Container, volumes []corev1.Volume, certHash string) corev1.PodTemplateSpec {
	s := SettingsOf(k, c).Common
	container.Env = append([]corev1.EnvVar{podIPEnv}, container.Env...)
	container.Image = Image(k, c)
	container.ImagePullPolicy = s.ImagePullPolicy
	if container.ImagePullPolicy == "" {
		container.ImagePullPolicy = corev1.PullIfNotPresent
	}
	container.Resources = s.Resources
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, Labels(k.Name, c.Name))
	annotations := maps.Clone(s.Annotations)
	if certHash != "" {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[AnnotationCertHash] = certHash
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers:        []corev1.Container{container},
			Volumes:           volumes,
			PriorityClassName: s.PriorityClassName,
			Tolerations:       s.Tolerations,
			Affinity:          s.Affinity,
		},
	}
}

func replicas(k *operatorv1alpha1.Karmada, c Component) *int32 {
	if r := SettingsOf(k, c).Common.Replicas; r != nil {
		return r
	}
	return ptr.To[int32](1)
}

// progressDeadlineSeconds is how long a rollout may go without progress before the
// Deployment reports it failed (ProgressDeadlineExceeded) and the waits stop: two minutes
// rather than Kubernetes' ten, since every component starts in seconds once its image is
// there.
const progressDeadlineSeconds int32 = 120

// deployment is the Deployment of component c.
func deployment(k *operatorv1alpha1.Karmada, c Component, container corev1.Container, volumes []corev1.Volume, certHash string) *appsv1.Deployment {
	meta := objectMeta(k, c, NamesFor(k.Name).Of(c.Suffix))
	s := SettingsOf(k, c).Common
	meta.Labels = mergeLabels(s.Labels, meta.Labels)
	meta.Annotations = s.Annotations
	return &appsv1.Deployment{
		TypeMeta:   deploymentType,
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas:                replicas(k, c),
			ProgressDeadlineSeconds: ptr.To(progressDeadlineSeconds),
			Selector:                &metav1.LabelSelector{MatchLabels: selector(k.Name, c)},
			Template:                podTemplate(k, c, container, volumes, certHash),
		},
	}
}

func mergeLabels(user, ours map[string]string) map[string]string {
	out := maps.Clone(user)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, ours)
	return out
}

// podDisruptionBudget is the PDB of component c, nil when the spec asks for none.
func podDisruptionBudget(k *operatorv1alpha1.Karmada, c Component) *policyv1.PodDisruptionBudget {
	cfg := SettingsOf(k, c).Common.PodDisruptionBudgetConfig
	if cfg == nil {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   pdbType,
		ObjectMeta: objectMeta(k, c, NamesFor(k.Name).Of(c.Suffix)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:   cfg.MinAvailable,
			MaxUnavailable: cfg.MaxUnavailable,
			Selector:       &metav1.LabelSelector{MatchLabels: selector(k.Name, c)},
		},
	}
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

// mountSecret mounts Secret secret read-only at path in container, as volume, and returns
// volumes with it.
func mountSecret(container *corev1.Container, volumes []corev1.Volume, volume, secret, path string) []corev1.Volume {
	container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path, ReadOnly: true})
	return append(volumes, secretVolume(volume, secret))
}

func service(k *operatorv1alpha1.Karmada, c Component, name string, port, target int32, portName string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   serviceType,
		ObjectMeta: objectMeta(k, c, name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector(k.Name, c),
			Ports:    []corev1.ServicePort{{Name: portName, Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// etcdServers is the --etcd-servers value: the local etcd's client Service or the external
// endpoints.
func etcdServers(k *operatorv1alpha1.Karmada) string {
	if c := k.Spec.Components; c != nil && c.Etcd != nil && c.Etcd.External != nil {
		return strings.Join(c.Etcd.External.Endpoints, ",")
	}
	host := NamesFor(k.Name).Of(SuffixEtcdClient) + "." + k.Namespace + ".svc." + DNSDomain(k)
	return "https://" + host + ":" + strconv.Itoa(etcdClientPort)
}

// etcdClientFlags are the flags of an API server storing in etcd (kube-apiserver, aggregated
// API server, search): the etcd-cert Secret, mounted at etcdPKIDir, holds the client
// credentials of a local or an external etcd under the same keys.
func etcdClientFlags(k *operatorv1alpha1.Karmada) map[string]string {
	return map[string]string{
		"etcd-servers":  etcdServers(k),
		"etcd-cafile":   etcdPKIDir + "/" + KeyEtcdCACert,
		"etcd-certfile": etcdPKIDir + "/" + KeyEtcdClientCert,
		"etcd-keyfile":  etcdPKIDir + "/" + KeyEtcdClientKey,
	}
}

// serviceSubnet is the control plane's Service range.
func serviceSubnet(k *operatorv1alpha1.Karmada) string {
	if s := apiServerSpec(k).ServiceSubnet; s != nil && *s != "" {
		return *s
	}
	return defaultServiceSubnet
}
