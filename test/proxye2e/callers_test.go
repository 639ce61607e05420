package proxye2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newCaller makes the ServiceAccount name of the control plane a caller of the proxy with the
// verbs proxyVerbs on proxying/proxy, bound in every member to the ClusterRoles memberRoles,
// and returns a kubeconfig of it through the proxy.
func newCaller(t *testing.T, name string, proxyVerbs []string, memberRoles ...string) string {
	t.Helper()
	ctx := context.Background()
	cp := testEnv.ControlPlane.Client()
	require.NoError(t, create(ctx, func() error {
		_, err := cp.CoreV1().ServiceAccounts(callerNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}))
	role := name + "-proxy"
	require.NoError(t, create(ctx, func() error {
		_, err := cp.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"search.karmada.io"}, Resources: []string{"proxying/proxy"}, Verbs: proxyVerbs}},
		}, metav1.CreateOptions{})
		return err
	}))
	require.NoError(t, bindCluster(ctx, cp, role, role, name))
	for _, m := range testEnv.Members {
		for _, r := range memberRoles {
			require.NoError(t, bindCluster(ctx, m.Client(), name+"-"+r, r, name))
		}
	}
	kubeconfig, err := writeKubeconfig(name, newToken(t, name))
	require.NoError(t, err)
	return kubeconfig
}

// newToken is a new token of the ServiceAccount name of the control plane: one the proxy has
// never seen.
func newToken(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	exp := int64(3600)
	tr, err := testEnv.ControlPlane.Client().CoreV1().ServiceAccounts(callerNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	require.NoError(t, err, "token of %s", name)
	return tr.Status.Token
}

// clientFrom trusts the proxy and connects to it from the loopback address source (e.g.
// 127.0.0.2), so that the proxy sees the requests come from there; up to conns connections.
func clientFrom(t *testing.T, source string, conns int) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(proxyCA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext:     dialer.DialContext, MaxIdleConnsPerHost: conns,
	}}
}

// bindMemberRole makes the ClusterRole name in every member, with rules.
func bindMemberRole(t *testing.T, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	for _, m := range testEnv.Members {
		require.NoError(t, create(ctx, func() error {
			_, err := m.Client().RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
			return err
		}), fmt.Sprintf("ClusterRole %s in %s", name, m.Name))
	}
}
