package proxye2e

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
	"k8s.io/client-go/kubernetes"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

const (
	callerNamespace = "proxy-e2e"
	bobNamespace    = "bob-ns"
)

// kubeconfigs of the callers: alice may use the proxy, view everything in the members and
// exec, attach and port-forward there; bob may use the proxy but view only bob-ns in
// member1; eve may not use the proxy.
var kubeconfigs, tokens = map[string]string{}, map[string]string{}

func user(name string) string { return "system:serviceaccount:" + callerNamespace + ":" + name }

func setUp(ctx context.Context) error {
	cp := testEnv.ControlPlane.Client()
	if err := create(ctx, func() error {
		_, err := cp.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: callerNamespace}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := create(ctx, func() error {
		_, err := cp.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "proxy-user"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"search.karmada.io"}, Resources: []string{"proxying/proxy"},
				Verbs: []string{"get", "create", "update", "patch", "delete"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	for _, name := range []string{"alice", "bob", "eve"} {
		if err := create(ctx, func() error {
			_, err := cp.CoreV1().ServiceAccounts(callerNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if name != "eve" {
			if err := bindCluster(ctx, cp, name+"-proxy", "proxy-user", name); err != nil {
				return err
			}
		}
		exp := int64(3600)
		tr, err := cp.CoreV1().ServiceAccounts(callerNamespace).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token of %s: %w", name, err)
		}
		tokens[name] = tr.Status.Token
		if kubeconfigs[name], err = writeKubeconfig(name, tr.Status.Token); err != nil {
			return err
		}
	}
	// alice may create Deployments in the control plane's default namespace.
	if err := create(ctx, func() error {
		_, err := cp.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "deployment-maker"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "create"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := create(ctx, func() error {
		_, err := cp.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-deployments"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "deployment-maker"},
			Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user("alice")}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}

	for i, m := range testEnv.Members {
		c := m.Client()
		if err := bindCluster(ctx, c, "alice-view", "view", "alice"); err != nil {
			return err
		}
		// alice may also exec, attach and port-forward in the members; bob may not.
		if err := create(ctx, func() error {
			_, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "pod-debugger"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/attach", "pods/portforward"},
					Verbs: []string{"get", "create"}}},
			}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if err := bindCluster(ctx, c, "alice-debug", "pod-debugger", "alice"); err != nil {
			return err
		}
		if err := create(ctx, func() error {
			_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bobNamespace}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
		if i == 0 {
			if err := create(ctx, func() error {
				_, err := c.RbacV1().RoleBindings(bobNamespace).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "bob-view"},
					RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
					Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user("bob")}},
				}, metav1.CreateOptions{})
				return err
			}); err != nil {
				return err
			}
		}
		for _, pod := range []struct{ namespace, name string }{
			{"default", fmt.Sprintf("web-%d", i+1)}, {"default", "same"}, {bobNamespace, fmt.Sprintf("bob-pod-%d", i+1)},
		} {
			if err := createPod(ctx, c, pod.namespace, pod.name); err != nil {
				return err
			}
		}
	}

	registry := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "search.karmada.io/v1alpha1", "kind": "ResourceRegistry",
		"metadata": map[string]any{"name": "pods-and-nodes"},
		"spec": map[string]any{
			"targetCluster":     map[string]any{"clusterNames": []any{"member1", "member2"}},
			"resourceSelectors": []any{map[string]any{"apiVersion": "v1", "kind": "Pod"}, map[string]any{"apiVersion": "v1", "kind": "Node"}},
		},
	}}
	if _, err := testEnv.ControlPlane.Dynamic().Resource(kube.ResourceRegistries).Create(ctx, registry, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("ResourceRegistry: %w", err)
	}
	// The proxy serves pods of both members once its caches have the registry.
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := kubectlAs("alice", "get", "pods", "-A", "-o", "name")
		if err == nil && strings.Contains(out, "web-1") && strings.Contains(out, "web-2") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the proxy did not list the pods of both members: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func create(_ context.Context, f func() error) error {
	if err := f(); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func bindCluster(ctx context.Context, c kubernetes.Interface, name, role, sa string) error {
	return create(ctx, func() error {
		_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user(sa)}},
		}, metav1.CreateOptions{})
		return err
	})
}

func createPod(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	return create(ctx, func() error {
		_, err := c.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "proxy-e2e", "pod": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:test"}}},
		}, metav1.CreateOptions{})
		return err
	})
}

// writeKubeconfig writes a kubeconfig whose server is the proxy, as a user would make one
// from their Karmada kubeconfig.
func writeKubeconfig(name, token string) (string, error) {
	path := filepath.Join(testEnv.Dir, "proxy-"+name+".kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: proxy
  context: {cluster: proxy, user: %s, namespace: default}
current-context: proxy
`, proxyURL, proxyCA, name, token, name)
	return path, os.WriteFile(path, []byte(data), 0o600)
}

// kubectlAs runs the real kubectl as caller through the proxy; the output holds stdout and stderr.
func kubectlAs(caller string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfigs[caller]}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// direct runs the real kubectl against cluster directly, as its admin.
func direct(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
