package provisioning

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// fullKarmada installs every component, with Karmada feature gates set.
func fullKarmada() *operatorv1alpha1.Karmada {
	return karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.FeatureGates = map[string]bool{"Failover": true}
		k.Spec.Components.KarmadaDescheduler = &operatorv1alpha1.KarmadaDescheduler{}
		k.Spec.Components.KarmadaSearch = &operatorv1alpha1.KarmadaSearch{}
		k.Spec.Components.KarmadaMetricsAdapter = &operatorv1alpha1.KarmadaMetricsAdapter{}
	})
}

// pod is the pod template of one component.
type pod struct {
	component Component
	spec      corev1.PodSpec
}

// allPods are the pods of every workload of k.
func allPods(k *operatorv1alpha1.Karmada) []pod {
	sts, _ := EtcdObjects(k, "")
	aggregated, _ := AggregatedAPIServerObjects(k, "")
	pods := []pod{
		{Etcd, sts.Spec.Template.Spec},
		{APIServer, APIServerDeployment(k, "").Spec.Template.Spec},
		{AggregatedAPIServer, aggregated.Spec.Template.Spec},
	}
	for _, c := range InstalledComponents(k) {
		d, _ := ComponentObjects(k, c, "")
		pods = append(pods, pod{c, d.Spec.Template.Spec})
	}
	return pods
}

// args are the "--name=value" flags of c's command by name.
func args(t *testing.T, c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, arg := range c.Command[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		require.True(t, ok && strings.HasPrefix(arg, "--"), "%s: %q is not --name=value", c.Name, arg)
		out[name] = value
	}
	return out
}

// listenFlags are, per component, the flags of every socket its binary opens by default
// (each component's options): each must be set, on the pod's IP.
var listenFlags = map[string][]string{
	Etcd.Name:                  {"listen-client-urls", "listen-peer-urls", "listen-metrics-urls"},
	APIServer.Name:             {"bind-address", "advertise-address"},
	AggregatedAPIServer.Name:   {"bind-address", "profiling-bind-address"},
	KubeControllerManager.Name: {"bind-address"},
	ControllerManager.Name:     {"metrics-bind-address", "health-probe-bind-address", "profiling-bind-address"},
	Scheduler.Name:             {"metrics-bind-address", "health-probe-bind-address", "profiling-bind-address"},
	Descheduler.Name:           {"metrics-bind-address", "health-probe-bind-address", "profiling-bind-address"},
	Webhook.Name:               {"bind-address", "metrics-bind-address", "health-probe-bind-address", "profiling-bind-address"},
	Search.Name:                {"bind-address", "profiling-bind-address"},
	MetricsAdapter.Name:        {"bind-address", "metrics-bind-address", "profiling-bind-address"},
}

func TestEveryServerListensOnThePodIP(t *testing.T) {
	pods := allPods(fullKarmada())
	require.Len(t, pods, len(listenFlags), "every workload is checked")
	for _, p := range pods {
		c := p.spec.Containers[0]
		assert.Contains(t, c.Env, corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}, p.component.Name)
		flags := args(t, c)
		for name, value := range flags {
			assert.NotContains(t, value, "0.0.0.0", "%s --%s", p.component.Name, name)
			if strings.Contains(name, "bind-address") || strings.HasPrefix(name, "listen-") {
				assert.False(t, strings.HasPrefix(value, ":"), "%s --%s=%s listens on every interface", p.component.Name, name, value)
			}
		}
		for _, name := range listenFlags[p.component.Name] {
			assert.Contains(t, flags[name], "$(POD_IP)", "%s --%s", p.component.Name, name)
		}
	}
}

func TestEveryComponentHasAReadinessProbe(t *testing.T) {
	for _, p := range allPods(fullKarmada()) {
		probe := p.spec.Containers[0].ReadinessProbe
		require.NotNil(t, probe, p.component.Name)
		if p.component.Name == Search.Name {
			// Ready once it listens: its health needs its own API, served through a Service.
			require.NotNil(t, probe.TCPSocket, p.component.Name)
			continue
		}
		require.NotNil(t, probe.HTTPGet, p.component.Name)
		assert.Empty(t, probe.HTTPGet.Host, "%s: the kubelet probes the pod's IP", p.component.Name)
		assert.NotEmpty(t, probe.HTTPGet.Path, p.component.Name)
	}
	// The probes of the health servers are on the ports their flags give.
	for _, c := range []Component{ControllerManager, Scheduler, Descheduler} {
		d, _ := ComponentObjects(fullKarmada(), c, "")
		container := d.Spec.Template.Spec.Containers[0]
		assert.Equal(t, "$(POD_IP):"+container.ReadinessProbe.HTTPGet.Port.String(), args(t, container)["health-probe-bind-address"], c.Name)
	}
}

