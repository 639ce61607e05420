package members

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

func cluster(name, uid, secret string) *unstructured.Unstructured {
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"spec": map[string]any{"apiEndpoint": "https://127.0.0.1:6443",
			"secretRef": map[string]any{"namespace": "karmada-cluster", "name": secret}},
	}}
	c.SetName(name)
	c.SetUID(types.UID(uid))
	return c
}

// credentials is a Secret with a token, owned by the Clusters given.
func credentials(name string, owners ...*unstructured.Unstructured) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-cluster", Name: name}, Data: map[string][]byte{"token": []byte("secret-token")}}
	for _, o := range owners {
		s.OwnerReferences = append(s.OwnerReferences, *metav1.NewControllerRef(o, o.GroupVersionKind()))
	}
	return s
}

func TestBoundTo(t *testing.T) {
	member1 := cluster("member1", "uid-1", "member1")
	assert.True(t, BoundTo(credentials("member1", member1), member1), "as karmadactl join binds it")
	assert.False(t, BoundTo(credentials("member1"), member1), "bound to nothing")
	assert.False(t, BoundTo(credentials("member1", member1), cluster("thief", "uid-2", "member1")), "another cluster's Secret")
	assert.False(t, BoundTo(credentials("member1", member1), cluster("member1", "uid-3", "member1")), "a Cluster of the same name created since")

	other := credentials("member1")
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Cluster", Name: "member1", UID: "uid-1"}}
	assert.False(t, BoundTo(other, member1), "a Cluster of another API group")
}

// A Cluster that names a Secret not bound to it gets no clients: the registry refuses it
// before building any, so its token is never sent to the endpoint the Cluster chose.
func TestRegistryRefusesAnUnboundSecret(t *testing.T) {
	member1 := cluster("member1", "uid-1", "member1")
	thief := cluster("thief", "uid-2", "member1")
	unbound := cluster("unbound", "uid-3", "unbound")
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{kube.Clusters: "ClusterList"}, member1, thief, unbound)
	core := kubefake.NewClientset(credentials("member1", member1), credentials("unbound"))
	r := NewRegistry(dyn, core)

	m, err := r.Get(context.Background(), "member1")
	require.NoError(t, err)
	assert.Equal(t, "secret-token", m.Config.BearerToken)

	for _, name := range []string{"thief", "unbound"} {
		_, err = r.Get(context.Background(), name)
		var refused *UnboundSecretError
		require.True(t, errors.As(err, &refused), "%s: %v", name, err)
		assert.Equal(t, name, refused.Cluster)
		_, err = r.Impersonator(context.Background(), name)
		assert.True(t, errors.As(err, &refused), "%s: %v", name, err)
	}
}
