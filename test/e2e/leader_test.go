package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
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

// queuesThatHandled names the work queues of an instance that have handled a key.
func queuesThatHandled(t *testing.T, instance string) []string {
	t.Helper()
	_, body := httpGet(t, "http://"+svc.MetricsAddress(instance)+"/metrics")
	var names []string
	for line := range strings.Lines(body) {
		series, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name, ok := strings.CutPrefix(series, `workqueue_work_duration_seconds_count{name="`); ok && value != "0" {
			names = append(names, strings.TrimSuffix(name, `"}`))
		}
	}
	return names
}

// TestStarterFailover runs two starters with leader election: only the leader signals, while
// the standby keeps its informers synced, the members' too; when the leader is killed, the
// standby takes over once the Lease expires and the slice change made meanwhile reaches the
// consumer.
func TestStarterFailover(t *testing.T) {
	ctx := context.Background()
	args := []string{"--leader-elect", "--leader-elect-resource-namespace=karmadaflow-system",
		"--leader-elect-lease-duration=" + testLeaseDuration.String(), "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms"}
	restartStarter(t, args...)
	require.NoError(t, svc.StartInstance(ctx, "starter-2", args))
	t.Cleanup(func() { svc.StopInstance("starter-2") })
	leader, standby := leaderOf(t, "starter", "starter-2")

	ns, m1, m2 := exposeToMember2(t)
	// The standby's triggers queue changes but handle none; only the member watches' does,
	// which starts the members' informers and signals nothing.
	handled := `workqueue_work_duration_seconds_count{name="multiclusterservices"}`
	require.NotContains(t, []string{"", "0"}, metricLine(t, leader, handled), "the leader handled the MultiClusterService")
	require.Subset(t, []string{"member-watches"}, queuesThatHandled(t, standby), "the standby handled a key")
	// The standby's member informers are synced, as many as the leader's.
	membersSynced := "karmadaflow_starter_member_informers_synced"
	eventually(t, 30*time.Second, func() error {
		if got, want := metricLine(t, standby, membersSynced), metricLine(t, leader, membersSynced); got != want || want == "" || want == "0" {
			return fmt.Errorf("member informers synced: %q on the standby, %q on the leader", got, want)
		}
		return nil
	})
	syncedBefore := metricLine(t, standby, membersSynced)

	svc.Kill(leader)
	killed := time.Now()
	scale(t, testEnv.Member(m1), ns, app, 2)
	// The takeover's figures, each from the kill: the standby leads (once the Lease expired),
	// the member's own slice holds the change, and the new leader has dispatched it to the
	// consumer. A cold leader lists every member before it signals; a warm one signals at once.
	var led, changed, propagated time.Duration
	var syncedAtLead string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		since := time.Since(killed)
		if led == 0 && metricLine(t, standby, "karmadaflow_starter_leader") == "1" {
			led, syncedAtLead = since, metricLine(t, standby, membersSynced)
		}
		if n, err := ownEndpoints(testEnv.Member(m1), ns, app); changed == 0 && err == nil && n == 2 {
			changed = since
		}
		if got, err := remoteAddresses(testEnv.Member(m2), ns, app); led > 0 && propagated == 0 && err == nil && len(got[m1]) == 2 {
			propagated = since
		}
		return led > 0 && changed > 0 && propagated > 0, nil
	})
	require.NoError(t, err, "%s led after %s, the slice changed after %s, reached the consumer after %s", standby, led, changed, propagated)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	t.Logf("leader killed: %s led after %.2fs with %s of %s member informers synced, the member's slice changed after %.2fs, the change reached the consumer after %.2fs, %.2fs after the takeover (lease duration %s)",
		standby, led.Seconds(), syncedAtLead, syncedBefore, changed.Seconds(), propagated.Seconds(), (propagated - max(led, changed)).Seconds(), testLeaseDuration)
}
