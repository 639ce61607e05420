package naming

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWorkNameMatchesKarmada(t *testing.T) {
	assert.Equal(t, "nginx-747889f6c4", WorkName("MultiClusterService", "nginx", "default"))
	// Case and ':' handling of the name part.
	assert.Regexp(t, `^system.foo-[a-z0-9]+$`, WorkName("ClusterRole", "system:Foo", ""))
	// Namespaced and cluster-scoped names hash differently.
	assert.NotEqual(t, WorkName("Service", "foo", ""), WorkName("Service", "foo", "default"))
}

func TestExecutionNamespaceRoundTrip(t *testing.T) {
	ns := ExecutionNamespace("member1")
	assert.Equal(t, "karmada-es-member1", ns)
	cluster, ok := ClusterOfExecutionNamespace(ns)
	assert.True(t, ok)
	assert.Equal(t, "member1", cluster)
	_, ok = ClusterOfExecutionNamespace("karmada-es-")
	assert.False(t, ok)
	_, ok = ClusterOfExecutionNamespace("default")
	assert.False(t, ok)
}
