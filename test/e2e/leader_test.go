package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testLeaseDuration is the starters' --leader-elect-lease-duration in TestStarterFailover.
const testLeaseDuration = 4 * time.Second

// metricLine returns the value of a series (name and labels as /metrics prints them) of an
// instance, "" when it has none.
func metricLine(t *testing.T, instance, series string) string {
	t.Helper()
	_, body := httpGet(t, "http://"+svc.MetricsAddress(instance)+"/metrics")
	for line := range strings.Lines(body) {
		if value, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return value
		}
	}
	return ""
}

// leaderOf waits until exactly one of the starter instances leads and returns it and the other.
func leaderOf(t *testing.T, instances ...string) (leader, standby string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var leaders, standbys []string
		for _, i := range instances {
			if metricLine(t, i, "karmadaflow_starter_leader") == "1" {
				leaders = append(leaders, i)
			} else {
				standbys = append(standbys, i)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("leaders: %v", leaders)
		}
		leader, standby = leaders[0], standbys[0]
		return nil
	})
	return leader, standby
}

// TestStarterFailover runs two starters with leader election: only the leader signals; when it
// is killed, the standby takes over once the Lease expires and the next slice change reaches
// the consumer.
func TestStarterFailover(t *testing.T) {
	ctx := context.Background()
	args := []string{"--leader-elect", "--leader-elect-resource-namespace=karmadaflow-system",
		"--leader-elect-lease-duration=" + testLeaseDuration.String(), "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms"}
	restartStarter(t, args...)
	require.NoError(t, svc.StartInstance(ctx, "starter-2", args))
	t.Cleanup(func() { svc.StopInstance("starter-2") })
	leader, standby := leaderOf(t, "starter", "starter-2")

	ns, m1, m2 := exposeToMember2(t)
	// The standby's triggers queue changes but handle none.
	handled := `workqueue_work_duration_seconds_count{name="multiclusterservices"}`
	require.NotContains(t, []string{"", "0"}, metricLine(t, leader, handled), "the leader handled the MultiClusterService")
	require.Contains(t, []string{"", "0"}, metricLine(t, standby, handled), "the standby handled a key")

	svc.Kill(leader)
	killed := time.Now()
	scale(t, testEnv.Member(m1), ns, app, 2)
	var tookOver time.Duration
	eventually(t, 30*time.Second, func() error {
		if metricLine(t, standby, "karmadaflow_starter_leader") != "1" {
			return fmt.Errorf("%s does not lead", standby)
		}
		tookOver = time.Since(killed)
		return nil
	})
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	t.Logf("leader killed: %s led after %.1fs; the slice change reached the consumer after %.1fs (lease duration %s)",
		standby, tookOver.Seconds(), time.Since(killed).Seconds(), testLeaseDuration)
}
