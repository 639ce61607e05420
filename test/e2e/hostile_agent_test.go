package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// hostileQuotaRoom is how many Works more than its namespace holds the hostile agent test's
// quota leaves.
const hostileQuotaRoom = 2

// TestHostileAgentReachesOnlyItsOwnCluster plays a member admin who took the credentials the
// chart gives the agent of the Pull cluster member2, and tries to reach beyond that cluster.
// The member release holds no Temporal address, certificate, API key or task queue: polling the
// control plane's task queues (or another member's), starting, signalling, terminating and
// reading workflows need a Temporal connection it has nothing for. With a token of the
// agent's ServiceAccount in the control plane (the chart's controlPlane RBAC, applied for
// real), every step outside its own cluster is refused with 403 and leaves what it aimed at as
// it was: Works of another member's execution namespace, another Cluster, Clusters listed
// without its own name, another Cluster's status, MultiClusterServices, Secrets, another
// namespace's lease. Inside its namespace, Works beyond the chart's quota are refused with the
// quota's message.
func TestHostileAgentReachesOnlyItsOwnCluster(t *testing.T) {
	standaloneOnly(t) // beside Karmada a Pull member runs karmada-agent, not karmadaflow's agent
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	helm := tool(t, repo, "helm")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const own, other = agentCluster, "member1"
	ownNamespace, otherNamespace := "karmada-es-"+own, "karmada-es-"+other

	// What the member release gives the agent: nothing that names Temporal.
	member := decode(t, render(ctx, t, helm, repo, "target=member", "agent.cluster="+own))
	assertNoTemporal(t, member["Deployment/karmadaflow-agent"])

	// What the control plane gives it: its identity, RBAC and quota, with room for a few
	// Works more than its namespace holds.
	admin := testEnv.ControlPlane
	works, err := admin.Dynamic().Resource(kube.Works).Namespace(ownNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	limit := len(works.Items) + hostileQuotaRoom
	values := []string{"target=controlPlane", "agent.pullClusters={" + own + "}", "agent.workQuota=" + strconv.Itoa(limit)}
	t.Cleanup(func() {
		deleteAgentIdentity(t, admin, agentControlPlaneAccount, ownNamespace)
		err := admin.Client().CoreV1().ResourceQuotas(ownNamespace).Delete(context.Background(), agentWorkQuota, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			assert.NoError(t, err)
		}
		assert.NoError(t, svc.InstallIdentities(context.Background()))
	})
	require.NoError(t, service.ApplyChartObjects(ctx, admin, values, service.AgentControlPlaneKinds...))

	agent := agentClients(ctx, t, admin, agentControlPlaneAccount)
	victim := createWork(ctx, t, admin.Dynamic(), otherNamespace, "hostile-agent-victim")
	t.Cleanup(func() {
		_ = admin.Dynamic().Resource(kube.Works).Namespace(otherNamespace).Delete(context.Background(), victim.GetName(), metav1.DeleteOptions{})
	})

	refused := func(what string, err error) {
		t.Helper()
		require.Error(t, err, "%s was allowed", what)
		assert.True(t, apierrors.IsForbidden(err), "%s: want 403, got %v", what, err)
		assert.Contains(t, err.Error(), agentControlPlaneAccount, "%s: the refusal names the agent", what)
	}
	otherWorks := agent.dynamic.Resource(kube.Works).Namespace(otherNamespace)
	_, err = otherWorks.Create(ctx, workObject(otherNamespace, "hostile-agent-planted"), metav1.CreateOptions{})
	refused("creating a Work in "+otherNamespace, err)
	_, err = otherWorks.Patch(ctx, victim.GetName(), types.MergePatchType, []byte(`{"spec":{"suspendDispatching":false}}`), metav1.PatchOptions{})
	refused("patching a Work of "+otherNamespace, err)
	changed := victim.DeepCopy()
	changed.SetLabels(map[string]string{"hostile": "true"})
	_, err = otherWorks.Update(ctx, changed, metav1.UpdateOptions{})
	refused("updating a Work of "+otherNamespace, err)
	err = otherWorks.Delete(ctx, victim.GetName(), metav1.DeleteOptions{})
	refused("deleting a Work of "+otherNamespace, err)
	_, err = agent.dynamic.Resource(kube.Works).List(ctx, metav1.ListOptions{})
	refused("listing Works of every namespace", err)
	after, err := admin.Dynamic().Resource(kube.Works).Namespace(otherNamespace).Get(ctx, victim.GetName(), metav1.GetOptions{})
	require.NoError(t, err, "the other member's Work is gone")
	assert.Equal(t, victim.GetResourceVersion(), after.GetResourceVersion(), "the other member's Work changed")

	clusters := agent.dynamic.Resource(kube.Clusters)
	_, err = clusters.Get(ctx, other, metav1.GetOptions{})
	refused("reading Cluster "+other, err)
	_, err = clusters.List(ctx, metav1.ListOptions{})
	refused("listing every Cluster", err)
	_, err = clusters.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + other})
	refused("listing Cluster "+other, err)
	otherCluster, err := admin.Dynamic().Resource(kube.Clusters).Get(ctx, other, metav1.GetOptions{})
	require.NoError(t, err)
	_, err = clusters.UpdateStatus(ctx, otherCluster, metav1.UpdateOptions{})
	refused("updating the status of Cluster "+other, err)
	_, err = clusters.Patch(ctx, other, types.MergePatchType, []byte(`{"status":{"conditions":[]}}`), metav1.PatchOptions{}, "status")
	refused("patching the status of Cluster "+other, err)
	stillOther, err := admin.Dynamic().Resource(kube.Clusters).Get(ctx, other, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, otherCluster.GetResourceVersion(), stillOther.GetResourceVersion(), "Cluster %s changed", other)

	_, err = agent.dynamic.Resource(kube.MultiClusterServices).List(ctx, metav1.ListOptions{})
	refused("listing MultiClusterServices", err)
	_, err = agent.kube.CoreV1().Secrets(env.ClusterSecretNamespace).Get(ctx, own, metav1.GetOptions{})
	refused("reading its own cluster's credentials Secret", err)
	_, err = agent.kube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	refused("listing Secrets", err)
	_, err = agent.kube.CoordinationV1().Leases(otherNamespace).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "karmadaflow-agent"}}, metav1.CreateOptions{})
	refused("creating the lease of "+other+"'s agent", err)

	// What it may do: read its own Cluster, by name and by a list of its name alone.
	_, err = clusters.Get(ctx, own, metav1.GetOptions{})
	require.NoError(t, err, "the agent reads its own Cluster")
	list, err := clusters.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + own})
	require.NoError(t, err, "the agent lists its own Cluster by name")
	require.Len(t, list.Items, 1)

	// Works in its own namespace up to the quota, and no more.
	require.NoError(t, service.WaitForQuotaCounted(ctx, admin, ownNamespace, agentWorkQuota))
	ownWorks := agent.dynamic.Resource(kube.Works).Namespace(ownNamespace)
	for i := range hostileQuotaRoom {
		name := fmt.Sprintf("hostile-agent-%d", i)
		_, err := ownWorks.Create(ctx, workObject(ownNamespace, name), metav1.CreateOptions{})
		require.NoError(t, err, "Work %d of %d within the quota", i+1, hostileQuotaRoom)
		t.Cleanup(func() {
			_ = admin.Dynamic().Resource(kube.Works).Namespace(ownNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	_, err = ownWorks.Create(ctx, workObject(ownNamespace, "hostile-agent-beyond"), metav1.CreateOptions{})
	t.Cleanup(func() {
		_ = admin.Dynamic().Resource(kube.Works).Namespace(ownNamespace).Delete(context.Background(), "hostile-agent-beyond", metav1.DeleteOptions{})
	})
	require.Error(t, err, "a Work beyond the quota of %d was created", limit)
	assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
	assert.Contains(t, err.Error(), "exceeded quota: "+agentWorkQuota)
	assert.Contains(t, err.Error(), "count/works.work.karmada.io")
}

// agentClient is the control plane as the agent's ServiceAccount sees it.
type agentClient struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

// agentClients returns clients of the cluster with a token of the ServiceAccount
// karmadaflow-system/account, as the agent's kubeconfig holds one.
func agentClients(ctx context.Context, t *testing.T, cluster *env.Cluster, account string) agentClient {
	t.Helper()
	token, err := cluster.Client().CoreV1().ServiceAccounts("karmadaflow-system").CreateToken(ctx, account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := &rest.Config{Host: cluster.Server, BearerToken: token.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cluster.RESTConfig.CAData}}
	k, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return agentClient{kube: k, dynamic: d}
}

// workObject is a suspended Work holding a ConfigMap: nothing reaches a member from it.
func workObject(namespace, name string) *unstructured.Unstructured {
	manifest := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"}}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
		"spec": map[string]any{"suspendDispatching": true, "workload": map[string]any{"manifests": []any{manifest}}},
	}}
	w.SetNamespace(namespace)
	w.SetName(name)
	return w
}

// createWork creates workObject as the client's identity.
func createWork(ctx context.Context, t *testing.T, client dynamic.Interface, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	w, err := client.Resource(kube.Works).Namespace(namespace).Create(ctx, workObject(namespace, name), metav1.CreateOptions{})
	require.NoError(t, err)
	return w
}
