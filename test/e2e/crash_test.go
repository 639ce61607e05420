package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/workflows/execution"
)

// TestMCSTwoWorkersOneKeepsCrashing: with two workers on the task queue (as the service runs
// them here), one killed with SIGKILL again and again while the provider's endpoints change,
// the consumer ends with exactly the provider's final endpoints, and nothing is duplicated:
// one collected and one dispatched Work, one dispatched slice. (make bench measures the
// stalls: section (d).)
func TestMCSTwoWorkersOneKeepsCrashing(t *testing.T) {
	ctx := context.Background()
	workers := svc.Workers()
	require.GreaterOrEqual(t, len(workers), 2, "the service runs two workers on the task queue")
	victim := workers[0]
	ns, m1, m2 := exposeToMember2(t)
	logStateOnFailure(t, execution.WorkflowID(m2))

	for replicas := int32(2); replicas <= 6; replicas++ {
		scale(t, testEnv.Member(m1), ns, app, replicas)
		time.Sleep(500 * time.Millisecond) // the change is on its way when the worker dies
		svc.Kill(victim)
		require.NoError(t, svc.StartComponent(ctx, victim))
	}
	scale(t, testEnv.Member(m1), ns, app, 3)

	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 3})
	works, err := worksOf(ns, app)
	require.NoError(t, err)
	require.Len(t, works, 4, "the Service in both clusters, one collected and one dispatched slice: %v", works)
	got, err := dispatched(testEnv.Member(m2), ns, app)
	require.NoError(t, err)
	require.Len(t, got, 1)
}
