package proxye2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// pullCluster is the Cluster TestPullMemberThroughNetworkProxy registers: member1 again, in
// Pull mode behind apiserver-network-proxy.
const pullCluster = "member1-anp"

// TestPullMemberThroughNetworkProxy: member1 joins again as the Cluster member1-anp in Pull
// mode, whose spec.proxyURL is apiserver-network-proxy's server (http-connect mode) with an
// agent beside member1, as Karmada reaches Pull members. With member1 itself left out of the
// ResourceRegistry pods-and-nodes meanwhile, the global proxy lists member1's pods, watches
// its ConfigMaps, and serves logs and exec of web-1 from member1-anp, all through the agent's
// tunnels (the server counts its dials); with the agent stopped, member1-anp is unreachable.
//
// The front end of the server requires a client certificate: the test puts one in the
// Cluster's Secret as proxyClientCert and proxyClientKey, for the proxy to present to the
// https proxy of spec.proxyURL (the server is verified with the caBundle, which holds
// member1's CA and the network proxy's).
func TestPullMemberThroughNetworkProxy(t *testing.T) {
	ctx := context.Background()
	member1 := testEnv.Member("member1")
	anp, err := testEnv.StartNetworkProxy(ctx, "member1")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, anp.Stop()) })
	server, err := url.Parse(member1.Server)
	require.NoError(t, err)

	// The network proxy tunnels to the host its agent serves, and nowhere else.
	assert.Equal(t, http.StatusOK, connectThrough(t, anp, server.Host), anp.LogTail(10))
	assert.Equal(t, http.StatusInternalServerError, connectThrough(t, anp, net.JoinHostPort("127.0.0.2", server.Port())),
		"a host the agent does not serve")

	dials, err := anp.Dials(ctx)
	require.NoError(t, err)

	// member1 itself is served again once member1-anp and its registry are gone.
	registries := testEnv.ControlPlane.Dynamic().Resource(kube.ResourceRegistries)
	excludeMember1 := func(exclude string) {
		_, err := registries.Patch(ctx, "pods-and-nodes", types.MergePatchType,
			[]byte(`{"spec":{"targetCluster":{"exclude":`+exclude+`}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	excludeMember1(`["member1"]`)
	t.Cleanup(func() {
		excludeMember1(`null`)
		expectBothMembersListed(t)
	})
	registerPullCluster(t, member1, anp)

	// List: member1's pods come from member1-anp.
	podsAndClusters := `-o=jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} ` +
		`{.metadata.annotations.resource\.karmada\.io/cached-from-cluster}{"\n"}{end}`
	var out string
	if !assert.Eventually(t, func() bool {
		out, err = kubectlAs("alice", "get", "pods", "-A", podsAndClusters)
		return err == nil && strings.Contains(out, "default/web-1 "+pullCluster+"\n") && !strings.Contains(out, " member1\n")
	}, 90*time.Second, time.Second) {
		t.Fatalf("the proxy does not list member1's pods from %s:\n%s\n%s", pullCluster, out, anp.LogTail(20))
	}
	listed, err := anp.Dials(ctx)
	require.NoError(t, err)
	assert.Greater(t, listed, dials, "connections the network proxy opened to member1 for the list")

	// Watch: a ConfigMap made in member1 after the watch began is seen through member1-anp.
	watch := startKubectl(t, kubeconfigs["alice"], nil, "get", "configmaps", "-w", "-o", "name")
	require.Eventually(t, func() bool { return strings.Contains(watch.output(), "configmap/kube-root-ca.crt\n") },
		30*time.Second, 100*time.Millisecond, "the watch's first list: %q", watch.output())
	configMaps := member1.Client().CoreV1().ConfigMaps("default")
	_, err = configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched-through-anp"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = configMaps.Delete(context.Background(), "watched-through-anp", metav1.DeleteOptions{}) })
	require.Eventually(t, func() bool { return strings.Contains(watch.output(), "configmap/watched-through-anp\n") },
		30*time.Second, 100*time.Millisecond, "the watch: %q", watch.output())

	// Logs and exec (WebSocket and SPDY) of member1's web-1.
	logs, err := kubectlAs("alice", "logs", "web-1")
	require.NoError(t, err, logs)
	assert.Equal(t, member1.PodLog(), logs)
	for _, websockets := range []string{"true", "false"} {
		before, err := anp.Dials(ctx)
		require.NoError(t, err)
		out, code := runKubectl(t, kubeconfigs["alice"], []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + websockets},
			"exec", "web-1", "--", "sh", "-c", "pwd")
		assert.Equal(t, 0, code, out)
		assert.Equal(t, member1.ExecDir()+"\n", out, "websockets=%s", websockets)
		after, err := anp.Dials(ctx)
		require.NoError(t, err)
		assert.Greater(t, after, before, "exec (websockets=%s) opened its connection through the network proxy", websockets)
	}

	// Without the agent, nothing reaches member1-anp.
	require.NoError(t, anp.StopAgent())
	require.Eventually(t, func() bool {
		out, _ = kubectlAs("alice", "get", "pods", "-A", "-o", "name", "--request-timeout=60s")
		return strings.Contains(out, "cluster "+pullCluster+" is unreachable") && !strings.Contains(out, "web-1")
	}, 90*time.Second, time.Second, "member1-anp stays listed with the network proxy's agent stopped: %s", out)
}

// registerPullCluster registers member as pullCluster in Pull mode behind the network proxy,
// with a credentials Secret of its own bound to it, Ready, and a ResourceRegistry serving its
// Pods and the ConfigMaps of its namespace default. Both go when the test ends.
func registerPullCluster(t *testing.T, member *env.Cluster, anp *env.NetworkProxy) {
	t.Helper()
	ctx := context.Background()
	cp := testEnv.ControlPlane
	secrets := cp.Client().CoreV1().Secrets(env.ClusterSecretNamespace)
	push, err := secrets.Get(ctx, member.Name, metav1.GetOptions{})
	require.NoError(t, err)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pullCluster},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"token":           push.Data["token"],
			"caBundle":        append(append([]byte{}, push.Data["caBundle"]...), anp.CA...),
			"proxyClientCert": anp.ClientCert,
			"proxyClientKey":  anp.ClientKey,
		},
	}
	clusters := cp.Dynamic().Resource(kube.Clusters)
	cluster, err := clusters.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kube.Clusters.GroupVersion().String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": pullCluster},
		"spec": map[string]any{
			"apiEndpoint": member.Server,
			"syncMode":    "Pull",
			"secretRef":   map[string]any{"namespace": env.ClusterSecretNamespace, "name": pullCluster},
			"proxyURL":    anp.URL,
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, clusters.Delete(context.Background(), pullCluster, metav1.DeleteOptions{}))
		_ = secrets.Delete(context.Background(), pullCluster, metav1.DeleteOptions{}) // else its garbage collector's
	})
	require.NoError(t, env.BindCredentials(ctx, cp.Client(), cluster, secret))
	conditions := []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "reached through apiserver-network-proxy",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}
	require.NoError(t, unstructured.SetNestedSlice(cluster.Object, conditions, "status", "conditions"))
	_, err = clusters.UpdateStatus(ctx, cluster, metav1.UpdateOptions{})
	require.NoError(t, err)

	registries := cp.Dynamic().Resource(kube.ResourceRegistries)
	_, err = registries.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "search.karmada.io/v1alpha1", "kind": "ResourceRegistry",
		"metadata": map[string]any{"name": pullCluster},
		"spec": map[string]any{
			"targetCluster": map[string]any{"clusterNames": []any{pullCluster}},
			"resourceSelectors": []any{
				map[string]any{"apiVersion": "v1", "kind": "Pod"},
				map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default"},
			},
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, registries.Delete(context.Background(), pullCluster, metav1.DeleteOptions{}))
	})
}

// connectThrough asks the network proxy's front end, as its client, for a tunnel to addr and
// returns the answer's status code.
func connectThrough(t *testing.T, anp *env.NetworkProxy, addr string) int {
	t.Helper()
	cfg, err := anp.ClientTLS()
	require.NoError(t, err)
	front, err := url.Parse(anp.URL)
	require.NoError(t, err)
	conn, err := (&tls.Dialer{Config: cfg}).DialContext(context.Background(), "tcp", front.Host)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	_, err = fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
