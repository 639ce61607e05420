package provisioning

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

func TestParseAPIEndpoint(t *testing.T) {
	for in, want := range map[string]apiEndpoint{
		"karmada.example.com":              {host: "karmada.example.com"},
		"karmada.example.com:6443":         {host: "karmada.example.com", port: "6443"},
		"192.0.2.7":                        {host: "192.0.2.7"},
		"192.0.2.7:443":                    {host: "192.0.2.7", port: "443"},
		"2001:db8::1":                      {host: "2001:db8::1"},
		"[2001:db8::1]":                    {host: "2001:db8::1"},
		"[2001:db8::1]:8443":               {host: "2001:db8::1", port: "8443"},
		"https://karmada.example.com":      {host: "karmada.example.com"},
		"https://karmada.example.com:6443": {host: "karmada.example.com", port: "6443"},
		"HTTPS://192.0.2.7:443/":           {host: "192.0.2.7", port: "443"},
		"https://[2001:db8::1]:8443":       {host: "2001:db8::1", port: "8443"},
	} {
		got, err := parseAPIEndpoint(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{
		"", " ", "http://karmada.example.com", "tcp://192.0.2.7:443", "https://karmada.example.com/path",
		"https://karmada.example.com?x=1", "karmada.example.com:", "karmada.example.com:0", "karmada.example.com:65536",
		"karmada.example.com:https", "Karmada.Example.com", "under_score.example.com", "[karmada.example.com]",
		"https://", "a b", "karmada.example.com/path",
	} {
		_, err := parseAPIEndpoint(in)
		assert.Error(t, err, "%q", in)
	}
	// User information may hold a password: never quoted.
	for _, in := range []string{"https://admin:s3cret@karmada.example.com", "admin:s3cret@karmada.example.com:443"} {
		_, err := parseAPIEndpoint(in)
		require.Error(t, err, in)
		assert.NotContains(t, err.Error(), "s3cret")
	}
}

func TestValidateAPIEndpoint(t *testing.T) {
	with := func(endpoint string) *operatorv1alpha1.Karmada {
		return karmada("foo", func(k *operatorv1alpha1.Karmada) {
			k.Spec.HostCluster = &operatorv1alpha1.HostCluster{APIEndpoint: endpoint}
		})
	}
	assert.Empty(t, Validate(with("")))
	assert.Empty(t, Validate(with("https://192.0.2.7:6443")))
	problems := Validate(with("ftp://192.0.2.7"))
	require.Len(t, problems, 1)
	assert.True(t, strings.HasPrefix(problems[0], "spec.hostCluster.apiEndpoint: must be a hostname, hostname:port, IP or IP:port"), problems[0])
}

// TestEndpointWithAPIEndpoint: the admin kubeconfig's server (and status.apiServerEndpoint) is
// the apiEndpoint's host, with its port, else the node port for NodePort and 5443 otherwise.
func TestEndpointWithAPIEndpoint(t *testing.T) {
	ctx := context.Background()
	svc := func(typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo-karmada-apiserver", Namespace: "tenant1"},
			Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Name: "client", Port: 5443, NodePort: 31234}}}}
	}
	cases := []struct {
		typ      corev1.ServiceType
		endpoint string
		want     string
	}{
		{corev1.ServiceTypeNodePort, "127.0.0.77", "https://127.0.0.77:31234"},
		{corev1.ServiceTypeNodePort, "127.0.0.77:40000", "https://127.0.0.77:40000"},
		{corev1.ServiceTypeNodePort, "https://vip.example.com", "https://vip.example.com:31234"},
		{corev1.ServiceTypeLoadBalancer, "lb.example.com", "https://lb.example.com:5443"},
		{corev1.ServiceTypeLoadBalancer, "lb.example.com:443", "https://lb.example.com:443"},
		{corev1.ServiceTypeClusterIP, "2001:db8::1", "https://[2001:db8::1]:5443"},
		{corev1.ServiceTypeClusterIP, "https://[2001:db8::1]:6443", "https://[2001:db8::1]:6443"},
	}
	for _, c := range cases {
		k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.ServiceType = c.typ
			k.Spec.HostCluster = &operatorv1alpha1.HostCluster{APIEndpoint: c.endpoint}
		})
		// No load-balancer address and no Ready node: neither is needed.
		a := &Activities{Host: fake.NewClientset(svc(c.typ))}
		got, err := a.local().endpoint(ctx, k)
		if assert.NoError(t, err, c.endpoint) {
			assert.Equal(t, c.want, got, "%s %s", c.typ, c.endpoint)
		}
	}

	// NodePort without a port in the apiEndpoint waits for the node port.
	k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaAPIServer.ServiceType = corev1.ServiceTypeNodePort
		k.Spec.HostCluster = &operatorv1alpha1.HostCluster{APIEndpoint: "127.0.0.77"}
	})
	_, err := (&Activities{Host: fake.NewClientset()}).local().endpoint(ctx, k)
	assert.ErrorContains(t, err, "foo-karmada-apiserver")
}

// TestCertificateNamesAPIEndpoint: the API server certificate names the apiEndpoint's host,
// also when CertifyLoadBalancer passes the load-balancer address only.
func TestCertificateNamesAPIEndpoint(t *testing.T) {
	ctx := context.Background()
	for endpoint, check := range map[string]func(*testing.T, []string, []net.IP){
		"127.0.0.77:40000": func(t *testing.T, _ []string, ips []net.IP) {
			assert.True(t, slices.ContainsFunc(ips, net.ParseIP("127.0.0.77").Equal), "IPs %v", ips)
		},
		"https://vip.example.com": func(t *testing.T, dns []string, _ []net.IP) { assert.Contains(t, dns, "vip.example.com") },
	} {
		k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
			k.Spec.Components.KarmadaAPIServer.ServiceType = corev1.ServiceTypeLoadBalancer
			k.Spec.HostCluster = &operatorv1alpha1.HostCluster{APIEndpoint: endpoint}
		})
		client := fake.NewClientset()
		a := &Activities{Host: client}
		for _, addresses := range [][]string{nil, {"198.51.100.9"}} {
			_, err := a.local().ensureCertificates(ctx, k, addresses)
			require.NoError(t, err)
			secret, err := client.CoreV1().Secrets("tenant1").Get(ctx, "foo-karmada-cert", metav1.GetOptions{})
			require.NoError(t, err)
			serving, err := pki.ParseCert(secret.Data[KeyAPIServerCert])
			require.NoError(t, err)
			check(t, serving.DNSNames, serving.IPAddresses)
		}
	}
}
