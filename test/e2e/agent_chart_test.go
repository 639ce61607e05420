package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// The member cluster the agent tests install a Pull cluster's agent for, the Secret its
// Deployment reads the control plane's kubeconfig from by default, and the agent's
// ServiceAccount in the control plane.
const (
	agentCluster             = "member2"
	agentKubeconfigSecret    = "karmadaflow-agent-karmada-kubeconfig"
	agentControlPlaneAccount = "karmadaflow-agent-" + agentCluster
	// agentWorkQuota is the ResourceQuota of a Pull cluster's execution namespace.
	agentWorkQuota = service.AgentWorkQuota
)

// TestAgentChartRendersOnlyTheAgent renders the chart for a member cluster in Pull mode
// (target member) and checks that it holds the agent and nothing else: its namespace,
// ServiceAccount, member RBAC and Deployment, which runs the worker image with --cluster and the
// control plane's kubeconfig mounted from a Secret, and no Temporal setting; no starter, proxy,
// bootstrap Job or CRD. The result passes `helm lint --strict` and a server-side dry run on the
// member. It also renders the control-plane part of the agent's identity (agent.pullClusters)
// and the quota of its execution namespace.
func TestAgentChartRendersOnlyTheAgent(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	kubectl, helm := tool(t, repo, "kubectl"), tool(t, repo, "helm")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	values := []string{"target=member", "agent.cluster=" + agentCluster}
	lint := []string{"lint", "--strict", filepath.Join(repo, chart)}
	for _, v := range values {
		lint = append(lint, "--set", v)
	}
	out, err := exec.CommandContext(ctx, helm, lint...).CombinedOutput()
	require.NoError(t, err, "helm %s:\n%s", strings.Join(lint, " "), out)

	rendered := render(ctx, t, helm, repo, values...)
	objects := decode(t, rendered)
	var keys []string
	for key := range objects {
		keys = append(keys, key)
	}
	assert.ElementsMatch(t, []string{"Namespace/karmadaflow-system", "ServiceAccount/karmadaflow-agent",
		"ClusterRole/karmadaflow-agent", "ClusterRoleBinding/karmadaflow-agent", "Deployment/karmadaflow-agent"}, keys,
		"a member gets the agent only")

	deployment := objects["Deployment/karmadaflow-agent"]
	agentArgs := args(t, deployment)
	assert.Subset(t, agentArgs, []string{"--cluster=" + agentCluster, "--cluster-probe-interval=10s"})
	for _, arg := range agentArgs {
		assert.NotContains(t, arg, "proxy", "the agent serves no proxy")
		assert.NotContains(t, arg, "--host-kubeconfig", "the member is reached in-cluster")
		assert.NotContains(t, arg, "--enable-", "the agent runs no capability of the worker")
	}
	assertNoTemporal(t, deployment)
	account, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "serviceAccountName")
	assert.Equal(t, "karmadaflow-agent", account)
	assertKubeconfigFromSecret(t, deployment, agentArgs, agentKubeconfigSecret)

	member := testEnv.Member(agentCluster)
	require.NotNil(t, member)
	// A dry run creates nothing, so the Deployment's namespace must exist already.
	ensureNamespaces(t, member, "karmadaflow-system")
	cmd := exec.CommandContext(ctx, kubectl, "apply", "--server-side", "--dry-run=server",
		"--kubeconfig", member.Kubeconfig, "-f", "-")
	cmd.Stdin = bytes.NewReader(rendered)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "kubectl apply:\n%s", out)
	assert.Contains(t, string(out), "deployment.apps/karmadaflow-agent serverside-applied (server dry run)")

	// The control plane's part: the agent's identity there, and no workload.
	objects = decode(t, render(ctx, t, helm, repo, "target=controlPlane", "agent.pullClusters={"+agentCluster+"}"))
	requireObjects(t, objects, "ServiceAccount/"+agentControlPlaneAccount, "ClusterRole/"+agentControlPlaneAccount,
		"ClusterRoleBinding/"+agentControlPlaneAccount, "Role/"+agentControlPlaneAccount, "RoleBinding/"+agentControlPlaneAccount,
		"ResourceQuota/"+agentWorkQuota)
	assert.Equal(t, "karmada-es-"+agentCluster, objects["Role/"+agentControlPlaneAccount].GetNamespace())
	quota := objects["ResourceQuota/"+agentWorkQuota]
	assert.Equal(t, "karmada-es-"+agentCluster, quota.GetNamespace())
	hard, _, _ := unstructured.NestedStringMap(quota.Object, "spec", "hard")
	assert.Equal(t, map[string]string{"count/works.work.karmada.io": "20000"}, hard)
	assert.NotContains(t, objects, "Deployment/karmadaflow-agent", "the agent runs in its member")
}

