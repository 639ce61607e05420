package provisioning

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

func createdAt(seconds int64) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		k.CreationTimestamp = metav1.NewTime(time.Unix(1_700_000_000+seconds, 0))
	}
}

// TestNamesCollide: the pairs of names whose instances would share objects.
func TestNamesCollide(t *testing.T) {
	shared := func(a, b string) []string {
		var out []string
		mine := map[string]bool{}
		for _, n := range NamesFor(a).objectNames() {
			mine[n] = true
		}
		for _, n := range NamesFor(b).objectNames() {
			if mine[n] {
				out = append(out, n)
			}
		}
		return out
	}
	assert.Contains(t, shared("x", "x-karmada"), "x-karmada-apiserver")
	assert.Contains(t, shared("x", "x-karmada-etcd"), "x-karmada-etcd-cert")
	assert.Contains(t, shared("x-karmada", "x-karmada-etcd"), "x-karmada-etcd-cert")
	assert.Empty(t, shared("x", "y"))
	assert.Empty(t, shared("team-karmada", "team-karmada-2"))
	assert.Empty(t, shared("x", "x-2"))
}

// TestValidateNameRefusesTheYoungerOfCollidingKarmadas: of Karmadas "x" and "x-karmada",
// which would make the same objects, the one created later is refused, naming metadata.name;
// the older one, and Karmadas whose names do not collide, are not.
func TestValidateNameRefusesTheYoungerOfCollidingKarmadas(t *testing.T) {
	x, xk := karmada("x", createdAt(0)), karmada("x-karmada", createdAt(10))
	y := karmada("y", createdAt(0))
	siblings := []operatorv1alpha1.Karmada{*x, *xk, *y}

	problems := ValidateName(xk, siblings)
	require.Len(t, problems, 1)
	assert.Regexp(t, `^metadata\.name: Karmada "x-karmada" .*Karmada "x" .*"x-karmada-`, problems[0])
	assert.Empty(t, ValidateName(x, siblings), "the older instance keeps its name")
	assert.Empty(t, ValidateName(y, siblings))

	// Created the same second: the smaller name wins.
	same := karmada("x-karmada", createdAt(0))
	assert.NotEmpty(t, ValidateName(same, []operatorv1alpha1.Karmada{*x, *same}))
	assert.Empty(t, ValidateName(x, []operatorv1alpha1.Karmada{*x, *same}))

	// A Karmada of another namespace makes its objects there.
	other := karmada("x", createdAt(0), func(k *operatorv1alpha1.Karmada) { k.Namespace = "tenant2" })
	assert.Empty(t, ValidateName(xk, []operatorv1alpha1.Karmada{*other, *xk}))
}

// TestValidateKarmadaReadsItsSiblings: ValidateKarmada lists the Karmadas of the namespace
// and refuses a colliding name with a ValidationError.
func TestValidateKarmadaReadsItsSiblings(t *testing.T) {
	var objects []runtime.Object
	for _, k := range []*operatorv1alpha1.Karmada{karmada("x", createdAt(0)), karmada("x-karmada", createdAt(10))} {
		k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
		u, err := kube.ToUnstructured(k)
		require.NoError(t, err)
		objects = append(objects, u)
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, objects...)
	// Host has no etcd StatefulSet: neither instance is installed.
	a := &Activities{Host: fake.NewClientset(), HostDynamic: client}

	sum, err := a.ValidateKarmada(context.Background(), Ref{Namespace: "tenant1", Name: "x-karmada"})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrValidation, appErr.Type())
	require.Len(t, sum.Invalid, 1)
	assert.Contains(t, sum.Invalid[0], "metadata.name: ")

	sum, err = a.ValidateKarmada(context.Background(), Ref{Namespace: "tenant1", Name: "x"})
	require.NoError(t, err)
	assert.Empty(t, sum.Invalid)
}
