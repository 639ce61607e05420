package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClusterListsHonourDeprecatedFields(t *testing.T) {
	spec := MultiClusterServiceSpec{ServiceProvisionClusters: []string{"a"}, ServiceConsumptionClusters: []string{"b"}}
	p, c := spec.ClusterLists()
	assert.Equal(t, []string{"a"}, p)
	assert.Equal(t, []string{"b"}, c)

	spec.ProviderClusters = []ClusterSelector{{Name: "x"}}
	p, _ = spec.ClusterLists()
	assert.Equal(t, []string{"x"}, p, "the new field wins")

	rangeOnly := MultiClusterServiceSpec{Range: &ExposureRange{ClusterNames: []string{"r"}}}
	p, c = rangeOnly.ClusterLists()
	assert.Equal(t, []string{"r"}, p)
	assert.Equal(t, []string{"r"}, c)
}

func TestInvolves(t *testing.T) {
	spec := MultiClusterServiceSpec{ProviderClusters: []ClusterSelector{{Name: "a"}}, ConsumerClusters: []ClusterSelector{{Name: "b"}}}
	assert.True(t, spec.Involves("a"))
	assert.True(t, spec.Involves("b"))
	assert.False(t, spec.Involves("c"))

	spec.ConsumerClusters = nil // every cluster consumes
	assert.True(t, spec.Involves("c"))
}
