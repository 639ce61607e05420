package provisioning

import (
	"fmt"
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
// is what each install step waits for, so it is probed every few seconds, with room for a
// busy host to answer slowly.
func readinessProbe(path string, port int32, scheme corev1.URIScheme) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port), Scheme: scheme}},
		PeriodSeconds:  5,
		TimeoutSeconds: 5,
	}
}

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
			Replicas: replicas(k, c),
			Selector: &metav1.LabelSelector{MatchLabels: selector(k.Name, c)},
			Template: podTemplate(k, c, container, volumes, certHash),
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

// EtcdObjects are the local etcd's StatefulSet and its headless and client Services.
func EtcdObjects(k *operatorv1alpha1.Karmada, certHash string) (*appsv1.StatefulSet, []*corev1.Service) {
	names := NamesFor(k.Name)
	name := names.Of(SuffixEtcd)
	n := replicas(k, Etcd)
	var members []string
	for i := range *n {
		members = append(members, fmt.Sprintf("%s-%d=https://%s-%d.%s.%s.svc.%s:%d", name, i, name, i, name, k.Namespace, DNSDomain(k), etcdPeerPort))
	}
	// The metrics URL serves /metrics and the health endpoints the probe reads in plain HTTP:
	// the client URLs demand a client certificate.
	args := flags(map[string]string{
		"name":                        "$(POD_NAME)",
		"data-dir":                    etcdDataDir,
		"listen-client-urls":          "https://" + onPodIP(etcdClientPort),
		"listen-peer-urls":            "https://" + onPodIP(etcdPeerPort),
		"listen-metrics-urls":         "http://" + onPodIP(etcdMetricsPort),
		"advertise-client-urls":       fmt.Sprintf("https://$(POD_NAME).%s.%s.svc.%s:%d", name, k.Namespace, DNSDomain(k), etcdClientPort),
		"initial-advertise-peer-urls": fmt.Sprintf("https://$(POD_NAME).%s.%s.svc.%s:%d", name, k.Namespace, DNSDomain(k), etcdPeerPort),
		"initial-cluster":             strings.Join(members, ","),
		"initial-cluster-state":       "new",
		"client-cert-auth":            "true",
		"trusted-ca-file":             etcdPKIDir + "/" + KeyEtcdCACert,
		"cert-file":                   etcdPKIDir + "/" + KeyEtcdServerCert,
		"key-file":                    etcdPKIDir + "/" + KeyEtcdServerKey,
		"peer-client-cert-auth":       "true",
		"peer-trusted-ca-file":        etcdPKIDir + "/" + KeyEtcdCACert,
		"peer-cert-file":              etcdPKIDir + "/" + KeyEtcdPeerCert,
		"peer-key-file":               etcdPKIDir + "/" + KeyEtcdPeerKey,
	}, nil)
	container := corev1.Container{
		Name:    Etcd.Name,
		Command: append([]string{"etcd"}, args...),
		Env:     []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: etcdClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "server", ContainerPort: etcdPeerPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: etcdMetricsPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts:   []corev1.VolumeMount{{Name: volumeEtcdData, MountPath: etcdDataDir}, {Name: volumeEtcdCerts, MountPath: etcdPKIDir, ReadOnly: true}},
		ReadinessProbe: readinessProbe("/readyz", etcdMetricsPort, corev1.URISchemeHTTP),
	}
	volumes := []corev1.Volume{secretVolume(volumeEtcdCerts, names.Of(SuffixEtcdCert))}
	var claims []corev1.PersistentVolumeClaim
	var data *operatorv1alpha1.VolumeData
	if c := k.Spec.Components; c != nil && c.Etcd != nil && c.Etcd.Local != nil {
		data = c.Etcd.Local.VolumeData
	}
	switch {
	case data != nil && data.VolumeClaim != nil:
		claims = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: volumeEtcdData, Labels: data.VolumeClaim.Labels}, Spec: data.VolumeClaim.Spec}}
	case data != nil && data.HostPath != nil:
		volumes = append(volumes, corev1.Volume{Name: volumeEtcdData, VolumeSource: corev1.VolumeSource{HostPath: data.HostPath}})
	case data != nil && data.EmptyDir != nil:
		volumes = append(volumes, corev1.Volume{Name: volumeEtcdData, VolumeSource: corev1.VolumeSource{EmptyDir: data.EmptyDir}})
	default:
		volumes = append(volumes, corev1.Volume{Name: volumeEtcdData, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	meta := objectMeta(k, Etcd, name)
	s := SettingsOf(k, Etcd).Common
	meta.Labels, meta.Annotations = mergeLabels(s.Labels, meta.Labels), s.Annotations
	sts := &appsv1.StatefulSet{
		TypeMeta:   statefulType,
		ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:             n,
			ServiceName:          name,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Selector:             &metav1.LabelSelector{MatchLabels: selector(k.Name, Etcd)},
			Template:             podTemplate(k, Etcd, container, volumes, certHash),
			VolumeClaimTemplates: claims,
		},
	}
	headless := service(k, Etcd, name, etcdClientPort, etcdClientPort, "client")
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	headless.Spec.PublishNotReadyAddresses = true
	headless.Spec.Ports = append(headless.Spec.Ports, corev1.ServicePort{Name: "server", Port: etcdPeerPort, TargetPort: intstr.FromInt32(etcdPeerPort), Protocol: corev1.ProtocolTCP})
	client := service(k, Etcd, names.Of(SuffixEtcdClient), etcdClientPort, etcdClientPort, "client")
	return sts, []*corev1.Service{headless, client}
}

