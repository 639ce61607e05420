package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// chart is the Helm chart, relative to the repository.
const chart = "deploy/charts/karmadaflow"

// TestDeployChartAppliesOnServer renders the Helm chart for each mode and target and applies
// the result to the host cluster and to the control plane as a server-side dry run: the API
// servers validate every manifest (schemas, RBAC, the CRDs) without keeping anything. It
// checks what differs between the modes: beside Karmada, no CRD Karmada owns is installed,
// the namespace is kept from propagation, and the capabilities are off; impersonation is
// granted only with the proxy on.
func TestDeployChartAppliesOnServer(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	kubectl, helm := tool(t, repo, "kubectl"), tool(t, repo, "helm")

	// A dry run creates nothing, so the namespaced objects need their namespaces to exist
	// already; creating them for real is harmless.
	ensureNamespaces(t, testEnv.Host, "karmadaflow-system", "karmada-system")
	ensureNamespaces(t, testEnv.ControlPlane, "karmadaflow-system", env.ClusterSecretNamespace)

	for _, tc := range []struct {
		name    string
		values  []string
		cluster *env.Cluster
		check   func(t *testing.T, objects map[string]*unstructured.Unstructured)
	}{
		{
			name: "standalone host", values: []string{"target=host", "mode=standalone"}, cluster: testEnv.Host,
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "CustomResourceDefinition/karmadas.operator.karmada.io",
					"Deployment/karmadaflow-worker", "Deployment/karmadaflow-starter", "Job/karmadaflow-bootstrap",
					"Service/karmadaflow-worker-metrics", "ClusterRole/karmadaflow-worker",
					"Role/karmadaflow-starter-leader-election", "Role/karmadaflow-worker-instances")
				assert.Subset(t, args(t, objects["Deployment/karmadaflow-worker"]),
					[]string{"--enable-work-execution=true", "--enable-cluster-health=true", "--enable-provisioning=true",
						"--provisioning-namespaces=karmada-system"})
				// What a control plane is made of is written in provisioning.namespaces only.
				instances := objects["Role/karmadaflow-worker-instances"]
				assert.Equal(t, "karmada-system", instances.GetNamespace())
				for _, resource := range []string{"secrets", "services", "deployments", "statefulsets", "poddisruptionbudgets", "pods", "namespaces"} {
					assert.False(t, grantsOn(t, objects["ClusterRole/karmadaflow-worker"], resource), "the worker's ClusterRole grants %s", resource)
				}
				for _, resource := range []string{"secrets", "services", "deployments", "statefulsets", "poddisruptionbudgets"} {
					for _, verb := range []string{"create", "update", "patch", "delete"} {
						assert.True(t, grantsVerbOn(t, instances, verb, resource), "the worker's Role does not grant %s %s", verb, resource)
					}
				}
				assert.False(t, grantsOn(t, instances, "namespaces"), "namespaces are cluster-scoped")
				assert.NotContains(t, objects, "Service/karmadaflow-proxy")
			},
		},
		{
			name: "standalone control plane", values: []string{"target=controlPlane", "mode=standalone"}, cluster: testEnv.ControlPlane,
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "CustomResourceDefinition/clusters.cluster.karmada.io",
					"CustomResourceDefinition/multiclusterservices.networking.karmada.io", "CustomResourceDefinition/works.work.karmada.io",
					"CustomResourceDefinition/resourceregistries.search.karmada.io",
					"ServiceAccount/karmadaflow-worker", "ClusterRoleBinding/karmadaflow-starter", "Role/karmadaflow-cluster-credentials")
				assert.NotContains(t, objects, "Deployment/karmadaflow-worker", "workloads run in the host cluster")
				assert.Equal(t, env.ClusterSecretNamespace, objects["Role/karmadaflow-cluster-credentials"].GetNamespace())
				assert.False(t, grants(t, objects["ClusterRole/karmadaflow-worker"], "impersonate"), "impersonation without the proxy")
				for _, role := range []string{"ClusterRole/karmadaflow-worker", "ClusterRole/karmadaflow-starter"} {
					assert.False(t, grantsOn(t, objects[role], "secrets"), "%s reads Secrets cluster-wide", role)
				}
				assert.True(t, grantsOn(t, objects["ClusterRole/karmadaflow-worker"], "clusters/status"))
			},
		},
		{
			name: "standalone control plane with the proxy", values: []string{"target=controlPlane", "mode=standalone", "proxy.enabled=true"},
			cluster: testEnv.ControlPlane,
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				assert.True(t, grants(t, objects["ClusterRole/karmadaflow-worker"], "impersonate"), "the proxy impersonates its callers")
			},
		},
		{
			name: "standalone host with the proxy", cluster: testEnv.Host,
			values: []string{"target=host", "mode=standalone", "proxy.enabled=true", "proxy.tls.existingSecret=proxy-serving"},
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "Service/karmadaflow-proxy")
				assert.Subset(t, args(t, objects["Deployment/karmadaflow-worker"]),
					[]string{"--enable-proxy", "--proxy-tls-cert-file=/etc/karmadaflow/proxy-tls/tls.crt",
						"--proxy-auth-source-qps=10", "--proxy-auth-source-burst=20"})
				assert.NotContains(t, args(t, objects["Deployment/karmadaflow-worker"]), "--proxy-self-signed-certificate")
			},
		},
		{
			name: "standalone control plane with the search API", cluster: testEnv.ControlPlane,
			values: []string{"target=controlPlane", "mode=standalone", "proxy.enabled=true", "proxy.searchAPI.enabled=true",
				"proxy.searchAPI.insecureSkipTLSVerify=true"},
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "APIService/v1alpha1.search.karmada.io", "Service/karmadaflow-search",
					"ClusterRoleBinding/karmadaflow-worker-auth-delegator", "RoleBinding/karmadaflow-worker-authentication-reader",
					"CustomResourceDefinition/clusters.cluster.karmada.io")
				assert.NotContains(t, objects, "CustomResourceDefinition/resourceregistries.search.karmada.io", "the worker serves them")
				externalName, _, _ := unstructured.NestedString(objects["Service/karmadaflow-search"].Object, "spec", "externalName")
				assert.Equal(t, "karmadaflow-proxy.karmadaflow-system.svc.cluster.local", externalName)
				insecure, _, _ := unstructured.NestedBool(objects["APIService/v1alpha1.search.karmada.io"].Object, "spec", "insecureSkipTLSVerify")
				assert.True(t, insecure, "asked for: proxy.searchAPI.insecureSkipTLSVerify")
				assert.False(t, grantsOn(t, objects["ClusterRole/karmadaflow-worker"], "resourceregistries"), "its own, not the control plane's")
			},
		},
		{
			name: "standalone host with the search API", cluster: testEnv.Host,
			values: []string{"target=host", "mode=standalone", "proxy.enabled=true", "proxy.tls.existingSecret=proxy-serving", "proxy.searchAPI.enabled=true",
				"proxy.searchAPI.etcd.servers=https://etcd:2379", "proxy.searchAPI.etcd.existingSecret=search-etcd"},
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				assert.Subset(t, args(t, objects["Deployment/karmadaflow-worker"]), []string{"--enable-proxy", "--serve-search-api",
					"--search-etcd-servers=https://etcd:2379", "--search-etcd-prefix=/registry", "--search-etcd-certfile=/etc/karmadaflow/search-etcd/tls.crt"})
			},
		},
		{
			name: "beside Karmada host", values: []string{"target=host", "mode=besideKarmada"}, cluster: testEnv.Host,
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "Deployment/karmadaflow-worker", "Deployment/karmadaflow-starter")
				assert.NotContains(t, objects, "CustomResourceDefinition/karmadas.operator.karmada.io", "karmada-operator's CRD")
				assert.NotContains(t, objects, "ClusterRole/karmadaflow-worker", "no provisioning, nothing to do in the host cluster")
				off := []string{"--enable-work-execution=false", "--enable-cluster-health=false", "--enable-provisioning=false"}
				assert.Subset(t, args(t, objects["Deployment/karmadaflow-worker"]), off)
				assert.Subset(t, args(t, objects["Deployment/karmadaflow-starter"]), off)
				assert.Equal(t, "true", objects["Namespace/karmadaflow-system"].GetLabels()["namespace.karmada.io/skip-auto-propagation"])
			},
		},
		{
			name: "beside Karmada host provisioning by label", cluster: testEnv.Host,
			values: []string{"target=host", "mode=besideKarmada", "provisioning.enabled=true", "provisioning.selector=karmadaflow.io/provision=true"},
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "ClusterRole/karmadaflow-worker", "Role/karmadaflow-worker-instances")
				assert.NotContains(t, objects, "CustomResourceDefinition/karmadas.operator.karmada.io", "karmada-operator's CRD")
				assert.Subset(t, args(t, objects["Deployment/karmadaflow-starter"]),
					[]string{"--enable-provisioning=true", "--provisioning-selector=karmadaflow.io/provision=true"})
				assert.Contains(t, args(t, objects["Deployment/karmadaflow-worker"]), "--enable-provisioning=true")
			},
		},
		{
			name: "beside Karmada control plane", values: []string{"target=controlPlane", "mode=besideKarmada"}, cluster: testEnv.ControlPlane,
			check: func(t *testing.T, objects map[string]*unstructured.Unstructured) {
				requireObjects(t, objects, "ServiceAccount/karmadaflow-worker", "ClusterRole/karmadaflow-worker", "Role/karmadaflow-cluster-credentials")
				for key := range objects {
					assert.False(t, strings.HasPrefix(key, "CustomResourceDefinition/"), "%s installed beside Karmada", key)
				}
				assert.Equal(t, "true", objects["Namespace/karmadaflow-system"].GetLabels()["namespace.karmada.io/skip-auto-propagation"])
				assert.False(t, grantsOn(t, objects["ClusterRole/karmadaflow-worker"], "clusters/status"), "cluster health is Karmada's")
				assert.False(t, grants(t, objects["ClusterRole/karmadaflow-worker"], "impersonate"))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rendered := render(ctx, t, helm, repo, tc.values...)
			objects := decode(t, rendered)
			tc.check(t, objects)

			// Server-side apply: the Karmada CRD is too large for client-side apply; the CRDs
			// the environment installed have another field manager.
			cmd := exec.CommandContext(ctx, kubectl, "apply", "--server-side", "--force-conflicts", "--dry-run=server",
				"--kubeconfig", tc.cluster.Kubeconfig, "-f", "-")
			cmd.Stdin = bytes.NewReader(rendered)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "kubectl apply:\n%s", out)
			for key, object := range objects {
				kind, _, _ := strings.Cut(key, "/")
				applied := strings.ToLower(kind) + "." // e.g. deployment.apps/karmadaflow-worker
				if object.GroupVersionKind().Group == "" {
					applied = strings.ToLower(kind)
				} else {
					applied += object.GroupVersionKind().Group
				}
				assert.Contains(t, string(out), applied+"/"+object.GetName()+" serverside-applied (server dry run)")
			}
		})
	}
}

