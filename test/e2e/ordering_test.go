package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/karmadaflow/karmadaflow/activities/execution"
	memberclients "github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// TestOlderWorkNeverOverwritesNewer: two appliers may bring the same Work into a member at once
// (Work execution's full pass, and the MultiClusterService writing the next generation). The
// one holding the older generation, however late it comes, leaves the member at the newer one.
// This is the race of a starter's takeover: its resync of every member's execution met a slice
// change being dispatched, and the consumer kept the old slice.
func TestOlderWorkNeverOverwritesNewer(t *testing.T) {
	standaloneOnly(t)
	ctx := context.Background()
	ns, m1, m2 := exposeToMember2(t)
	older := dispatchedWork(t, ns, app, m2)

	scale(t, testEnv.Member(m1), ns, app, 2)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	// The dispatch applies to the member at once and records the Work beside it: the member may
	// show the change before the Work's new generation is read.
	eventually(t, 30*time.Second, func() error {
		if newer := dispatchedWork(t, ns, app, m2); newer.GetGeneration() <= older.GetGeneration() {
			return fmt.Errorf("the dispatched Work is still at generation %d", newer.GetGeneration())
		}
		return nil
	})

	// Work execution's applier, as the worker runs it, handed the Work as read before the scale.
	applier := &execution.Activities{
		ControlPlane: testEnv.ControlPlane.Dynamic(),
		Members:      memberclients.NewRegistry(testEnv.ControlPlane.Dynamic(), testEnv.ControlPlane.Client()),
		Parallelism:  1,
	}
	// It applies to the member first, then records Applied on the Work from the copy it was
	// handed. When that copy was read before its own Applied was recorded, the record meets a
	// Conflict, as a stale copy does in the worker (whose retry reads the Work again): the
	// member's side is what this test is about.
	if err := applier.ApplyWork(ctx, m2, older); err != nil {
		require.True(t, apierrors.IsConflict(err), "%v", err)
	}

	got, err := remoteAddresses(testEnv.Member(m2), ns, app)
	require.NoError(t, err)
	require.Len(t, got[m1], 2, "the consumer went back to the older generation of its Work: %v", got)

	// The member's slice says which generation of which Work it holds.
	slices, err := dispatched(testEnv.Member(m2), ns, app)
	require.NoError(t, err)
	require.Len(t, slices, 1)
	require.Equal(t, string(older.GetUID()), slices[0].Annotations[naming.AnnotationWorkUID])
	generation, err := strconv.ParseInt(slices[0].Annotations[naming.AnnotationWorkGeneration], 10, 64)
	require.NoError(t, err)
	require.Greater(t, generation, older.GetGeneration())
}
