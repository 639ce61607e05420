package naming

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
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

// Dispatched names keep two providers' slices apart whatever their names, and stay valid
// EndpointSlice names, with valid Work names, however long the slice's name.
func TestDispatchedSliceNames(t *testing.T) {
	assert.Equal(t, "a.b-x", DispatchedSliceName("a", "b-x"))
	assert.Equal(t, "a-b.x", DispatchedSliceName("a-b", "x"))
	assert.NotEqual(t, DispatchedSliceName("a", "b-x"), DispatchedSliceName("a-b", "x"))

	provider := strings.Repeat("p", 48)                              // the longest cluster name
	long := strings.Repeat("s", 200) + "-" + strings.Repeat("t", 52) // 253 characters
	longer := long[:len(long)-1] + "u"                               // the same length, another end
	dotted := strings.Repeat("a.", 126) + "b"                        // cut where a '.' would end it
	for _, slice := range []string{"foo-abc", long, longer, dotted, strings.Repeat("x", 193), strings.Repeat("x", 194)} {
		name := DispatchedSliceName(provider, slice)
		assert.LessOrEqual(t, len(name), MaxDispatchedSliceName, "slice of %d characters", len(slice))
		assert.Empty(t, validation.IsDNS1123Subdomain(name), "dispatched name %q", name)
		work := WorkName("EndpointSlice", name, "default")
		assert.LessOrEqual(t, len(work), validation.DNS1123SubdomainMaxLength, "Work name of a slice of %d characters", len(slice))
		assert.Empty(t, validation.IsDNS1123Subdomain(work), "Work name %q", work)
		before, _, _ := strings.Cut(name, ".")
		assert.Equal(t, provider, before, "the provider's part ends at the first '.'")
	}
	assert.Equal(t, provider+"."+strings.Repeat("x", 193), DispatchedSliceName(provider, strings.Repeat("x", 193)), "a name that fits is kept whole")
	assert.NotEqual(t, DispatchedSliceName(provider, long), DispatchedSliceName(provider, longer), "long names that differ at the end stay apart")
	assert.Equal(t, DispatchedSliceName(provider, long), DispatchedSliceName(provider, long), "the same name each time")
}