// assertNoTemporal checks that a Deployment names no Temporal endpoint, task queue or
// credential: none of its containers' args, env or mounts, nor its volumes.
func assertNoTemporal(t *testing.T, deployment *unstructured.Unstructured) {
	t.Helper()
	require.NotNil(t, deployment)
	spec, _, _ := unstructured.NestedMap(deployment.Object, "spec", "template", "spec")
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	require.NotEmpty(t, containers)
	var named []string
	for _, c := range containers {
		container := c.(map[string]any)
		args, _, _ := unstructured.NestedStringSlice(container, "args")
		named = append(named, args...)
		envs, _, _ := unstructured.NestedSlice(container, "env")
		for _, e := range envs {
			named = append(named, fmt.Sprint(e))
		}
		mounts, _, _ := unstructured.NestedSlice(container, "volumeMounts")
		for _, m := range mounts {
			named = append(named, fmt.Sprint(m))
		}
	}
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	for _, v := range volumes {
		named = append(named, fmt.Sprint(v))
	}
	for _, s := range named {
		lower := strings.ToLower(s)
		assert.NotContains(t, lower, "temporal", "the agent is given a Temporal setting or credential: %s", s)
		assert.NotContains(t, lower, "--task-queue", "the agent is given a task queue: %s", s)
		assert.NotContains(t, lower, "7233", "the agent is given a Temporal frontend's port: %s", s)
	}
}

// assertKubeconfigFromSecret checks that the --karmada-kubeconfig file of a Deployment is the
// key kubeconfig of the Secret secret, mounted read-only.
func assertKubeconfigFromSecret(t *testing.T, deployment *unstructured.Unstructured, containerArgs []string, secret string) {
	t.Helper()
	i := slices.IndexFunc(containerArgs, func(a string) bool { return strings.HasPrefix(a, "--karmada-kubeconfig=") })
	require.GreaterOrEqual(t, i, 0, "no --karmada-kubeconfig in %q", containerArgs)
	file := strings.TrimPrefix(containerArgs[i], "--karmada-kubeconfig=")

	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	require.NotEmpty(t, containers)
	mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	var volume string
	for _, m := range mounts {
		mount := m.(map[string]any)
		if mount["mountPath"] == path.Dir(file) {
			volume, _ = mount["name"].(string)
			assert.Equal(t, true, mount["readOnly"], "the kubeconfig is mounted read-only")
		}
	}
	require.NotEmpty(t, volume, "nothing is mounted at %s", path.Dir(file))

	volumes, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "volumes")
	for _, v := range volumes {
		if v.(map[string]any)["name"] != volume {
			continue
		}
		name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		assert.Equal(t, secret, name)
		items, _, _ := unstructured.NestedSlice(v.(map[string]any), "secret", "items")
		assert.Contains(t, items, map[string]any{"key": "kubeconfig", "path": path.Base(file)})
		return
	}
	t.Errorf("no volume %s", volume)
}