// TestDeployChartLints runs `helm lint` on the chart for each mode and target, and checks that
// it refuses values that cannot work.
func TestDeployChartLints(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	helm := tool(t, repo, "helm")
	for _, values := range [][]string{
		{"target=host", "mode=standalone"}, {"target=controlPlane", "mode=standalone"},
		{"target=host", "mode=besideKarmada"}, {"target=controlPlane", "mode=besideKarmada", "proxy.enabled=true"},
	} {
		lint := []string{"lint", "--strict", filepath.Join(repo, chart)}
		for _, v := range values {
			lint = append(lint, "--set", v)
		}
		out, err := exec.Command(helm, lint...).CombinedOutput()
		require.NoError(t, err, "helm %s:\n%s", strings.Join(lint, " "), out)
	}
	for values, want := range map[string]string{
		"mode=beside":    "mode must be standalone or besideKarmada",
		"target=members": "target must be host or controlPlane",
		"mode=besideKarmada,provisioning.enabled=true":                               "provisioning.selector is required",
		"temporal.tls.existingSecret=t,temporal.tls.keyKey=":                         "temporal.tls.keyKey",
		"proxy.searchAPI.enabled=true":                                               "proxy.searchAPI.enabled needs proxy.enabled",
		"proxy.enabled=true,proxy.tls.existingSecret=s,proxy.searchAPI.enabled=true": "proxy.searchAPI.etcd.servers is required",
		"proxy.enabled=true":                                                         "proxy.tls.existingSecret is required with proxy.enabled: a kubernetes.io/tls Secret with the proxy's serving certificate",
		"target=controlPlane,proxy.enabled=true,proxy.searchAPI.enabled=true":        "proxy.searchAPI.caBundle is required",
	} {
		out, err := exec.Command(helm, "template", "karmadaflow", filepath.Join(repo, chart), "--set", values).CombinedOutput()
		require.Error(t, err, "helm template --set %s rendered:\n%s", values, out)
		assert.Contains(t, string(out), want)
	}
}

