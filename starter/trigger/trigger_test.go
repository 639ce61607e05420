package trigger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func configMap(resourceVersion string, generation int64, labels, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "app", ResourceVersion: resourceVersion, Generation: generation,
		Labels: labels, Annotations: annotations,
	}}
}

func TestGenerationOrMetadata(t *testing.T) {
	relevant := GenerationOrMetadata([]string{"team"}, []string{"karmadaflow.io/paused"})
	now := metav1.Now()
	deleting := configMap("2", 1, nil, nil)
	deleting.DeletionTimestamp = &now
	withFinalizer := configMap("2", 1, nil, nil)
	withFinalizer.Finalizers = []string{"karmadaflow.io/cleanup"}

	for _, tc := range []struct {
		name     string
		old, new metav1.Object
		want     bool
	}{
		{"same generation and metadata", configMap("1", 1, nil, nil), configMap("2", 1, nil, nil), false},
		{"generation changed", configMap("1", 1, nil, nil), configMap("2", 2, nil, nil), true},
		{"deletion started", configMap("1", 1, nil, nil), deleting, true},
		{"finalizer added", configMap("1", 1, nil, nil), withFinalizer, false},
		{"relevant label added", configMap("1", 1, nil, nil), configMap("2", 1, map[string]string{"team": "a"}, nil), true},
		{"relevant label changed", configMap("1", 1, map[string]string{"team": "a"}, nil), configMap("2", 1, map[string]string{"team": "b"}, nil), true},
		{"relevant label removed", configMap("1", 1, map[string]string{"team": "a"}, nil), configMap("2", 1, map[string]string{}, nil), true},
		{"relevant label set to empty", configMap("1", 1, nil, nil), configMap("2", 1, map[string]string{"team": ""}, nil), true},
		{"other label changed", configMap("1", 1, map[string]string{"app": "a"}, nil), configMap("2", 1, map[string]string{"app": "b"}, nil), false},
		{"relevant annotation changed", configMap("1", 1, nil, map[string]string{"karmadaflow.io/paused": "true"}), configMap("2", 1, nil, map[string]string{"karmadaflow.io/paused": "false"}), true},
		{"other annotation changed", configMap("1", 1, nil, map[string]string{"note": "a"}), configMap("2", 1, nil, map[string]string{"note": "b"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, relevant(tc.old, tc.new))
		})
	}
}

func TestObjectKey(t *testing.T) {
	key, err := ObjectKey(configMap("1", 0, nil, nil))
	require.NoError(t, err)
	assert.Equal(t, "default/app", key)

	key, err = ObjectKey(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karmada-es-member1"}})
	require.NoError(t, err)
	assert.Equal(t, "karmada-es-member1", key)

	key, err = ObjectKey(cache.DeletedFinalStateUnknown{Key: "default/gone", Obj: configMap("1", 0, nil, nil)})
	require.NoError(t, err)
	assert.Equal(t, "default/gone", key)

	_, err = ObjectKey("not an object")
	assert.Error(t, err)

	namespace, name, err := SplitKey("default/app")
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "app"}, []string{namespace, name})
}

func TestIsResourceExhausted(t *testing.T) {
	exhausted := serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT, "namespace rate limit exceeded")
	assert.True(t, IsResourceExhausted(exhausted))
	assert.True(t, IsResourceExhausted(fmt.Errorf("signal with start of workflow mcs/default/app: %w", exhausted)))
	assert.False(t, IsResourceExhausted(serviceerror.NewUnavailable("frontend down")))
	assert.False(t, IsResourceExhausted(errors.New("boom")))
	assert.False(t, IsResourceExhausted(nil))
}

// newTestTrigger is a trigger without an informer, to drive its event and queue logic.
func newTestTrigger(handle HandlerFunc) *Trigger {
	return &Trigger{
		name:           "test",
		key:            ObjectKey,
		relevant:       GenerationOrMetadata(nil, nil),
		handle:         handle,
		exhaustedDelay: time.Hour,
		logger:         zap.NewNop(),
		holdUntil:      map[string]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueue[string](
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour)),
	}
}

