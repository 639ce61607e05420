package searche2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
)

const callerNamespace = "search-e2e"

// The callers, ServiceAccounts of the control plane: alice may use the proxy and view and
// exec in member1; bob may use the proxy but do nothing in member1; eve may not use the
// proxy; reader may only get through the proxy (proxying/proxy), and view and exec in member1. quickStart holds each one's kubeconfig made as the seed's quick start says: the
// control plane's kubeconfig with the proxy path appended to its server URL. directURL holds
// the same with the worker's own URL.
var quickStart, directURL = map[string]string{}, map[string]string{}

func user(name string) string { return "system:serviceaccount:" + callerNamespace + ":" + name }

func setUp(ctx context.Context) error {
	cp := testEnv.ControlPlane.Client()
	if err := create(func() error {
		_, err := cp.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: callerNamespace}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := cp.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "proxy-user"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"search.karmada.io"}, Resources: []string{"proxying/proxy"},
				Verbs: []string{"get", "create", "update", "patch", "delete"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := cp.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "proxy-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"search.karmada.io"}, Resources: []string{"proxying/proxy"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := bind(ctx, testEnv.ControlPlane, "reader-proxy", "proxy-reader", "reader"); err != nil {
		return err
	}
	for _, name := range []string{"alice", "bob", "eve", "reader"} {
		if err := create(func() error {
			_, err := cp.CoreV1().ServiceAccounts(callerNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if name == "alice" || name == "bob" {
			if err := bind(ctx, testEnv.ControlPlane, name+"-proxy", "proxy-user", name); err != nil {
				return err
			}
		}
		tr, err := cp.CoreV1().ServiceAccounts(callerNamespace).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token of %s: %w", name, err)
		}
		karmada, err := writeKubeconfig(name, testEnv.ControlPlane.Server, testEnv.ControlPlane.RESTConfig.CAData, tr.Status.Token)
		if err != nil {
			return err
		}
		if quickStart[name], err = appendProxyPath(karmada); err != nil {
			return err
		}
		ca, err := os.ReadFile(proxyCA)
		if err != nil {
			return err
		}
		if directURL[name], err = writeKubeconfig(name+"-direct-proxy", proxy, ca, tr.Status.Token); err != nil {
			return err
		}
	}

	member1 := testEnv.Member("member1")
	if err := bind(ctx, member1, "alice-view", "view", "alice"); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := member1.Client().RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-exec"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get", "create"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := bind(ctx, member1, "alice-exec", "pod-exec", "alice"); err != nil {
		return err
	}
	if err := bind(ctx, member1, "reader-view", "view", "reader"); err != nil {
		return err
	}
	if err := bind(ctx, member1, "reader-exec", "pod-exec", "reader"); err != nil {
		return err
	}
	if err := create(func() error {
		_, err := member1.Client().CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:test"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}

	// The ResourceRegistry, created in the control plane as a user would: the aggregator
	// passes it to the worker, which keeps it in etcd.
	registry := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "search.karmada.io/v1alpha1", "kind": "ResourceRegistry",
		"metadata": map[string]any{"name": "pods"},
		"spec": map[string]any{
			"targetCluster":     map[string]any{"clusterNames": []any{"member1"}},
			"resourceSelectors": []any{map[string]any{"apiVersion": "v1", "kind": "Pod"}},
		},
	}}
	if _, err := testEnv.ControlPlane.Dynamic().Resource(kube.ResourceRegistries).Create(ctx, registry, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("ResourceRegistry: %w", err)
	}
	var out string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var err error
		out, err = kubectlWith(quickStart["alice"], "get", "pods", "-o", "name")
		return err == nil && strings.Contains(out, "pod/web-1"), nil
	})
	if err != nil {
		return fmt.Errorf("alice's quick-start kubeconfig did not list member1's pod: %w\n%s", err, out)
	}
	return nil
}

func create(f func() error) error {
	if err := f(); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// bind grants the caller a ClusterRole in the cluster.
func bind(ctx context.Context, c *env.Cluster, name, role, caller string) error {
	return create(func() error {
		_, err := c.Client().RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user(caller)}},
		}, metav1.CreateOptions{})
		return err
	})
}

// writeKubeconfig writes a kubeconfig named name for server, verified by ca, with the token.
func writeKubeconfig(name, server string, ca []byte, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["karmada"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["karmada"] = &clientcmdapi.Context{Cluster: "karmada", AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = "karmada"
	path := filepath.Join(testEnv.Dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// appendProxyPath makes the seed's quick start of a Karmada kubeconfig: a copy whose server
// URL has the proxy path appended.
func appendProxyPath(kubeconfig string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		c.Server += env.ProxyPath
	}
	path := strings.TrimSuffix(kubeconfig, ".kubeconfig") + "-quick-start.kubeconfig"
	return path, clientcmd.WriteToFile(*cfg, path)
}

// kubectlWith runs the real kubectl with kubeconfig; the output holds stdout and stderr.
func kubectlWith(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
