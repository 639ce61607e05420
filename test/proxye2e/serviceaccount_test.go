package proxye2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/proxy"
)

// kubeconfigFor is caller's kubeconfig with base as its server: a proxy started by the test.
func kubeconfigFor(t *testing.T, caller, instance, base string) string {
	t.Helper()
	config, err := os.ReadFile(kubeconfigs[caller])
	require.NoError(t, err)
	path := filepath.Join(testEnv.Dir, "proxy-"+caller+"-"+instance+".kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(config), proxyURL, base, 1)), 0o600))
	return path
}

// kubectlUntil runs kubectl with kubeconfig until its output contains want (the proxy was just
// started, and serves members once its caches have synced), and returns it.
func kubectlUntil(t *testing.T, want, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	var out string
	var err error
	require.Eventually(t, func() bool {
		out, err = direct(kubeconfig, args...)
		return strings.Contains(out, want)
	}, time.Minute, 500*time.Millisecond, "kubectl %s never answered %q: %s", strings.Join(args, " "), want, out)
	return out, err
}

// --proxy-service-account-identity=deny: a ServiceAccount of the control plane is refused what
// reaches members, with 403 and a message that says why; the control plane it reaches as itself.
func TestServiceAccountCallersDenied(t *testing.T) {
	base := startProxyWorker(t, "worker-sa-deny", "--proxy-service-account-identity=deny")
	kubeconfig := kubeconfigFor(t, "alice", "sa-deny", base)
	out, err := kubectlUntil(t, "Forbidden", kubeconfig, "get", "pods", "-A")
	require.Error(t, err, out)
	assert.Contains(t, out, user("alice")+" is a ServiceAccount of the control plane, and this proxy takes no ServiceAccount into member clusters (--proxy-service-account-identity=deny)")
	out, err = direct(kubeconfig, "get", "deployments", "-n", "default")
	require.NoError(t, err, out)
}

// --proxy-service-account-identity=map: in members, a ServiceAccount of the control plane is
// the user karmadaflow:serviceaccount:<namespace>:<name>, without ServiceAccount groups: what
// the members grant their own ServiceAccount of that name (alice-view) or ServiceAccounts of
// its namespace is not its, what they grant the mapped user is. The control plane still sees
// the ServiceAccount.
func TestServiceAccountCallersMapped(t *testing.T) {
	ctx := context.Background()
	base := startProxyWorker(t, "worker-sa-map", "--proxy-service-account-identity=map")
	kubeconfig := kubeconfigFor(t, "alice", "sa-map", base)
	mapped := proxy.MappedServiceAccountPrefix + callerNamespace + ":alice"

	grant := func(name string, subject rbacv1.Subject) {
		t.Helper()
		for _, m := range testEnv.Members {
			bindings := m.Client().RbacV1().ClusterRoleBindings()
			_, err := bindings.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{subject},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = bindings.Delete(ctx, name, metav1.DeleteOptions{}) })
		}
	}
	grant("sa-map-group", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + callerNamespace})
	out, err := kubectlUntil(t, `User "`+mapped+`" cannot list resource "pods"`, kubeconfig, "get", "pods", "-n", "default", "-o", "name")
	require.Error(t, err, out)

	grant("sa-map-user", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: mapped})
	require.Eventually(t, func() bool {
		out, err = direct(kubeconfig, "get", "pods", "-n", "default", "-o", "name")
		return err == nil
	}, 30*time.Second, 500*time.Millisecond, "the mapped user granted view: %s", out)
	assert.Contains(t, out, "pod/web-1")
	assert.Contains(t, out, "pod/web-2")

	// The control plane: alice's own right to list Deployments in default.
	out, err = direct(kubeconfig, "get", "deployments", "-n", "default")
	require.NoError(t, err, out)
}
