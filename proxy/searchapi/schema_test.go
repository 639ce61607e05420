package searchapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// TestRegistriesAreValidatedByTheCRDsSchema: the search API refuses what the CRD refuses.
func TestRegistriesAreValidatedByTheCRDsSchema(t *testing.T) {
	schema, err := loadRegistrySchema()
	require.NoError(t, err)
	strategy := registryStrategy{ObjectTyper: Scheme, NameGenerator: names.SimpleNameGenerator, schema: schema}

	valid := &searchv1alpha1.ResourceRegistry{Spec: searchv1alpha1.ResourceRegistrySpec{
		ResourceSelectors: []searchv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod"}},
	}}
	valid.Name = "pods"
	assert.Empty(t, strategy.Validate(context.Background(), valid))

	invalid := valid.DeepCopy()
	invalid.Spec.ResourceSelectors[0].Kind = ""
	errs := strategy.Validate(context.Background(), invalid)
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)
	assert.Equal(t, "spec.resourceSelectors[0].kind", errs[0].Field)

	// The schema itself: a condition's status is True, False or Unknown.
	condition := valid.DeepCopy()
	condition.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "Maybe", Reason: "Test", Message: "m",
		LastTransitionTime: metav1.Now()}}
	errs = statusStrategy{strategy}.ValidateUpdate(context.Background(), condition, valid)
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, field.ErrorTypeNotSupported, errs[0].Type)
	assert.Equal(t, "status.conditions[0].status", errs[0].Field)
}
