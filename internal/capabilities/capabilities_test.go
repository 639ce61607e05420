package capabilities

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestRecentCountsLivePollersOnly(t *testing.T) {
	now := time.Now()
	poller := func(ago time.Duration) *taskqueuepb.PollerInfo {
		return &taskqueuepb.PollerInfo{Identity: "1@host", LastAccessTime: timestamppb.New(now.Add(-ago))}
	}
	assert.Equal(t, 0, Recent(nil, now))
	assert.Equal(t, 2, Recent([]*taskqueuepb.PollerInfo{poller(time.Second), poller(70 * time.Second)}, now),
		"an idle worker renews its long poll about every minute")
	assert.Equal(t, 0, Recent([]*taskqueuepb.PollerInfo{poller(4 * time.Minute)}, now),
		"the server still lists a poller gone for minutes")
}

// fakeTemporal answers DescribeTaskQueue with its pollers, counting the calls.
type fakeTemporal struct {
	client.Client
	pollers []*taskqueuepb.PollerInfo
	calls   int
}

func (f *fakeTemporal) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	f.calls++
	return &workflowservice.DescribeTaskQueueResponse{Pollers: f.pollers}, nil
}

// Polled asks Temporal once per TTL and queue, and the gauge follows its answers.
func TestPolledAsksOncePerTTL(t *testing.T) {
	fake := &fakeTemporal{}
	registry := prometheus.NewRegistry()
	p, err := NewPollers(fake, registry, zap.NewNop())
	require.NoError(t, err)
	now := time.Now()
	p.now = func() time.Time { return now }
	ctx := context.Background()

	polled, err := p.Polled(ctx, "karmadaflow-mcs")
	require.NoError(t, err)
	assert.False(t, polled)
	assert.Equal(t, 0.0, testutil.ToFloat64(p.gauge.WithLabelValues("karmadaflow-mcs")))

	fake.pollers = []*taskqueuepb.PollerInfo{{Identity: "1@host", LastAccessTime: timestamppb.New(now)}}
	polled, _ = p.Polled(ctx, "karmadaflow-mcs")
	assert.False(t, polled, "the answer is reused within the TTL")
	assert.Equal(t, 1, fake.calls)

	now = now.Add(DefaultTTL)
	polled, _ = p.Polled(ctx, "karmadaflow-mcs")
	assert.True(t, polled)
	assert.Equal(t, 2, fake.calls)
	assert.Equal(t, 1.0, testutil.ToFloat64(p.gauge.WithLabelValues("karmadaflow-mcs")))
}
