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

// A Work karmada-agent's endpointsliceCollect controller wrote counts as collected; karmadaflow's
// own role label wins, and other Works have no role.
func TestRoleOf(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{LabelWorkRole: RoleDispatched}, RoleDispatched},
		{map[string]string{LabelWorkRole: RoleCollected, "endpointslice.karmada.io/managed-by": "MultiClusterService"}, RoleCollected},
		{map[string]string{"endpointslice.karmada.io/managed-by": "MultiClusterService"}, RoleCollected},
		{map[string]string{"endpointslice.karmada.io/managed-by": "EndpointSliceCollect.MultiClusterService"}, RoleCollected},
		{map[string]string{"endpointslice.karmada.io/managed-by": "MultiClusterServiceX"}, ""},
		{nil, ""},
	} {
		if got := RoleOf(tc.labels); got != tc.want {
			t.Errorf("RoleOf(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

// A capability's task queue leads back to its base, and so does the base itself (the queue of
// runs started before the capabilities had their own); the agent's queue is named from it.
func TestCapabilityTaskQueuesLeadBackToTheBase(t *testing.T) {
	for _, base := range []string{"karmadaflow", "karmadaflow-eu"} {
		assert.Equal(t, base, BaseTaskQueue(base))
		for _, c := range Capabilities {
			queue := CapabilityTaskQueue(base, c)
			assert.NotEqual(t, base, queue)
			assert.Equal(t, base, BaseTaskQueue(queue))
			assert.Equal(t, base+"/cluster/member1", PullTaskQueue(BaseTaskQueue(queue), "member1"))
		}
	}
	assert.Equal(t, "karmadaflow-cluster", CapabilityTaskQueue("karmadaflow", CapabilityCluster))
}