// TestDeployChartCRDsMatchGenerated checks that the chart carries the CRDs `make generate`
// wrote to deploy/crds, byte for byte.
func TestDeployChartCRDsMatchGenerated(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	generated, err := filepath.Glob(filepath.Join(repo, "deploy", "crds", "*.yaml"))
	require.NoError(t, err)
	copied, err := filepath.Glob(filepath.Join(repo, chart, "files", "crds", "*.yaml"))
	require.NoError(t, err)
	require.Equal(t, names(generated), names(copied), "run `make generate`")
	for _, path := range generated {
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(repo, chart, "files", "crds", filepath.Base(path)))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s differs from deploy/crds: run `make generate`", filepath.Base(path))
	}
}

// render is the chart rendered by `helm template` with values (name=value each).
func render(ctx context.Context, t *testing.T, helm, repo string, values ...string) []byte {
	args := []string{"template", "karmadaflow", filepath.Join(repo, chart)}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	rendered, err := exec.CommandContext(ctx, helm, args...).Output()
	require.NoError(t, err, "helm %s: %s", strings.Join(args, " "), stderr(err))
	return rendered
}

func names(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

// tool is the path of a pinned binary of bin/, or of one on PATH.
func tool(t *testing.T, repo, name string) string {
	path := filepath.Join(repo, "bin", name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	path, err := exec.LookPath(name)
	require.NoError(t, err, "%s is neither in bin/ nor on PATH (hack/tools/ensure.sh %s)", name, name)
	return path
}

func ensureNamespaces(t *testing.T, cluster *env.Cluster, names ...string) {
	for _, name := range names {
		_, err := cluster.Client().CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
}

func stderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// decode returns the objects of a multi-document YAML stream by Kind/name.
func decode(t *testing.T, manifests []byte) map[string]*unstructured.Unstructured {
	objects := map[string]*unstructured.Unstructured{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var object map[string]any
		err := decoder.Decode(&object)
		if errors.Is(err, io.EOF) {
			return objects
		}
		require.NoError(t, err)
		if object == nil {
			continue // an empty document
		}
		u := &unstructured.Unstructured{Object: object}
		key := u.GetKind() + "/" + u.GetName()
		require.NotContains(t, objects, key, "rendered twice")
		objects[key] = u
	}
}

func requireObjects(t *testing.T, objects map[string]*unstructured.Unstructured, keys ...string) {
	for _, key := range keys {
		require.Contains(t, objects, key)
	}
}

// args are the arguments of a Deployment's first container.
func args(t *testing.T, deployment *unstructured.Unstructured) []string {
	require.NotNil(t, deployment)
	containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.NotEmpty(t, containers)
	var out []string
	for _, arg := range containers[0].(map[string]any)["args"].([]any) {
		out = append(out, arg.(string))
	}
	return out
}

// rules are the rules of a Role or ClusterRole.
func rules(t *testing.T, role *unstructured.Unstructured) []map[string]any {
	require.NotNil(t, role)
	list, _, err := unstructured.NestedSlice(role.Object, "rules")
	require.NoError(t, err)
	var out []map[string]any
	for _, r := range list {
		out = append(out, r.(map[string]any))
	}
	return out
}

// grants tells whether a role grants verb on anything.
func grants(t *testing.T, role *unstructured.Unstructured, verb string) bool {
	return slices.ContainsFunc(rules(t, role), func(r map[string]any) bool { return slices.Contains(r["verbs"].([]any), any(verb)) })
}

// grantsVerbOn tells whether a role grants verb on resource.
func grantsVerbOn(t *testing.T, role *unstructured.Unstructured, verb, resource string) bool {
	return slices.ContainsFunc(rules(t, role), func(r map[string]any) bool {
		return slices.Contains(r["resources"].([]any), any(resource)) && slices.Contains(r["verbs"].([]any), any(verb))
	})
}

// grantsOn tells whether a role grants anything on resource.
func grantsOn(t *testing.T, role *unstructured.Unstructured, resource string) bool {
	return slices.ContainsFunc(rules(t, role), func(r map[string]any) bool {
		return slices.Contains(r["resources"].([]any), any(resource))
	})
}
