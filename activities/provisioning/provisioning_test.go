package provisioning

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

func karmada(name string, mutate ...func(*operatorv1alpha1.Karmada)) *operatorv1alpha1.Karmada {
	k := &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant1", Generation: 1}}
	k.Spec.Components = &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{}}
	for _, m := range mutate {
		m(k)
	}
	return k
}

func TestNames(t *testing.T) {
	assert.Equal(t, "my-karmada-apiserver", NamesFor("my-karmada").Of(SuffixAPIServer))
	assert.Equal(t, "foo-karmada-etcd-client", NamesFor("foo").Of(SuffixEtcdClient))
	assert.Equal(t, "foo-karmada-admin-config", NamesFor("foo").Of(SuffixAdminConfig))
	assert.Equal(t, map[string]string{LabelManagedBy: ManagedBy, LabelName: "etcd", LabelInstance: "foo"}, Labels("foo", "etcd"))
}

func TestValidate(t *testing.T) {
	pdb := &operatorv1alpha1.PodDisruptionBudgetConfig{MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	cases := []struct {
		name   string
		mutate func(*operatorv1alpha1.Karmada)
		field  string
	}{
		{"tarball url", func(k *operatorv1alpha1.Karmada) {
			k.Spec.CRDTarball = &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{URL: "::not a url"}}
		}, "spec.crdTarball.httpSource.url"},
		{"proxy url", func(k *operatorv1alpha1.Karmada) {
			k.Spec.CRDTarball = &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{URL: "https://example.com/crds.tar.gz",
				Proxy: &operatorv1alpha1.ProxyConfig{ProxyURL: "ftp//nohost"}}}
		}, "spec.crdTarball.httpSource.proxy.proxyURL"},
		{"service type", func(k *operatorv1alpha1.Karmada) { k.Spec.Components.KarmadaAPIServer.ServiceType = "ExternalName" },
			"spec.components.karmadaAPIServer.serviceType"},
		{"load balancer class", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.LoadBalancerClass = ptr.To("x")
		}, "spec.components.karmadaAPIServer.loadBalancerClass"},
		{"remote host needs NodePort", func(k *operatorv1alpha1.Karmada) {
			k.Spec.HostCluster = &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Name: "remote"}}
		}, "spec.components.karmadaAPIServer.serviceType"},
		{"etcd both", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{},
				External: &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://e:2379"}, SecretRef: operatorv1alpha1.LocalSecretReference{Name: "e"}}}
		}, "spec.components.etcd"},
		{"etcd neither", func(k *operatorv1alpha1.Karmada) { k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{} }, "spec.components.etcd"},
		{"sidecar named kube-apiserver", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.SidecarContainers = []corev1.Container{{Name: "kube-apiserver"}}
		}, "spec.components.karmadaAPIServer.sidecarContainers[0].name"},
		{"extra volume reuses certs", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.ExtraVolumes = []corev1.Volume{{Name: "certs"}}
		}, "spec.components.karmadaAPIServer.extraVolumes[0].name"},
		{"pdb both", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaScheduler = &operatorv1alpha1.KarmadaScheduler{CommonSettings: operatorv1alpha1.CommonSettings{PodDisruptionBudgetConfig: pdb}}
		}, "spec.components.karmadaScheduler.podDisruptionBudgetConfig"},
		{"etcd Secret of another namespace", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{External: &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://e:2379"},
				SecretRef: operatorv1alpha1.LocalSecretReference{Namespace: "tenant2", Name: "etcd-client"}}}
		}, "spec.components.etcd.external.secretRef.namespace"},
		{"CA Secret of another namespace", func(k *operatorv1alpha1.Karmada) {
			k.Spec.CustomCertificate = &operatorv1alpha1.CustomCertificate{APIServerCACert: &operatorv1alpha1.LocalSecretReference{Namespace: "tenant2", Name: "ca"}}
		}, "spec.customCertificate.apiServerCACert.namespace"},
		{"host cluster Secret of another namespace", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.ServiceType = corev1.ServiceTypeNodePort
			k.Spec.HostCluster = &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Namespace: "tenant2", Name: "kubeconfig"}}
		}, "spec.hostCluster.secretRef.namespace"},
		{"pdb neither", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{CommonSettings: operatorv1alpha1.CommonSettings{
				PodDisruptionBudgetConfig: &operatorv1alpha1.PodDisruptionBudgetConfig{}}}}
		}, "spec.components.etcd.local.podDisruptionBudgetConfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := Validate(karmada("foo", tc.mutate))
			require.Len(t, problems, 1, "%v", problems)
			assert.True(t, strings.HasPrefix(problems[0], tc.field+": "), problems[0])
		})
	}
	assert.Empty(t, Validate(karmada("foo")))
	assert.Empty(t, Validate(&operatorv1alpha1.Karmada{}), "an empty spec installs the defaults")

	own := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.CustomCertificate = &operatorv1alpha1.CustomCertificate{APIServerCACert: &operatorv1alpha1.LocalSecretReference{Namespace: "tenant1", Name: "ca"}}
	})
	assert.Empty(t, Validate(own), "the Karmada's own namespace may be named")
	_, err := secretRef(own, operatorv1alpha1.LocalSecretReference{Namespace: "tenant2", Name: "ca"})
	assert.ErrorContains(t, err, "outside the namespace", "the activities refuse it too")
	resolved, err := secretRef(own, operatorv1alpha1.LocalSecretReference{Name: "ca"})
	require.NoError(t, err)
	assert.Equal(t, "tenant1", resolved.Namespace)

	ref := operatorv1alpha1.LocalSecretReference{Namespace: "tenant1", Name: "etcd"}
	assert.Equal(t, []string{`spec.components.etcd.external.secretRef: Secret tenant1/etcd not found`}, validateExternalEtcdSecret(nil, false, ref))
	partial := &corev1.Secret{Data: map[string][]byte{"ca.crt": []byte("x"), "tls.crt": []byte("x")}}
	assert.Equal(t, []string{`spec.components.etcd.external.secretRef: Secret tenant1/etcd has no "tls.key"`}, validateExternalEtcdSecret(partial, true, ref))
}