// TestAgentChartRefusesAMissingCluster: target member needs agent.cluster, every name of a
// Pull cluster must be a Cluster's name, and karmadaflow's agent is refused beside Karmada,
// where a Pull member runs karmada-agent.
func TestAgentChartRefusesAMissingCluster(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	helm := tool(t, repo, "helm")
	for _, tc := range []struct{ values, want string }{
		{"target=member", "agent.cluster is required with target member"},
		{"target=member,agent.cluster=", "agent.cluster is required with target member"},
		{"target=member,agent.cluster=Member_2", "agent.cluster must be a DNS-1123 label of at most 48 characters"},
		{"target=member,agent.cluster=" + strings.Repeat("m", 49), "agent.cluster must be a DNS-1123 label"},
		{"target=controlPlane,agent.pullClusters={member2,member.3}", "each of agent.pullClusters must be a DNS-1123 label"},
		{"target=member,agent.cluster=member2,mode=besideKarmada", "beside Karmada, run karmada-agent in the Pull member (with --feature-gates=MultiClusterService=true"},
		{"target=controlPlane,agent.pullClusters={member2},mode=besideKarmada", "agent.pullClusters is for standalone mode"},
	} {
		out, err := exec.Command(helm, "template", "karmadaflow", filepath.Join(repo, chart), "--set", tc.values).CombinedOutput()
		require.Error(t, err, "helm template --set %s rendered:\n%s", tc.values, out)
		assert.Contains(t, string(out), tc.want, "helm template --set %s", tc.values)
	}
}

// agentAccess is a request whose authorization a test asks an API server about: a resource
// (resource/subresource) or, with url set, a non-resource URL.
type agentAccess struct {
	verb, group, resource, namespace, name, url string
	allowed                                     bool
}

// TestAgentChartRBACKeepsTheAgentToItsCluster installs the agent's ServiceAccounts and RBAC
// for real: the control plane's part (agent.pullClusters) on the control plane, the member's
// (target member) on the member, and asks each API server's authorizer what the agent may do:
// in the control plane, the Works, events and Lease of its own execution namespace and its own
// Cluster (by name) only; in the member, anything. The agent is for standalone mode only.
func TestAgentChartRBACKeepsTheAgentToItsCluster(t *testing.T) {
	standaloneOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	member := testEnv.Member(agentCluster)
	require.NotNil(t, member)

	// The worker's and the starter's identities are rendered too, and put back as the service
	// installed them.
	controlPlaneValues := []string{"target=controlPlane", "agent.pullClusters={" + agentCluster + "}"}
	t.Cleanup(func() {
		deleteAgentIdentity(t, testEnv.ControlPlane, agentControlPlaneAccount, "karmada-es-"+agentCluster)
		assert.NoError(t, svc.InstallIdentities(context.Background()))
	})
	require.NoError(t, service.ApplyChartIdentities(ctx, testEnv.ControlPlane, controlPlaneValues))

	t.Cleanup(func() { deleteAgentIdentity(t, member, "karmadaflow-agent", "") })
	require.NoError(t, service.ApplyChartIdentities(ctx, member, []string{"target=member", "agent.cluster=" + agentCluster}))

	assertAgentAccess(ctx, t, testEnv.ControlPlane, agentControlPlaneAccount, []agentAccess{
		{verb: "create", group: "work.karmada.io", resource: "works", namespace: "karmada-es-member2", allowed: true},
		{verb: "delete", group: "work.karmada.io", resource: "works", namespace: "karmada-es-member2", name: "w", allowed: true},
		{verb: "update", group: "work.karmada.io", resource: "works/status", namespace: "karmada-es-member2", name: "w", allowed: true},
		{verb: "create", group: "work.karmada.io", resource: "works", namespace: "karmada-es-member1", allowed: false},
		{verb: "list", group: "work.karmada.io", resource: "works", allowed: false},
		{verb: "update", group: "cluster.karmada.io", resource: "clusters/status", name: "member2", allowed: true},
		{verb: "patch", group: "cluster.karmada.io", resource: "clusters/status", name: "member2", allowed: true},
		{verb: "update", group: "cluster.karmada.io", resource: "clusters/status", name: "member1", allowed: false},
		{verb: "update", group: "cluster.karmada.io", resource: "clusters", name: "member2", allowed: false},
		{verb: "get", group: "cluster.karmada.io", resource: "clusters", name: "member2", allowed: true},
		{verb: "watch", group: "cluster.karmada.io", resource: "clusters", name: "member2", allowed: true},
		{verb: "get", group: "cluster.karmada.io", resource: "clusters", name: "member1", allowed: false},
		{verb: "list", group: "cluster.karmada.io", resource: "clusters", allowed: false},
		{verb: "watch", group: "cluster.karmada.io", resource: "clusters", allowed: false},
		{verb: "watch", group: "networking.karmada.io", resource: "multiclusterservices", allowed: false},
		{verb: "get", group: "networking.karmada.io", resource: "multiclusterservices", namespace: "default", name: "m", allowed: false},
		{verb: "update", group: "networking.karmada.io", resource: "multiclusterservices", namespace: "default", name: "m", allowed: false},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "karmada-es-member2", allowed: true},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "karmada-es-member2", name: "karmadaflow-agent", allowed: true},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "karmada-es-member2", name: "other", allowed: false},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "karmada-es-member1", name: "karmadaflow-agent", allowed: false},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "karmada-es-member1", allowed: false},
		{verb: "create", resource: "events", namespace: "karmada-es-member2", allowed: true},
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: "karmada-es-member2", allowed: true},
		{verb: "create", resource: "events", namespace: "karmada-es-member1", allowed: false},
		{verb: "get", resource: "secrets", namespace: env.ClusterSecretNamespace, name: "member2", allowed: false},
	})
	assertAgentAccess(ctx, t, member, "karmadaflow-agent", []agentAccess{
		{verb: "create", group: "apps", resource: "deployments", namespace: "default", allowed: true},
		{verb: "create", group: "apps", resource: "deployments", namespace: "kube-system", allowed: true},
		{verb: "delete", group: "apps", resource: "deployments", allowed: true},
		{verb: "watch", group: "discovery.k8s.io", resource: "endpointslices", allowed: true},
		{verb: "get", url: "/readyz", allowed: true},
	})
}

