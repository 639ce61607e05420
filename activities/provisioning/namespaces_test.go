package provisioning

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// requests are "<verb> <resource>[/<subresource>]" of each action a fake client saw.
func requests(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		r := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			r += "/" + a.GetSubresource()
		}
		out = append(out, r)
	}
	return out
}

// TestKarmadaOutsideTheProvisioningNamespaces: a Karmada of a namespace the worker does not
// provision is refused by ValidateKarmada with a ValidationError naming metadata.namespace (and
// no other namespace), and the refusal reported, with nothing read there but the Karmada (not
// its remote host's Secret, nor its Service) and nothing written but its status and an Event;
// Uninstall refuses too. Listed, the namespace is no problem.
func TestKarmadaOutsideTheProvisioningNamespaces(t *testing.T) {
	ctx := context.Background()
	var objects []runtime.Object
	for _, k := range []*operatorv1alpha1.Karmada{karmada("remote", withHostSecret("host", "")), karmada("local")} {
		k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
		u, err := kube.ToUnstructured(k)
		require.NoError(t, err)
		objects = append(objects, u)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, objects...)
	host := fake.NewClientset()
	a := &Activities{Host: host, HostDynamic: dyn, Namespaces: []string{"tenant2", "tenant3"}}
	ref := Ref{Namespace: "tenant1", Name: "remote"}

	sum, err := a.ValidateKarmada(ctx, ref)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrValidation, appErr.Type())
	require.Len(t, sum.Invalid, 1)
	assert.True(t, strings.HasPrefix(sum.Invalid[0], "metadata.namespace: tenant1 is not one of the worker's provisioning namespaces"), sum.Invalid[0])
	assert.NotContains(t, sum.Invalid[0], "tenant2")
	assert.False(t, sum.HasFinalizer)

	require.NoError(t, a.WriteKarmadaStatus(ctx, StatusInput{Ref: ref, Generation: 1, Reason: operatorv1alpha1.ReasonValidationError,
		Message: sum.Invalid[0], Warning: true}))
	_, err = a.Uninstall(ctx, ref)
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrNamespaceNotProvisioned, appErr.Type())
	assert.Equal(t, []string{"get karmadas", "get karmadas", "update karmadas/status"}, requests(dyn.Actions()))
	assert.Equal(t, []string{"create events"}, requests(host.Actions()))

	a.Namespaces = append(a.Namespaces, "tenant1")
	sum, err = a.ValidateKarmada(ctx, Ref{Namespace: "tenant1", Name: "local"})
	require.NoError(t, err)
	assert.Empty(t, sum.Invalid)
	a.Namespaces = nil // unset: every namespace
	_, err = a.ValidateKarmada(ctx, Ref{Namespace: "tenant1", Name: "local"})
	require.NoError(t, err)
}

// TestEnsureNamespaceLeavesTheLocalCluster: a Karmada's namespace exists in the local cluster
// (the Karmada lives in it), so EnsureNamespace makes no request there.
func TestEnsureNamespaceLeavesTheLocalCluster(t *testing.T) {
	k := karmada("local")
	k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	host := fake.NewClientset()
	a := &Activities{Host: host, HostDynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), u)}
	require.NoError(t, a.EnsureNamespace(context.Background(), Ref{Namespace: "tenant1", Name: "local"}))
	assert.Empty(t, host.Actions())
}