// kmsSpec is seed 003's example: a KMS plugin sharing a socket volume with the API server.
func kmsSpec(k *operatorv1alpha1.Karmada) {
	api := k.Spec.Components.KarmadaAPIServer
	api.ExtraArgs = map[string]string{"encryption-provider-config": "/etc/kubernetes/encryption-config.yaml", "max-requests-inflight": "2000"}
	api.ExtraVolumes = []corev1.Volume{
		{Name: "encryption-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "encryption-config"}}}},
		{Name: "kms-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	api.ExtraVolumeMounts = []corev1.VolumeMount{
		{Name: "encryption-config", MountPath: "/etc/kubernetes/encryption-config.yaml", SubPath: "encryption-config.yaml"},
		{Name: "kms-socket", MountPath: "/var/run/kmsplugin"},
	}
	api.SidecarContainers = []corev1.Container{
		{Name: "kms-plugin", Image: "custom-kms-plugin:latest", VolumeMounts: []corev1.VolumeMount{{Name: "kms-socket", MountPath: "/var/run/kmsplugin"}}},
		{Name: "audit-shipper", Image: "shipper:1"},
	}
}

func TestAPIServerDeployment(t *testing.T) {
	d := APIServerDeployment(karmada("foo", kmsSpec), "h1")
	pod := d.Spec.Template.Spec
	var names []string
	for _, c := range pod.Containers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"kube-apiserver", "kms-plugin", "audit-shipper"}, names, "sidecars after the API server, in spec order")
	main := pod.Containers[0]
	assert.Equal(t, "kube-apiserver", main.Command[0])
	assert.Contains(t, main.Command, "--encryption-provider-config=/etc/kubernetes/encryption-config.yaml")
	assert.Contains(t, main.Command, "--max-requests-inflight=2000", "extraArgs override defaults")
	assert.NotContains(t, main.Command, "--max-requests-inflight=1500")
	assert.Contains(t, main.Command, "--secure-port=5443")
	assert.True(t, slices.IsSorted(main.Command[1:]), "flags are sorted")
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	assert.Equal(t, []string{"certs", "etcd-certs", "encryption-config", "kms-socket"}, volumes)
	var mounts []string
	for _, m := range main.VolumeMounts {
		mounts = append(mounts, m.Name)
	}
	assert.Equal(t, []string{"certs", "etcd-certs", "encryption-config", "kms-socket"}, mounts)
	assert.Equal(t, "h1", d.Spec.Template.Annotations[AnnotationCertHash])
	assert.Equal(t, map[string]string{LabelName: "karmada-apiserver", LabelInstance: "foo"}, d.Spec.Selector.MatchLabels)
	assert.Equal(t, "registry.k8s.io/kube-apiserver:"+DefaultKubernetesVersion, main.Image)
}

