package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

func registry(affinity searchv1alpha1.ClusterAffinity, selectors ...searchv1alpha1.ResourceSelector) searchv1alpha1.ResourceRegistry {
	return searchv1alpha1.ResourceRegistry{Spec: searchv1alpha1.ResourceRegistrySpec{TargetCluster: affinity, ResourceSelectors: selectors}}
}

var (
	pods  = searchv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Pod"}
	nodes = searchv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Node"}
)

func TestPlacements(t *testing.T) {
	clusters := []Cluster{
		{Name: "m3", Ready: true, Labels: map[string]string{"env": "prod"}, Fields: map[string]string{"region": "eu"}},
		{Name: "m1", Ready: true, Labels: map[string]string{"env": "prod"}},
		{Name: "m2", Ready: true, Labels: map[string]string{"env": "dev"}, Fields: map[string]string{"region": "us"}},
		{Name: "m4", Ready: false, Labels: map[string]string{"env": "prod"}},
	}
	byNames := registry(searchv1alpha1.ClusterAffinity{ClusterNames: []string{"m2", "m1", "m4"}}, pods, nodes)
	assert.Equal(t, []Placement{{Cluster: "m1"}, {Cluster: "m2"}}, Placements([]searchv1alpha1.ResourceRegistry{byNames}, clusters, "v1", "Pod"),
		"sorted by name, only Ready clusters")
	assert.Empty(t, Placements([]searchv1alpha1.ResourceRegistry{byNames}, clusters, "apps/v1", "Deployment"), "not registered")

	byLabel := registry(searchv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}, Exclude: []string{"m1"}}, pods)
	assert.Equal(t, []Placement{{Cluster: "m3"}}, Placements([]searchv1alpha1.ResourceRegistry{byLabel}, clusters, "v1", "Pod"))

	byField := registry(searchv1alpha1.ClusterAffinity{FieldSelector: &searchv1alpha1.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: []string{"us"}},
	}}}, pods)
	assert.Equal(t, []Placement{{Cluster: "m2"}}, Placements([]searchv1alpha1.ResourceRegistry{byField}, clusters, "v1", "Pod"))

	// Namespaces are per cluster: one registry's namespace does not leak into another's cluster.
	inA := registry(searchv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}, searchv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Pod", Namespace: "a"})
	inB := registry(searchv1alpha1.ClusterAffinity{ClusterNames: []string{"m1", "m2"}}, searchv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Pod", Namespace: "b"})
	got := Placements([]searchv1alpha1.ResourceRegistry{inA, inB}, clusters, "v1", "Pod")
	assert.Equal(t, []Placement{{Cluster: "m1", Namespaces: []string{"a", "b"}}, {Cluster: "m2", Namespaces: []string{"b"}}}, got)
	assert.True(t, got[1].serves("b"))
	assert.False(t, got[1].serves("a"))
}
