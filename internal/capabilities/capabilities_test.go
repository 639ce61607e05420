package capabilities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/karmadaflow/karmadaflow/internal/options"
)

func TestOfFollowsTheFlags(t *testing.T) {
	o := options.Default(options.Starter)
	assert.Equal(t, Set{"cluster-health", "mcs", "provisioning", "work-execution"}, Of(o))
	o.EnableWorkExecution, o.EnableClusterHealth, o.EnableProvisioning = false, false, false
	assert.Equal(t, Set{"mcs"}, Of(o))
}

func TestIdentityRoundTrips(t *testing.T) {
	s := Set{"mcs", "provisioning"}
	got, ok := parse(Identity(options.Worker, s))
	require.True(t, ok)
	assert.Equal(t, s, got)
	_, ok = parse(Identity(options.Starter, s))
	assert.False(t, ok, "a starter is no worker")
	_, ok = parse("4242@host")
	assert.False(t, ok, "the SDK's default identity")
}

func TestMismatchesNameLiveWorkersWithOtherCapabilities(t *testing.T) {
	start := time.Now()
	poller := func(s Set, at time.Time) *taskqueuepb.PollerInfo {
		return &taskqueuepb.PollerInfo{Identity: Identity(options.Worker, s), LastAccessTime: timestamppb.New(at)}
	}
	all := Set{"cluster-health", "mcs", "provisioning", "work-execution"}
	live := start.Add(time.Minute)

	assert.NoError(t, mismatches([]*taskqueuepb.PollerInfo{poller(all, live)}, "q", start, all))
	assert.NoError(t, mismatches([]*taskqueuepb.PollerInfo{poller(Set{"mcs"}, start.Add(-time.Minute))}, "q", start, all),
		"a worker last seen before the start may be gone")
	assert.NoError(t, mismatches([]*taskqueuepb.PollerInfo{{Identity: "1@other-app", LastAccessTime: timestamppb.New(live)}}, "q", start, all),
		"another application's worker")

	err := mismatches([]*taskqueuepb.PollerInfo{poller(all, live), poller(Set{"mcs"}, live)}, "q", start, all)
	var mismatch *MismatchError
	require.ErrorAs(t, err, &mismatch)
	assert.Contains(t, err.Error(), "this starter runs [cluster-health,mcs,provisioning,work-execution]")
	assert.Contains(t, err.Error(), "karmadaflow-worker[mcs]\" runs [mcs]")
	assert.NotContains(t, err.Error(), "karmadaflow-worker[cluster-health", "only the differing worker is named")
}