// secretData is what the certificate Secrets of k hold, by Secret name (the component
// kubeconfig Secrets hold one kubeconfig).
func secretData(t *testing.T, k *operatorv1alpha1.Karmada) map[string]map[string][]byte {
	names := NamesFor(k.Name)
	out := map[string]map[string][]byte{names.Of(SuffixCert): {}, names.Of(SuffixEtcdCert): {}, names.Of(SuffixWebhookCert): {}}
	_, err := certSecretContents(k, nil, nil)(out[names.Of(SuffixCert)])
	require.NoError(t, err)
	_, err = etcdSecretContents(k)(out[names.Of(SuffixEtcdCert)])
	require.NoError(t, err)
	ca, err := pki.ParseAuthority(pki.KeyPair{Cert: out[names.Of(SuffixCert)][KeyCACert], Key: out[names.Of(SuffixCert)][KeyCAKey]})
	require.NoError(t, err)
	_, err = webhookSecretContents(k, ca)(out[names.Of(SuffixWebhookCert)])
	require.NoError(t, err)
	for _, c := range append([]Component{AggregatedAPIServer}, InstalledComponents(k)...) {
		out[names.ComponentConfig(c.Name)] = map[string][]byte{KeyKubeconfig: []byte("kubeconfig")}
	}
	return out
}

func hasKey(data map[string][]byte, key string) bool {
	_, ok := data[key]
	return ok
}

// mountedFile returns the Secret and key a file of container c is, by the longest mount path
// it is under.
func mountedFile(spec corev1.PodSpec, c corev1.Container, file string) (secret, key string, ok bool) {
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(file, m.MountPath+"/") && len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == best.Name && v.Secret != nil {
			return v.Secret.SecretName, strings.TrimPrefix(file, best.MountPath+"/"), true
		}
	}
	return "", "", false
}

// TestEveryFileAFlagNamesIsInAMountedSecret: every flag naming a file (tls, etcd, kubeconfig,
// CA, key files) names a key of a Secret the pod mounts.
func TestEveryFileAFlagNamesIsInAMountedSecret(t *testing.T) {
	k := fullKarmada()
	secrets := secretData(t, k)
	for _, p := range allPods(k) {
		c := p.spec.Containers[0]
		flags := args(t, c)
		for name, value := range flags {
			if !strings.HasSuffix(name, "file") && !strings.HasSuffix(name, "kubeconfig") {
				continue
			}
			secret, key, ok := mountedFile(p.spec, c, value)
			if assert.True(t, ok, "%s --%s=%s is in no mounted Secret", p.component.Name, name, value) {
				assert.True(t, hasKey(secrets[secret], key), "%s --%s: Secret %s has no %q", p.component.Name, name, secret, key)
			}
		}
		if dir, ok := flags["cert-dir"]; ok {
			for _, file := range []string{flags["tls-cert-file-name"], flags["tls-private-key-file-name"]} {
				secret, key, ok := mountedFile(p.spec, c, path.Join(dir, file))
				require.True(t, ok, "%s: %s/%s", p.component.Name, dir, file)
				assert.True(t, hasKey(secrets[secret], key), "%s: Secret %s has no %q", p.component.Name, secret, key)
			}
		}
	}
}

