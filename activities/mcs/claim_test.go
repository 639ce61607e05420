package mcs

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

func serviceWith(labels, annotations map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "demo", Labels: labels, Annotations: annotations}}
}

// A Service a PropagationPolicy claimed is taken over: the policy's claim goes, the
// MultiClusterService's is put, and the user's own labels and annotations are not touched.
func TestClaimEditTakesTheServiceFromAPolicy(t *testing.T) {
	svc := serviceWith(
		map[string]string{"team": "blue", naming.LabelPropagationPolicyPermanentID: "pp-id"},
		map[string]string{"owner": "blue", naming.AnnotationPropagationPolicyName: "services", naming.AnnotationPropagationPolicyNamespace: "demo"})
	edit := claimEdit(svc, Ref{Namespace: "demo", Name: "foo"}, "mcs-id")
	assert.Equal(t, map[string]any{
		naming.LabelClaimedBy:                    naming.ClaimedByMultiClusterService,
		networkingv1alpha1.LabelMCSPermanentID:   "mcs-id",
		naming.LabelPropagationPolicyPermanentID: nil,
	}, edit.labels)
	assert.Equal(t, map[string]any{
		networkingv1alpha1.AnnotationMCSName:        "foo",
		networkingv1alpha1.AnnotationMCSNamespace:   "demo",
		naming.AnnotationPropagationPolicyName:      nil,
		naming.AnnotationPropagationPolicyNamespace: nil,
	}, edit.annotations)

	patch, err := edit.mergePatch("42")
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"resourceVersion":"42",
		"labels":{"resourcetemplate.karmada.io/claimed-by":"MultiClusterService","multiclusterservice.karmada.io/permanent-id":"mcs-id",
			"propagationpolicy.karmada.io/permanent-id":null},
		"annotations":{"multiclusterservice.karmada.io/name":"foo","multiclusterservice.karmada.io/namespace":"demo",
			"propagationpolicy.karmada.io/name":null,"propagationpolicy.karmada.io/namespace":null}}}`, string(patch))
}

// A Service claimed already needs no write: a claim that wrote on every pass would signal the
// workflow again through the starter's Service watch, for ever.
func TestClaimEditOfAClaimedServiceIsEmpty(t *testing.T) {
	ref := Ref{Namespace: "demo", Name: "foo"}
	svc := serviceWith(nil, nil)
	for _, id := range []string{"mcs-id", ""} {
		edit := claimEdit(svc, ref, id)
		require.False(t, edit.empty())
		svc = serviceWith(applied(svc.Labels, edit.labels), applied(svc.Annotations, edit.annotations))
		assert.True(t, claimEdit(svc, ref, id).empty(), "permanent ID %q", id)
	}
	assert.NotContains(t, svc.Labels, networkingv1alpha1.LabelMCSPermanentID, "an ID the MultiClusterService does not carry")
}

// Releasing removes the MultiClusterService's claim only, and only from a Service a
// MultiClusterService claimed.
func TestReleaseEditRemovesTheClaimOnly(t *testing.T) {
	claimed := serviceWith(
		map[string]string{"team": "blue", naming.LabelClaimedBy: naming.ClaimedByMultiClusterService, networkingv1alpha1.LabelMCSPermanentID: "mcs-id"},
		map[string]string{"owner": "blue", networkingv1alpha1.AnnotationMCSName: "foo", networkingv1alpha1.AnnotationMCSNamespace: "demo"})
	edit := releaseEdit(claimed)
	assert.Equal(t, map[string]any{naming.LabelClaimedBy: nil, networkingv1alpha1.LabelMCSPermanentID: nil}, edit.labels)
	assert.Equal(t, map[string]any{networkingv1alpha1.AnnotationMCSName: nil, networkingv1alpha1.AnnotationMCSNamespace: nil}, edit.annotations)

	released := serviceWith(applied(claimed.Labels, edit.labels), applied(claimed.Annotations, edit.annotations))
	assert.Equal(t, map[string]string{"team": "blue"}, released.Labels)
	assert.Equal(t, map[string]string{"owner": "blue"}, released.Annotations)
	assert.True(t, releaseEdit(released).empty())

	other := serviceWith(map[string]string{naming.LabelClaimedBy: "SomethingElse"}, nil)
	assert.True(t, releaseEdit(other).empty(), "a Service something else claims is left as it is")
}

// applied is values after a merge patch of edit.
func applied(values map[string]string, edit map[string]any) map[string]string {
	out := maps.Clone(values)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range edit {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v.(string)
		}
	}
	return out
}