func TestUpdatesThatSendNothing(t *testing.T) {
	tr := newTestTrigger(nil)
	defer tr.queue.ShutDown()

	tr.onUpdate(configMap("5", 1, nil, nil), configMap("5", 1, nil, nil)) // resync
	tr.onUpdate(configMap("5", 1, nil, nil), configMap("6", 1, nil, nil)) // irrelevant change
	assert.Equal(t, 0, tr.queue.Len())

	tr.onUpdate(configMap("6", 1, nil, nil), configMap("7", 2, nil, nil))
	tr.onUpdate(configMap("7", 2, nil, nil), configMap("8", 3, nil, nil))
	assert.Equal(t, 1, tr.queue.Len(), "two changes of one object before handling are one key")
}

func TestEmptyKeyIsIgnored(t *testing.T) {
	tr := newTestTrigger(nil)
	defer tr.queue.ShutDown()
	tr.key = func(any) (string, error) { return "", nil }
	tr.enqueue(configMap("1", 1, nil, nil))
	assert.Equal(t, 0, tr.queue.Len())
}

func TestFailuresAreRetried(t *testing.T) {
	var result error
	tr := newTestTrigger(func(context.Context, string) error { return result })
	defer tr.queue.ShutDown()
	ctx := context.Background()

	result = errors.New("frontend unavailable")
	tr.queue.Add("default/app")
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 1, tr.queue.NumRequeues("default/app"), "rate-limited retry")

	tr.queue.Forget("default/app")
	result = fmt.Errorf("wrapped: %w", serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW, "busy"))
	tr.queue.Add("default/app")
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 0, tr.queue.NumRequeues("default/app"), "ResourceExhausted waits the fixed delay instead")
	assert.Equal(t, 0, tr.queue.Len(), "the key waits for the exhausted delay")

	result = nil
	tr.queue.Add("default/other")
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 0, tr.queue.Len())
}

func TestCoalesceGathersABurstIntoOneKey(t *testing.T) {
	tr := newTestTrigger(nil)
	defer tr.queue.ShutDown()
	tr.coalesce = 200 * time.Millisecond

	for rv := 1; rv <= 5; rv++ {
		tr.onUpdate(configMap(fmt.Sprint(rv), int64(rv), nil, nil), configMap(fmt.Sprint(rv+1), int64(rv+1), nil, nil))
	}
	assert.Equal(t, 0, tr.queue.Len(), "held back while the burst goes on")
	assert.Eventually(t, func() bool { return tr.queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"five changes within the window are one key")
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 1, tr.queue.Len(), "and only one")
}

func TestHoldAfterBatchesWhatFollowsAHandling(t *testing.T) {
	handled := 0
	tr := newTestTrigger(func(context.Context, string) error { handled++; return nil })
	defer tr.queue.ShutDown()
	hold := 200 * time.Millisecond
	tr.holdAfter = func(string) time.Duration { return hold }
	ctx := context.Background()

	tr.queue.Add("member1")
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 1, handled, "the first change after a quiet spell is handled at once")

	tr.queue.Add("member1")
	tr.queue.Add("member2")
	require.True(t, tr.processNext(ctx))
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 2, handled, "member2 is not held; member1 is, for what is left of the hold")
	assert.Equal(t, 0, tr.queue.Len())
	assert.Eventually(t, func() bool { return tr.queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 3, handled)

	hold = 0
	tr.queue.Forget("member1")
	time.Sleep(250 * time.Millisecond) // the last hold (200 ms) runs out
	tr.queue.Add("member1")
	require.True(t, tr.processNext(ctx))
	tr.queue.Add("member1")
	require.True(t, tr.processNext(ctx))
	assert.Equal(t, 5, handled, "no hold asked: every change is handled at once")
}