func TestImagesAndFeatureGates(t *testing.T) {
	k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.PrivateRegistry = &operatorv1alpha1.ImageRegistry{Registry: "registry.example"}
		k.Spec.FeatureGates = map[string]bool{"Failover": true}
		k.Spec.Components.KarmadaScheduler = &operatorv1alpha1.KarmadaScheduler{
			CommonSettings: operatorv1alpha1.CommonSettings{Image: operatorv1alpha1.Image{ImageTag: "v9"}},
			FeatureGates:   map[string]bool{"Failover": false, "Other": true},
		}
	})
	assert.Equal(t, "registry.example/karmada-scheduler:v9", Image(k, Scheduler))
	d, svc := ComponentObjects(k, Scheduler, "")
	assert.Nil(t, svc)
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Command, "--feature-gates=Failover=false,Other=true")
	kcm, _ := ComponentObjects(k, KubeControllerManager, "")
	for _, arg := range kcm.Spec.Template.Spec.Containers[0].Command {
		assert.NotContains(t, arg, "Failover", "Karmada feature gates are not passed to Kubernetes components")
	}
	karmadaVersion, kubeVersion := Versions(k)
	assert.Equal(t, DefaultKarmadaVersion, karmadaVersion)
	assert.Equal(t, DefaultKubernetesVersion, kubeVersion)
	assert.Len(t, InstalledComponents(k), 4, "optional components only when set")
}

func TestAPIServerService(t *testing.T) {
	for _, typ := range []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer} {
		k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.ServiceType = typ
			k.Spec.Components.KarmadaAPIServer.ServiceAnnotations = map[string]string{"a": "b"}
			if typ == corev1.ServiceTypeLoadBalancer {
				k.Spec.Components.KarmadaAPIServer.LoadBalancerClass = ptr.To("example.com/lb")
			}
		})
		svc := APIServerService(k)
		assert.Equal(t, typ, svc.Spec.Type)
		assert.Equal(t, "foo-karmada-apiserver", svc.Name)
		assert.Equal(t, int32(5443), svc.Spec.Ports[0].Port)
		assert.Equal(t, "client", svc.Spec.Ports[0].Name)
		assert.Equal(t, map[string]string{"a": "b"}, svc.Annotations)
		assert.Equal(t, typ == corev1.ServiceTypeLoadBalancer, svc.Spec.LoadBalancerClass != nil)
	}
}

func TestStepHashes(t *testing.T) {
	base := StepHashes(karmada("foo"))
	sidecar := StepHashes(karmada("foo", kmsSpec))
	var changed []string
	for _, step := range []string{StepGenerateCertificates, StepEnsureNamespace, StepInstallEtcd, StepWaitEtcdReady, StepInstallAPIServer,
		StepWaitAPIServerReady, StepWriteAdminKubeconfig, StepInstallAggregatedAPIServer, StepInitControlPlane, StepInstallComponents} {
		if base[step] != sidecar[step] {
			changed = append(changed, step)
		}
	}
	// The admin kubeconfig (and what uses it) depends on the API server's Service, hashed
	// with the API server step.
	assert.Equal(t, []string{StepInstallAPIServer, StepWaitAPIServerReady, StepWriteAdminKubeconfig, StepInstallAggregatedAPIServer,
		StepInitControlPlane, StepInstallComponents}, changed)

	scheduler := StepHashes(karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaScheduler = &operatorv1alpha1.KarmadaScheduler{ExtraArgs: map[string]string{"v": "4"}}
	}))
	// Only the scheduler rolls: all components at once before ordered rollouts, the
	// scheduler's own steps since.
	for step, h := range base {
		want := step == StepInstallComponents || step == StepWaitComponentsReady ||
			step == ComponentStep(StepInstallComponent, Scheduler.Name) || step == ComponentStep(StepWaitComponentReady, Scheduler.Name)
		assert.Equal(t, want, h != scheduler[step], step)
	}

	// A new Karmada version without a tarball in the spec applies its CRDs again.
	upgraded := StepHashes(karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaControllerManager = &operatorv1alpha1.KarmadaControllerManager{
			CommonSettings: operatorv1alpha1.CommonSettings{Image: operatorv1alpha1.Image{ImageTag: "v1.99.0"}}}
	}))
	assert.NotEqual(t, base[StepInitControlPlane], upgraded[StepInitControlPlane])
}

