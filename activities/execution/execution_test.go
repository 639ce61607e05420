package execution

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

func work(uid string, generation int64) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetNamespace("karmada-es-member2")
	w.SetName("endpointslice-foo")
	w.SetUID(types.UID(uid))
	w.SetGeneration(generation)
	return w
}

func TestStampedLabelsAndStampsTheManifest(t *testing.T) {
	manifest := &unstructured.Unstructured{}
	manifest.SetName("member1-foo-abcde")
	manifest.SetLabels(map[string]string{"app": "foo"})
	current := manifest.DeepCopy()
	current.SetResourceVersion("42")

	obj := stamped(manifest, work("u1", 7), current)
	assert.Equal(t, map[string]string{"app": "foo", naming.LabelWorkName: "endpointslice-foo", naming.LabelWorkNamespace: "karmada-es-member2"}, obj.GetLabels())
	assert.Equal(t, map[string]string{naming.AnnotationWorkUID: "u1", naming.AnnotationWorkGeneration: "7"}, obj.GetAnnotations())
	assert.Equal(t, "42", obj.GetResourceVersion(), "the write is conditional on the object read")
	assert.Empty(t, manifest.GetAnnotations(), "the Work's manifest is not modified")

	assert.Empty(t, stamped(manifest, work("u1", 7), nil).GetResourceVersion(), "a new object has no version to hold to")
}

func TestHoldsLaterGeneration(t *testing.T) {
	applied := stamped(&unstructured.Unstructured{}, work("u1", 7), nil)
	for _, tc := range []struct {
		name string
		work *unstructured.Unstructured
		want bool
	}{
		{"an older generation of the same Work", work("u1", 6), true},
		{"the same generation", work("u1", 7), false},
		{"a newer generation", work("u1", 8), false},
		{"a Work of the same name created since", work("u2", 1), false},
	} {
		assert.Equal(t, tc.want, holdsLaterGeneration(applied, tc.work), tc.name)
	}
	assert.False(t, holdsLaterGeneration(&unstructured.Unstructured{}, work("u1", 1)), "an object applied before stamps were")
}

func TestAppliedByAnother(t *testing.T) {
	applied := stamped(&unstructured.Unstructured{}, work("u1", 3), nil)
	assert.False(t, appliedByAnother(applied, work("u1", 9)))
	assert.True(t, appliedByAnother(applied, work("u2", 1)))
	assert.False(t, appliedByAnother(&unstructured.Unstructured{}, work("u2", 1)), "an object applied before stamps were")
}