// TestSearchAndMetricsAdapterServeWithTheirCertificates: they serve with certificates of the
// instance's CA (which their APIServices trust), search stores in etcd.
func TestSearchAndMetricsAdapterServeWithTheirCertificates(t *testing.T) {
	k := fullKarmada()
	certs := secretData(t, k)[NamesFor(k.Name).Of(SuffixCert)]
	ca, err := pki.ParseCert(certs[KeyCACert])
	require.NoError(t, err)
	for _, tc := range []struct {
		c         Component
		cert, key string
	}{{Search, KeySearchCert, KeySearchKey}, {MetricsAdapter, KeyMetricsAdapterCert, KeyMetricsAdapterKey}, {AggregatedAPIServer, KeyAggregatedCert, KeyAggregatedKey}} {
		var container corev1.Container
		if tc.c == AggregatedAPIServer {
			d, _ := AggregatedAPIServerObjects(k, "")
			container = d.Spec.Template.Spec.Containers[0]
		} else {
			d, svc := ComponentObjects(k, tc.c, "")
			container = d.Spec.Template.Spec.Containers[0]
			require.NotNil(t, svc)
			assert.Equal(t, int32(443), svc.Spec.Ports[0].Port)
		}
		flags := args(t, container)
		assert.Equal(t, pkiDir+"/"+tc.cert, flags["tls-cert-file"], tc.c.Name)
		assert.Equal(t, pkiDir+"/"+tc.key, flags["tls-private-key-file"], tc.c.Name)
		assert.Equal(t, "443", flags["secure-port"], tc.c.Name)
		serving, err := pki.ParseCert(certs[tc.cert])
		require.NoError(t, err)
		require.NoError(t, serving.CheckSignatureFrom(ca), tc.c.Name)
		svc := NamesFor(k.Name).Of(tc.c.Suffix)
		assert.Contains(t, serving.DNSNames, svc+".tenant1.svc", tc.c.Name)
		assert.Contains(t, serving.DNSNames, svc+".tenant1.svc.cluster.local", tc.c.Name)
		// The aggregator verifies the name of the Service its APIService names.
		assert.Contains(t, serving.DNSNames, tc.c.Name+".karmada-system.svc", tc.c.Name)
	}

	d, _ := ComponentObjects(k, Search, "")
	flags := args(t, d.Spec.Template.Spec.Containers[0])
	assert.Equal(t, "https://foo-karmada-etcd-client.tenant1.svc.cluster.local:2379", flags["etcd-servers"])
	for _, name := range []string{"etcd-cafile", "etcd-certfile", "etcd-keyfile"} {
		assert.True(t, strings.HasPrefix(flags[name], etcdPKIDir+"/"), name)
	}
	external := fullKarmada()
	external.Spec.Components.Etcd = &operatorv1alpha1.Etcd{External: &operatorv1alpha1.ExternalEtcd{
		Endpoints: []string{"https://e1:2379", "https://e2:2379"}, SecretRef: operatorv1alpha1.LocalSecretReference{Name: "e"}}}
	d, _ = ComponentObjects(external, Search, "")
	assert.Equal(t, "https://e1:2379,https://e2:2379", args(t, d.Spec.Template.Spec.Containers[0])["etcd-servers"])
}

func TestFlagsUpstreamSets(t *testing.T) {
	k := fullKarmada()
	api := args(t, APIServerDeployment(k, "").Spec.Template.Spec.Containers[0])
	assert.Equal(t, "none", api["endpoint-reconciler-type"], "a loopback advertise address is no valid endpoint")
	assert.Equal(t, "$(POD_IP)", api["advertise-address"])

	get := func(c Component) map[string]string {
		d, _ := ComponentObjects(k, c, "")
		return args(t, d.Spec.Template.Spec.Containers[0])
	}
	for _, c := range []Component{ControllerManager, Scheduler, Descheduler} {
		assert.Equal(t, "karmada-system", get(c)["leader-elect-resource-namespace"], c.Name)
		assert.Equal(t, kubeconfigFile, get(c)["kubeconfig"], c.Name)
	}
	assert.Equal(t, "10s", get(ControllerManager)["cluster-status-update-frequency"])
	kcm := get(KubeControllerManager)
	assert.Equal(t, pkiDir+"/"+KeyServiceAccountKey, kcm["service-account-private-key-file"])
	assert.Equal(t, "true", kcm["use-service-account-credentials"])
	assert.Equal(t, defaultServiceSubnet, kcm["service-cluster-ip-range"])
	webhook := get(Webhook)
	assert.Equal(t, webhookPKIDir, webhook["cert-dir"])
	assert.Equal(t, []string{"tls.crt", "tls.key"}, []string{webhook["tls-cert-file-name"], webhook["tls-private-key-file-name"]})

	// Karmada's feature gates go only to the components that have --feature-gates.
	for _, p := range allPods(k) {
		_, has := args(t, p.spec.Containers[0])["feature-gates"]
		want := slices.Contains([]string{AggregatedAPIServer.Name, ControllerManager.Name, Scheduler.Name, Webhook.Name}, p.component.Name)
		assert.Equal(t, want, has, p.component.Name)
	}
}
