package provisioning

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The API server's manifests: the kube-apiserver Deployment, and its Service of the spec's
// type.

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
