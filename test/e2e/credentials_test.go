package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// Whoever may write a Cluster chooses its endpoint and the Secret it names. A Cluster that
// names member1's Secret, or a Secret nobody bound to it, with an endpoint of its writer's
// choosing, gets no token: the worker's health probe refuses it (Ready False, reason
// ClusterCredentialsNotBound, a Warning Event) and never dials the endpoint.
func TestCredentialsGoOnlyToTheirOwnCluster(t *testing.T) {
	standaloneOnly(t) // beside Karmada, Karmada's own cluster status controller probes Clusters
	ctx := context.Background()
	thief := newRecordingEndpoint(t)
	cp := testEnv.ControlPlane
	member1 := testEnv.Members[0].Name

	unbound := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds-unbound", Namespace: env.ClusterSecretNamespace},
		Data: map[string][]byte{"token": []byte("unbound-token")}}
	_, err := cp.Client().CoreV1().Secrets(env.ClusterSecretNamespace).Create(ctx, unbound, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cp.Client().CoreV1().Secrets(env.ClusterSecretNamespace).Delete(ctx, unbound.Name, metav1.DeleteOptions{})
	})

	clusters := cp.Dynamic().Resource(kube.Clusters)
	for name, secret := range map[string]string{"creds-thief": member1, "creds-unbound": unbound.Name} {
		_, err := clusters.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": name},
			// Plain HTTP: a CA bundle in the Secret would not keep the token from it.
			"spec": map[string]any{"apiEndpoint": "http://" + thief.address, "syncMode": "Push",
				"secretRef": map[string]any{"namespace": env.ClusterSecretNamespace, "name": secret}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = clusters.Delete(ctx, name, metav1.DeleteOptions{}) })
	}

	for _, name := range []string{"creds-thief", "creds-unbound"} {
		// The worker's health workflow probes the new Cluster and says why it is not Ready.
		eventually(t, time.Minute, func() error {
			obj, err := clusters.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, err := kube.Conditions(obj)
			if err != nil {
				return err
			}
			ready := meta.FindStatusCondition(conds, "Ready")
			if ready == nil || ready.Reason != health.ReasonCredentialsNotBound {
				return fmt.Errorf("Cluster %s: Ready is %+v", name, ready)
			}
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Contains(t, ready.Message, "is not bound to Cluster "+name)
			return nil
		})
		eventually(t, 30*time.Second, func() error {
			events, err := cp.Client().EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Regarding.Kind == "Cluster" && e.Regarding.Name == name && e.Reason == health.ReasonCredentialsNotBound && e.Type == corev1.EventTypeWarning {
					return nil
				}
			}
			return fmt.Errorf("no Warning Event %s on Cluster %s", health.ReasonCredentialsNotBound, name)
		})
	}
	// Probes go on meanwhile (every --cluster-probe-interval): none of them reached the endpoint.
	time.Sleep(3 * time.Second)
	assert.Empty(t, thief.seen(), "requests reached the endpoint a Cluster's writer chose")
}

// recordingEndpoint is a plain HTTP server on 127.0.0.2 that records the Authorization header
// of every request it gets.
type recordingEndpoint struct {
	address string
	mu      sync.Mutex
	got     []string
}

func newRecordingEndpoint(t *testing.T) *recordingEndpoint {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err)
	e := &recordingEndpoint{address: l.Addr().String()}
	server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.got = append(e.got, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		e.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	})}
	go func() { _ = server.Serve(l) }()
	t.Cleanup(func() { _ = server.Close() })
	return e
}

func (e *recordingEndpoint) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}