// assertAgentAccess asks the cluster's authorizer whether the ServiceAccount
// karmadaflow-system/account may make each request.
func assertAgentAccess(ctx context.Context, t *testing.T, cluster *env.Cluster, account string, requests []agentAccess) {
	t.Helper()
	for _, r := range requests {
		spec := authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:karmadaflow-system:" + account,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:karmadaflow-system", "system:authenticated"},
		}
		if r.url != "" {
			spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: r.verb, Path: r.url}
		} else {
			resource, subresource, _ := strings.Cut(r.resource, "/")
			spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Verb: r.verb, Group: r.group, Resource: resource,
				Subresource: subresource, Namespace: r.namespace, Name: r.name}
		}
		review, err := cluster.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx,
			&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, r.allowed, review.Status.Allowed, "%s in %s: %s %s%s %q in %q (%s): %s", account, cluster.Name, r.verb,
			r.resource, r.url, r.name, r.namespace, review.Status.Reason, review.Status.EvaluationError)
	}
}

// deleteAgentIdentity removes what the chart made of an agent's identity in a cluster: its
// ServiceAccount in karmadaflow-system, its ClusterRole and ClusterRoleBinding and, when
// roleNamespace is set, its Role and RoleBinding there (all named name).
func deleteAgentIdentity(t *testing.T, cluster *env.Cluster, name, roleNamespace string) {
	ctx := context.Background()
	rbac := cluster.Client().RbacV1()
	deletions := []error{
		cluster.Client().CoreV1().ServiceAccounts("karmadaflow-system").Delete(ctx, name, metav1.DeleteOptions{}),
		rbac.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}),
		rbac.ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}),
	}
	if roleNamespace != "" {
		deletions = append(deletions, rbac.RoleBindings(roleNamespace).Delete(ctx, name, metav1.DeleteOptions{}),
			rbac.Roles(roleNamespace).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	for _, err := range deletions {
		if !apierrors.IsNotFound(err) {
			assert.NoError(t, err, "removing %s from %s", name, cluster.Name)
		}
	}
}
