package env

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// TestKarmadaCRDs builds the control plane's CRDs beside Karmada from the CRD tarball of
// KARMADA_SRC: the whole set, MultiClusterService and Work among them, and every conversion
// webhook (the binding CRDs' patches) called at karmada-webhook on loopback with the CA given.
func TestKarmadaCRDs(t *testing.T) {
	tarball, source, err := findCRDTarball()
	if err != nil {
		t.Skipf("no Karmada CRD tarball: %v", err)
	}
	ca := []byte("the CA")
	crds, err := karmadaCRDs(tarball, "https://127.0.0.1:8443", ca)
	require.NoError(t, err, source)

	names := map[string]bool{}
	converted := 0
	for _, crd := range crds {
		names[crd.Name] = true
		c := crd.Spec.Conversion
		if c == nil || c.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		converted++
		require.NotNil(t, c.Webhook, crd.Name)
		assert.Nil(t, c.Webhook.ClientConfig.Service, crd.Name)
		assert.Equal(t, "https://127.0.0.1:8443/convert", ptr.Deref(c.Webhook.ClientConfig.URL, ""), crd.Name)
		assert.Equal(t, ca, c.Webhook.ClientConfig.CABundle, crd.Name)
	}
	for _, want := range []string{"multiclusterservices.networking.karmada.io", "works.work.karmada.io",
		"resourcebindings.work.karmada.io", "clusterresourcebindings.work.karmada.io", "propagationpolicies.policy.karmada.io"} {
		assert.True(t, names[want], "%s missing from %s", want, source)
	}
	// cluster.karmada.io is the aggregated API server's, not a CRD.
	assert.False(t, names[clusterCRDName])
	assert.Equal(t, 2, converted, "the conversion patches of resourcebindings and clusterresourcebindings")
}

// TestToLoopback moves a hook of upstream's configurations to karmada-webhook on loopback,
// keeping its path.
func TestToLoopback(t *testing.T) {
	k := &karmadaComponents{webhookPort: 8443}
	cc := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://karmada-webhook.karmada-system.svc:443/validate-work")}
	require.NoError(t, k.toLoopback(&cc))
	assert.Equal(t, "https://127.0.0.1:8443/validate-work", *cc.URL)
	assert.Error(t, k.toLoopback(&admissionregistrationv1.WebhookClientConfig{}))
	assert.True(t, strings.HasPrefix(k.webhookURL(), "https://127.0.0.1:"))
}
