package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAgentLeaseVerdict(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	renewedAt := func(at time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}}
	}

	fresh, message := agentLeaseVerdict("member3", renewedAt(now.Add(-39*time.Second)), now, 40*time.Second)
	assert.True(t, fresh, "renewed within the grace")
	assert.Empty(t, message)

	fresh, message = agentLeaseVerdict("member3", renewedAt(now.Add(-41*time.Second)), now, 40*time.Second)
	assert.False(t, fresh, "renewed before the grace")
	assert.Equal(t, "the agent of Pull cluster member3 last renewed its lease at 2026-12-07T11:59:19Z, 41s ago (grace 40s): "+
		"it is down or cannot reach the control plane", message)

	fresh, message = agentLeaseVerdict("member3", nil, now, 40*time.Second)
	assert.False(t, fresh, "no lease")
	assert.Contains(t, message, "has never renewed its lease karmada-es-member3/karmadaflow-agent")

	fresh, message = agentLeaseVerdict("member3", &coordinationv1.Lease{}, now, 40*time.Second)
	assert.False(t, fresh, "a lease never renewed")
	assert.Contains(t, message, "has not renewed its lease karmada-es-member3/karmadaflow-agent yet")
}