// APIServerDeployment is the API server's Deployment: the kube-apiserver container with the
// default flags overlaid by extraArgs and the extra volume mounts, then the sidecar
// containers in spec order; the pod has the certificate volumes, then the extra volumes.
func APIServerDeployment(k *operatorv1alpha1.Karmada, certHash string) *appsv1.Deployment {
	api := apiServerSpec(k)
	names := NamesFor(k.Name)
	defaults := map[string]string{
		"allow-privileged":                   "true",
		"authorization-mode":                 "Node,RBAC",
		"bind-address":                       podIP,
		"advertise-address":                  podIP,
		"secure-port":                        strconv.Itoa(APIServerPort),
		"client-ca-file":                     pkiDir + "/" + KeyCACert,
		"tls-cert-file":                      pkiDir + "/" + KeyAPIServerCert,
		"tls-private-key-file":               pkiDir + "/" + KeyAPIServerKey,
		"tls-min-version":                    "VersionTLS13",
		"enable-admission-plugins":           "NodeRestriction",
		"disable-admission-plugins":          "StorageObjectInUseProtection,ServiceAccount",
		"enable-bootstrap-token-auth":        "true",
		"service-account-issuer":             "https://kubernetes.default.svc." + DNSDomain(k),
		"service-account-key-file":           pkiDir + "/" + KeyServiceAccountPub,
		"service-account-signing-key-file":   pkiDir + "/" + KeyServiceAccountKey,
		"service-cluster-ip-range":           serviceSubnet(k),
		"proxy-client-cert-file":             pkiDir + "/" + KeyFrontProxyClientCert,
		"proxy-client-key-file":              pkiDir + "/" + KeyFrontProxyClientKey,
		"requestheader-client-ca-file":       pkiDir + "/" + KeyFrontProxyCACert,
		"requestheader-allowed-names":        "front-proxy-client",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"max-requests-inflight":              "1500",
		"max-mutating-requests-inflight":     "500",
		// The endpoint reconciler would publish the advertise address as the endpoint of the
		// control plane's "kubernetes" Service, which validation refuses for a loopback pod IP.
		// Nothing in a Karmada control plane runs pods that need that Service: it is not
		// reconciled at all.
		"endpoint-reconciler-type": "none",
	}
	maps.Copy(defaults, etcdClientFlags(k))
	if gates := featureGates(api.FeatureGates); gates != "" {
		defaults["feature-gates"] = gates
	}
	container := corev1.Container{
		Name:    APIServerContainer,
		Command: append([]string{"kube-apiserver"}, flags(defaults, api.ExtraArgs)...),
		Ports:   []corev1.ContainerPort{{Name: APIServerPortName, ContainerPort: APIServerPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: append([]corev1.VolumeMount{
			{Name: volumeCerts, MountPath: pkiDir, ReadOnly: true},
			{Name: volumeEtcdCerts, MountPath: etcdPKIDir, ReadOnly: true},
		}, api.ExtraVolumeMounts...),
		ReadinessProbe: readinessProbe("/readyz", APIServerPort, corev1.URISchemeHTTPS),
	}
	volumes := append([]corev1.Volume{
		secretVolume(volumeCerts, names.Of(SuffixCert)),
		secretVolume(volumeEtcdCerts, names.Of(SuffixEtcdCert)),
	}, api.ExtraVolumes...)
	d := deployment(k, APIServer, container, volumes, certHash)
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, api.SidecarContainers...)
	return d
}

// APIServerService is the API server's Service of the spec's type.
func APIServerService(k *operatorv1alpha1.Karmada) *corev1.Service {
	api := apiServerSpec(k)
	svc := service(k, APIServer, NamesFor(k.Name).Of(SuffixAPIServer), APIServerPort, APIServerPort, APIServerPortName)
	svc.Spec.Type = ServiceType(k)
	svc.Annotations = api.ServiceAnnotations
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		svc.Spec.LoadBalancerClass = api.LoadBalancerClass
	}
	return svc
}

