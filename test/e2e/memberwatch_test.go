package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memberclients "github.com/karmadaflow/karmadaflow/internal/members"
)

// A watch through a member's watch client (the one the starter's informers use) stays open
// past the request timeout that bounds the member's other requests: before, every watch was
// cut after it and the informer listed and watched again (61 times in 12 minutes).
func TestMemberWatchOutlivesTheRequestTimeout(t *testing.T) {
	ctx := context.Background()
	cp := testEnv.ControlPlane
	member, err := memberclients.NewRegistry(cp.Dynamic(), cp.Client()).Get(ctx, testEnv.Members[0].Name)
	require.NoError(t, err)
	assert.Equal(t, memberclients.RequestTimeout, member.Config.Timeout, "ordinary requests keep their bound")

	serverTimeout := int64(120)
	w, err := member.Watching.DiscoveryV1().EndpointSlices("").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &serverTimeout})
	require.NoError(t, err)
	defer w.Stop()
	start := time.Now()
	deadline := time.After(memberclients.RequestTimeout + 3*time.Second)
	for {
		select {
		case _, open := <-w.ResultChan():
			require.True(t, open, "the watch was closed after %s", time.Since(start).Round(time.Second))
		case <-deadline:
			return
		}
	}
}