func TestCertificatesGeneratedOnce(t *testing.T) {
	k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaAPIServer.ServiceType = corev1.ServiceTypeNodePort
		k.Spec.Components.KarmadaAPIServer.CertSANs = []string{"karmada.example.com", "192.0.2.7"}
	})
	client := fake.NewClientset(readyNode("n1", "127.0.0.1"))
	a := &Activities{Host: client}
	ctx := context.Background()

	first, err := a.local().ensureCertificates(ctx, k, []string{"127.0.0.1"})
	require.NoError(t, err)
	secret, err := client.CoreV1().Secrets("tenant1").Get(ctx, "foo-karmada-cert", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, Labels("foo", "karmada-apiserver"), secret.Labels)
	ca, err := pki.ParseAuthority(pki.KeyPair{Cert: secret.Data[KeyCACert], Key: secret.Data[KeyCAKey]})
	require.NoError(t, err)
	serving, err := pki.ParseCert(secret.Data[KeyAPIServerCert])
	require.NoError(t, err)
	assert.Contains(t, serving.DNSNames, "karmada.example.com")
	assert.Contains(t, serving.DNSNames, "*.tenant1.svc.cluster.local")
	assert.Contains(t, serving.DNSNames, "*.karmada-system.svc")
	assert.True(t, slices.ContainsFunc(serving.IPAddresses, func(ip net.IP) bool { return ip.String() == "192.0.2.7" }))
	admin, err := pki.ParseCert(secret.Data[KeyAdminCert])
	require.NoError(t, err)
	assert.Equal(t, "system:admin", admin.Subject.CommonName)
	assert.Equal(t, []string{"system:masters"}, admin.Subject.Organization)
	require.NoError(t, admin.CheckSignatureFrom(ca.Certificate()))

	again, err := a.local().ensureCertificates(ctx, k, []string{"127.0.0.1"})
	require.NoError(t, err)
	assert.Equal(t, first, again, "nothing is regenerated")

	// A new address re-issues the serving certificate only, with the same CA.
	lb, err := a.local().ensureCertificates(ctx, k, []string{"198.51.100.9"})
	require.NoError(t, err)
	assert.NotEqual(t, first, lb)
	after, _ := client.CoreV1().Secrets("tenant1").Get(ctx, "foo-karmada-cert", metav1.GetOptions{})
	assert.Equal(t, secret.Data[KeyCACert], after.Data[KeyCACert])
	assert.Equal(t, secret.Data[KeyCAKey], after.Data[KeyCAKey])
	assert.Equal(t, secret.Data[KeyServiceAccountKey], after.Data[KeyServiceAccountKey])
	assert.NotEqual(t, secret.Data[KeyAPIServerCert], after.Data[KeyAPIServerCert])

	// A read error other than NotFound never regenerates anything.
	client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection reset")
	})
	_, err = a.local().ensureCertificates(ctx, k, nil)
	require.Error(t, err)
	unchanged, _ := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("secrets"), "tenant1", "foo-karmada-cert")
	assert.Equal(t, after.Data, unchanged.(*corev1.Secret).Data)
}

func readyNode(name, ip string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

func TestEndpointByServiceType(t *testing.T) {
	ctx := context.Background()
	svc := func(typ corev1.ServiceType) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo-karmada-apiserver", Namespace: "tenant1"},
			Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Name: "client", Port: 5443, NodePort: 31234}}}}
		if typ == corev1.ServiceTypeLoadBalancer {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.9"}}
		}
		return s
	}
	want := map[corev1.ServiceType]string{
		corev1.ServiceTypeClusterIP:    "https://foo-karmada-apiserver.tenant1.svc.example.org:5443",
		corev1.ServiceTypeNodePort:     "https://127.0.0.1:31234",
		corev1.ServiceTypeLoadBalancer: "https://198.51.100.9:5443",
	}
	for typ, endpoint := range want {
		k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.ServiceType = typ
			k.Spec.HostCluster = &operatorv1alpha1.HostCluster{Networking: &operatorv1alpha1.Networking{DNSDomain: ptr.To("example.org")}}
		})
		notReady := readyNode("a-not-ready", "10.0.0.1")
		notReady.Status.Conditions[0].Status = corev1.ConditionFalse
		a := &Activities{Host: fake.NewClientset(svc(typ), notReady, readyNode("b", "127.0.0.1"))}
		got, err := a.local().endpoint(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, endpoint, got, typ)
	}
}

func TestControlPlaneObjects(t *testing.T) {
	k := karmada("foo", func(k *operatorv1alpha1.Karmada) { k.Spec.Components.KarmadaSearch = &operatorv1alpha1.KarmadaSearch{} })
	services, apiServices := APIServices(k, []byte("ca"))
	require.Len(t, services, 2)
	assert.Equal(t, "foo-karmada-aggregated-apiserver.tenant1.svc.cluster.local", services[0].Spec.ExternalName)
	assert.Equal(t, "v1alpha1.cluster.karmada.io", apiServices[0].GetName())
	assert.Equal(t, "v1alpha1.search.karmada.io", apiServices[1].GetName())
	roles, binding := RBAC()
	assert.Len(t, roles, 3)
	assert.Equal(t, AdminUser, binding.Subjects[0].Name)
}

