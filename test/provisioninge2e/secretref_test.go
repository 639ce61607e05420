package provisioninge2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// TestSecretRefsStayInTheirNamespace: a Karmada that names a Secret of another tenant's
// namespace (one the worker may read) is refused by validation, and none of that Secret's
// keys reaches a Secret of the creator's namespace. Each Secret reference of the spec is
// tried: the external etcd's client certificate, the custom API server CA and the remote
// host cluster's kubeconfig.
func TestSecretRefsStayInTheirNamespace(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-invalid")
	other := hostNamespace(t, "tenant-other")
	stolen := map[string][]byte{"ca.crt": []byte("other tenant's CA"), "tls.crt": []byte("other tenant's cert"),
		"tls.key": []byte("other tenant's key"), "kubeconfig": []byte("other tenant's kubeconfig")}
	_, err := testEnv.Host.Client().CoreV1().Secrets(other).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-client"}, Data: stolen}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	theirs := &operatorv1alpha1.LocalSecretReference{Namespace: other, Name: "etcd-client"}
	nodePort := &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}
	cases := []struct {
		name  string
		spec  operatorv1alpha1.KarmadaSpec
		field string
	}{
		{"xns-etcd", operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{Etcd: &operatorv1alpha1.Etcd{
			External: &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://127.0.0.1:2379"}, SecretRef: *theirs}}}},
			"spec.components.etcd.external.secretRef.namespace"},
		{"xns-ca", operatorv1alpha1.KarmadaSpec{CustomCertificate: &operatorv1alpha1.CustomCertificate{APIServerCACert: theirs}},
			"spec.customCertificate.apiServerCACert.namespace"},
		{"xns-host", operatorv1alpha1.KarmadaSpec{HostCluster: &operatorv1alpha1.HostCluster{SecretRef: theirs},
			Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: nodePort}},
			"spec.hostCluster.secretRef.namespace"},
	}
	for _, c := range cases {
		createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: c.spec})
	}
	for _, c := range cases {
		cond := waitValidationError(t, ns, c.name, c.field)
		assert.Contains(t, cond.Message, "Secrets of other namespaces are never read", c.name)
	}
	// Nothing of the other tenant's Secret was copied into the creator's namespace.
	secrets, err := testEnv.Host.Client().CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range secrets.Items {
		for key, value := range s.Data {
			assert.NotContains(t, string(value), "other tenant's", "Secret %s/%s key %s", ns, s.Name, key)
		}
		for _, c := range cases {
			assert.NotEqual(t, prov.NamesFor(c.name).Of(prov.SuffixEtcdCert), s.Name, "etcd Secret written for %s", c.name)
		}
	}
	for _, c := range cases {
		deleteKarmada(t, ns, c.name)
	}
}
