package provisioning

import (
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The manifests of the components that reach the API server through a kubeconfig: the
// aggregated API server and every component of Components.

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
			PeriodSeconds: readinessPeriodSeconds, TimeoutSeconds: 5}
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
