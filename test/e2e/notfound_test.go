package e2e

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	memberclients "github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// A Cluster deleted while it is probed is gone, not a failure: the status write's NotFound
// is benign and no error (let alone one reading "%!w(<nil>)") reaches the workflow.
func TestProbeOfClusterDeletedMeanwhileIsNoError(t *testing.T) {
	standaloneOnly(t)
	ctx := context.Background()
	const name = "probe-deleted"
	endpoint := silentEndpoint(t)
	cp := testEnv.ControlPlane
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.ClusterSecretNamespace},
		Data: map[string][]byte{"token": []byte("unused")}}
	_, err := cp.Client().CoreV1().Secrets(env.ClusterSecretNamespace).Create(ctx, secret, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cp.Client().CoreV1().Secrets(env.ClusterSecretNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	clusters := cp.Dynamic().Resource(kube.Clusters)
	created, err := clusters.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"apiEndpoint": "https://" + endpoint, "syncMode": "Push", "insecureSkipTLSVerification": true,
			"secretRef": map[string]any{"namespace": env.ClusterSecretNamespace, "name": name}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = clusters.Delete(ctx, name, metav1.DeleteOptions{}) })
	require.NoError(t, env.BindCredentials(ctx, cp.Client(), created, secret))

	a := &health.Activities{ControlPlane: cp.Dynamic(), Members: memberclients.NewRegistry(cp.Dynamic(), cp.Client()), ProbeTimeout: 3 * time.Second}
	var s testsuite.WorkflowTestSuite
	activityEnv := s.NewTestActivityEnvironment()
	activityEnv.RegisterActivity(a)
	go func() {
		// The probe hangs on the silent endpoint until its timeout; the Cluster goes meanwhile.
		time.Sleep(time.Second)
		assert.NoError(t, clusters.Delete(ctx, name, metav1.DeleteOptions{}))
	}()
	value, err := activityEnv.ExecuteActivity(a.ProbeCluster, health.ProbeInput{Cluster: name})
	require.NoError(t, err)
	var res health.ProbeResult
	require.NoError(t, value.Get(&res))
	assert.False(t, res.Exists)
	assert.False(t, res.Changed)
	assert.False(t, res.Ready)
}

// silentEndpoint accepts connections on 127.0.0.1 and never answers them, until the test ends.
func silentEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