// componentContainer is the container of a component that reaches the API server through its
// kubeconfig Secret, mounted at kubeconfigDir.
func componentContainer(k *operatorv1alpha1.Karmada, c Component, command string, defaults map[string]string) (corev1.Container, []corev1.Volume) {
	s := SettingsOf(k, c)
	defaults["kubeconfig"] = kubeconfigFile
	var gates string
	if c.KarmadaGates {
		gates = featureGates(k.Spec.FeatureGates, s.FeatureGates)
	} else {
		gates = featureGates(s.FeatureGates)
	}
	if gates != "" {
		defaults["feature-gates"] = gates
	}
	if len(s.Controllers) > 0 {
		defaults["controllers"] = strings.Join(s.Controllers, ",")
	}
	container := corev1.Container{
		Name:         c.Name,
		Command:      append([]string{command}, flags(defaults, s.ExtraArgs)...),
		VolumeMounts: []corev1.VolumeMount{{Name: volumeKubeconfig, MountPath: kubeconfigDir, ReadOnly: true}},
	}
	return container, []corev1.Volume{secretVolume(volumeKubeconfig, NamesFor(k.Name).ComponentConfig(c.Name))}
}

// extensionServerFlags are the flags of an API server the API server's aggregator proxies to
// (aggregated API server, search, metrics adapter), serving with the certificate under
// certKey and keyKey of the cert Secret (mounted at pkiDir), as upstream's operator sets them.
func extensionServerFlags(certKey, keyKey string) map[string]string {
	return map[string]string{
		"authentication-kubeconfig": kubeconfigFile,
		"authorization-kubeconfig":  kubeconfigFile,
		"bind-address":              podIP,
		"secure-port":               strconv.Itoa(extensionServerPort),
		"tls-cert-file":             pkiDir + "/" + certKey,
		"tls-private-key-file":      pkiDir + "/" + keyKey,
		"tls-min-version":           "VersionTLS13",
		"audit-log-path":            "-",
		"audit-log-maxage":          "0",
		"audit-log-maxbackup":       "0",
		"profiling-bind-address":    onPodIP(profilingPort),
	}
}

// controllerFlags are the flags of karmada-controller-manager, -scheduler and -descheduler:
// leader election in karmada-system, metrics, health probes (on healthPort) and profiling
// (served only with --enable-pprof) on the pod's IP.
func controllerFlags(healthPort int) map[string]string {
	return map[string]string{
		"leader-elect-resource-namespace": karmadaSystem,
		"metrics-bind-address":            onPodIP(metricsPort),
		"health-probe-bind-address":       onPodIP(healthPort),
		"profiling-bind-address":          onPodIP(profilingPort),
	}
}

// AggregatedAPIServerObjects are karmada-aggregated-apiserver's Deployment and Service.
func AggregatedAPIServerObjects(k *operatorv1alpha1.Karmada, certHash string) (*appsv1.Deployment, *corev1.Service) {
	names := NamesFor(k.Name)
	defaults := extensionServerFlags(KeyAggregatedCert, KeyAggregatedKey)
	maps.Copy(defaults, etcdClientFlags(k))
	container, volumes := componentContainer(k, AggregatedAPIServer, "/bin/karmada-aggregated-apiserver", defaults)
	container.ReadinessProbe = readinessProbe("/readyz", extensionServerPort, corev1.URISchemeHTTPS)
	volumes = mountSecret(&container, volumes, volumeCerts, names.Of(SuffixCert), pkiDir)
	volumes = mountSecret(&container, volumes, volumeEtcdCerts, names.Of(SuffixEtcdCert), etcdPKIDir)
	d := deployment(k, AggregatedAPIServer, container, volumes, certHash)
	return d, service(k, AggregatedAPIServer, names.Of(SuffixAggregatedAPIServer), extensionServerPort, extensionServerPort, "https")
}