// TestWebhookConfigurations: the hooks karmada-operator registers, each at a path
// karmada-webhook serves on the instance's Service, trusting the CA.
func TestWebhookConfigurations(t *testing.T) {
	m, v := WebhookConfigurations(karmada("foo"), []byte("ca"))
	assert.Equal(t, "mutating-config", m.Name)
	assert.Equal(t, "validating-config", v.Name)
	assert.Equal(t, map[string]string{"app": "karmada-webhook"}, v.Labels)
	var mutating, validating []string
	for _, h := range m.Webhooks {
		mutating = append(mutating, h.Name+" "+strings.TrimPrefix(*h.ClientConfig.URL, "https://foo-karmada-webhook.tenant1.svc:443"))
		assert.Equal(t, []byte("ca"), h.ClientConfig.CABundle)
		assert.Equal(t, admissionregistrationv1.Fail, *h.FailurePolicy)
		assert.Equal(t, int32(3), *h.TimeoutSeconds)
	}
	for _, h := range v.Webhooks {
		validating = append(validating, h.Name+" "+strings.TrimPrefix(*h.ClientConfig.URL, "https://foo-karmada-webhook.tenant1.svc:443"))
		assert.Equal(t, []byte("ca"), h.ClientConfig.CABundle)
	}
	assert.Equal(t, []string{
		"propagationpolicy.karmada.io /mutate-propagationpolicy",
		"clusterpropagationpolicy.karmada.io /mutate-clusterpropagationpolicy",
		"overridepolicy.karmada.io /mutate-overridepolicy",
		"resourcebinding.karmada.io /mutate-resourcebinding",
		"clusterresourcebinding.karmada.io /mutate-clusterresourcebinding",
		"work.karmada.io /mutate-work",
		"autoscaling.karmada.io /mutate-federatedhpa",
		"multiclusterservice.karmada.io /mutate-multiclusterservice",
	}, mutating)
	assert.Equal(t, []string{
		"propagationpolicy.karmada.io /validate-propagationpolicy",
		"clusterpropagationpolicy.karmada.io /validate-clusterpropagationpolicy",
		"overridepolicy.karmada.io /validate-overridepolicy",
		"clusteroverridepolicy.karmada.io /validate-clusteroverridepolicy",
		"config.karmada.io /validate-resourceinterpreterwebhookconfiguration",
		"resourceinterpretercustomization.karmada.io /validate-resourceinterpretercustomization",
		"federatedresourcequota.karmada.io /validate-federatedresourcequota",
		"multiclusteringress.karmada.io /validate-multiclusteringress",
		"federatedhpa.karmada.io /validate-federatedhpa",
		"cronfederatedhpa.karmada.io /validate-cronfederatedhpa",
		"multiclusterservice.karmada.io /validate-multiclusterservice",
		"resourcedeletionprotection.karmada.io /validate-resourcedeletionprotection",
		"resourcebinding.karmada.io /validate-resourcebinding",
	}, validating)

	rb := m.Webhooks[3].Rules[0]
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, rb.Operations)
	assert.Equal(t, admissionregistrationv1.Rule{APIGroups: []string{"work.karmada.io"}, APIVersions: []string{"*"}, Resources: []string{"resourcebindings"},
		Scope: ptr.To(admissionregistrationv1.NamespacedScope)}, rb.Rule)
	assert.Equal(t, admissionregistrationv1.ClusterScope, *m.Webhooks[1].Rules[0].Scope)
	assert.Equal(t, int32(10), *v.Webhooks[5].TimeoutSeconds)
	protection := v.Webhooks[11]
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, protection.Rules[0].Operations)
	assert.Equal(t, []string{"*"}, protection.Rules[0].Resources)
	assert.Equal(t, admissionregistrationv1.AllScopes, *protection.Rules[0].Scope)
	assert.Equal(t, "resourcetemplate.karmada.io/deletion-protected", protection.ObjectSelector.MatchExpressions[0].Key)
	assert.Nil(t, v.Webhooks[0].ObjectSelector)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, *v.Webhooks[12].SideEffects)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *v.Webhooks[0].SideEffects)
}

// TestClusterIPInstanceIsNotDialledFromOutsideTheCluster: a worker outside the host cluster
// does not resolve the in-cluster name of a ClusterIP instance; it says why instead.
func TestClusterIPInstanceIsNotDialledFromOutsideTheCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	k := &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "tenant1"}}
	_, err := (&target{}).controlPlaneClient(context.Background(), k)
	require.ErrorContains(t, err, "Service tenant1/foo-karmada-apiserver is of type ClusterIP, reachable only from inside its host cluster")
}
