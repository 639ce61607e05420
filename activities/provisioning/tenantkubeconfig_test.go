package provisioning

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// The kubeconfigs a tenant can write: a remote host cluster's, and the admin kubeconfig
// Secret of its instance.

// execKubeconfig is a kubeconfig for server whose user runs /bin/sh to create marker.
func execKubeconfig(t *testing.T, server, marker string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["tenant"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
		Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "tenant"}
	cfg.CurrentContext = "c"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

func remoteHost(k *operatorv1alpha1.Karmada) {
	k.Spec.HostCluster = &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Name: "remote"}}
	k.Spec.Components.KarmadaAPIServer.ServiceType = corev1.ServiceTypeNodePort
}

func TestHostClusterKubeconfigWithExecIsAValidationError(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: "tenant1"},
		Data: map[string][]byte{KeyKubeconfig: execKubeconfig(t, "https://127.0.0.1:1", marker)}}
	a := &Activities{Host: fake.NewClientset(secret)}
	k := karmada("foo", remoteHost)

	_, err := a.targetOf(context.Background(), k)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrValidation, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Message(), `spec.hostCluster.secretRef: Secret tenant1/remote, key kubeconfig: users["tenant"].exec: refused, it would run a command in the worker`)
	assert.Equal(t, []string{appErr.Message()}, a.checkHostClusterSecret(context.Background(), k))
	assert.NoFileExists(t, marker)
}

func TestHostClusterSecretsValidationLeavesToOthers(t *testing.T) {
	inline := clientcmdapi.NewConfig()
	inline.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	inline.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	inline.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	inline.CurrentContext = "c"
	good, err := clientcmd.Write(*inline)
	require.NoError(t, err)
	secret := func(name string, data []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant1"}, Data: map[string][]byte{KeyKubeconfig: data}}
	}
	a := &Activities{Host: fake.NewClientset(secret("remote", good), secret("empty", nil))}
	ctx := context.Background()

	assert.Empty(t, a.checkHostClusterSecret(ctx, karmada("foo")), "local host cluster")
	assert.Empty(t, a.checkHostClusterSecret(ctx, karmada("foo", remoteHost)), "inline credentials")
	assert.Empty(t, a.checkHostClusterSecret(ctx, karmada("foo", remoteHost, func(k *operatorv1alpha1.Karmada) {
		k.Spec.HostCluster.SecretRef.Name = "absent"
	})), "a missing Secret is the install step's to report, with retries")
	assert.Empty(t, a.checkHostClusterSecret(ctx, karmada("foo", remoteHost, func(k *operatorv1alpha1.Karmada) {
		k.Spec.HostCluster.SecretRef.Namespace = "other"
	})), "another namespace is Validate's to report")
	assert.Equal(t, []string{"spec.hostCluster.secretRef: Secret tenant1/empty, key kubeconfig: the kubeconfig is empty"},
		a.checkHostClusterSecret(ctx, karmada("foo", remoteHost, func(k *operatorv1alpha1.Karmada) { k.Spec.HostCluster.SecretRef.Name = "empty" })))
}

// TestControlPlaneClientIgnoresTheAdminKubeconfig: with the admin kubeconfig Secret rewritten
// to run a command and reach another server, the worker still reaches the instance's API
// server at the endpoint it computes, as the admin of the cert Secret, and runs nothing.
func TestControlPlaneClientIgnoresTheAdminKubeconfig(t *testing.T) {
	ca, err := pki.NewAuthority("karmada")
	require.NoError(t, err)
	serving, err := ca.Issue(pki.LeafSpec{CommonName: "apiserver", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}, time.Hour)
	require.NoError(t, err)
	admin, err := ca.Issue(pki.LeafSpec{CommonName: AdminUser, Organization: []string{AdminGroup}, Client: true}, time.Hour)
	require.NoError(t, err)
	servingPair, err := tls.X509KeyPair(serving.Cert, serving.Key)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	var clients []string
	apiServer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clients = append(clients, r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"karmada-system"}}`))
	}))
	apiServer.TLS = &tls.Config{Certificates: []tls.Certificate{servingPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	apiServer.StartTLS()
	defer apiServer.Close()
	var elsewhere atomic.Int32
	tenantServer := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer tenantServer.Close()

	marker := filepath.Join(t.TempDir(), "ran")
	k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.HostCluster = &operatorv1alpha1.HostCluster{APIEndpoint: apiServer.URL}
	})
	names := NamesFor(k.Name)
	host := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: names.Of(SuffixCert), Namespace: "tenant1"},
			Data: map[string][]byte{KeyCACert: ca.Pair().Cert, KeyAdminCert: admin.Cert, KeyAdminKey: admin.Key}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: names.Of(SuffixAdminConfig), Namespace: "tenant1"},
			Data: map[string][]byte{KeyKubeconfig: execKubeconfig(t, tenantServer.URL, marker)}})

	client, err := (&Activities{Host: host}).local().controlPlaneClient(context.Background(), k)
	require.NoError(t, err)
	_, err = client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(context.Background(), "karmada-system", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{AdminUser}, clients)
	assert.Zero(t, elsewhere.Load())
	_, err = os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "the admin kubeconfig's exec plugin ran")
}