// ComponentObjects are the Deployment of a component of Components and, for those serving
// the API server (webhook, search, metrics adapter), its Service.
func ComponentObjects(k *operatorv1alpha1.Karmada, c Component, certHash string) (*appsv1.Deployment, *corev1.Service) {
	names := NamesFor(k.Name)
	command := "/bin/" + c.Name
	var defaults map[string]string
	var probe *corev1.Probe
	var svc *corev1.Service
	switch c.Name {
	case KubeControllerManager.Name:
		command = "kube-controller-manager"
		// Only the controllers a control plane without nodes or pods needs: the node
		// controllers and their flags (allocate-node-cidrs, cluster-cidr) are left out.
		defaults = map[string]string{
			"authentication-kubeconfig":        kubeconfigFile,
			"authorization-kubeconfig":         kubeconfigFile,
			"bind-address":                     podIP,
			"client-ca-file":                   pkiDir + "/" + KeyCACert,
			"cluster-name":                     "karmada",
			"controllers":                      "namespace,garbagecollector,serviceaccount-token,ttl-after-finished,bootstrapsigner,csrapproving,csrcleaner,csrsigning,clusterrole-aggregation",
			"cluster-signing-cert-file":        pkiDir + "/" + KeyCACert,
			"cluster-signing-key-file":         pkiDir + "/" + KeyCAKey,
			"root-ca-file":                     pkiDir + "/" + KeyCACert,
			"service-account-private-key-file": pkiDir + "/" + KeyServiceAccountKey,
			"service-cluster-ip-range":         serviceSubnet(k),
			"use-service-account-credentials":  "true",
			"leader-elect":                     "true",
		}
		probe = readinessProbe("/healthz", kubeControllerManagerPort, corev1.URISchemeHTTPS)
	case ControllerManager.Name:
		defaults = controllerFlags(controllerManagerHealthPort)
		defaults["controllers"] = "*"
		defaults["cluster-status-update-frequency"] = "10s"
		probe = readinessProbe("/healthz", controllerManagerHealthPort, corev1.URISchemeHTTP)
	case Scheduler.Name:
		defaults = controllerFlags(schedulerHealthPort)
		probe = readinessProbe("/healthz", schedulerHealthPort, corev1.URISchemeHTTP)
	case Descheduler.Name:
		defaults = controllerFlags(deschedulerHealthPort)
		probe = readinessProbe("/healthz", deschedulerHealthPort, corev1.URISchemeHTTP)
	case Webhook.Name:
		defaults = map[string]string{
			"bind-address":              podIP,
			"secure-port":               strconv.Itoa(webhookPort),
			"cert-dir":                  webhookPKIDir,
			"tls-cert-file-name":        KeyTLSCert,
			"tls-private-key-file-name": KeyTLSKey,
			"metrics-bind-address":      onPodIP(metricsPort),
			"health-probe-bind-address": onPodIP(webhookHealthPort),
			"profiling-bind-address":    onPodIP(profilingPort),
		}
		// karmada-webhook serves readiness under "/readyz/" on its secure port; "/readyz"
		// (upstream's probe path) only redirects there.
		probe = readinessProbe("/readyz/", webhookPort, corev1.URISchemeHTTPS)
		svc = service(k, c, names.Of(c.Suffix), 443, webhookPort, "https")
	case Search.Name:
		defaults = extensionServerFlags(KeySearchCert, KeySearchKey)
		maps.Copy(defaults, etcdClientFlags(k))
		// Ready once it listens. Not /readyz, nor /livez (which runs the same post-start
		// hooks): karmada-search reports healthy only once it has read its ResourceRegistries,
		// which it serves itself, through the API server, which reaches it only through a
		// Service that routes to Ready pods. Upstream's manifest has no readiness probe.
		probe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(extensionServerPort)}},
			PeriodSeconds: 5, TimeoutSeconds: 5}
		svc = service(k, c, names.Of(c.Suffix), extensionServerPort, extensionServerPort, "https")
	case MetricsAdapter.Name:
		defaults = extensionServerFlags(KeyMetricsAdapterCert, KeyMetricsAdapterKey)
		defaults["client-ca-file"] = pkiDir + "/" + KeyCACert
		defaults["metrics-bind-address"] = onPodIP(metricsPort)
		probe = readinessProbe("/readyz", extensionServerPort, corev1.URISchemeHTTPS)
		svc = service(k, c, names.Of(c.Suffix), extensionServerPort, extensionServerPort, "https")
	}
	container, volumes := componentContainer(k, c, command, defaults)
	container.ReadinessProbe = probe
	switch c.Name {
	case KubeControllerManager.Name, MetricsAdapter.Name:
		volumes = mountSecret(&container, volumes, volumeCerts, names.Of(SuffixCert), pkiDir)
	case Search.Name:
		volumes = mountSecret(&container, volumes, volumeCerts, names.Of(SuffixCert), pkiDir)
		volumes = mountSecret(&container, volumes, volumeEtcdCerts, names.Of(SuffixEtcdCert), etcdPKIDir)
	case Webhook.Name:
		volumes = mountSecret(&container, volumes, volumeWebhookCerts, names.Of(SuffixWebhookCert), webhookPKIDir)
	}
	return deployment(k, c, container, volumes, certHash), svc
}
