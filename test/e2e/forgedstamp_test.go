package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/activities/execution"
	memberclients "github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// TestForgedStampIsCorrected: a member user who writes `karmadaflow.io/work-generation: "999999"`
// on a dispatched slice (and empties it) does not freeze it. Work execution brings the Work in
// again, and the Work's next generation (the provider scales) reaches the consumer.
func TestForgedStampIsCorrected(t *testing.T) {
	standaloneOnly(t)
	ctx := context.Background()
	ns, m1, m2 := exposeToMember2(t)
	consumer := testEnv.Member(m2)
	forge := func() {
		t.Helper()
		slices, err := dispatched(consumer, ns, app)
		require.NoError(t, err)
		require.Len(t, slices, 1)
		s := slices[0]
		s.Annotations[naming.AnnotationWorkGeneration] = "999999"
		s.Endpoints = nil
		_, err = consumer.Client().DiscoveryV1().EndpointSlices(ns).Update(ctx, &s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	stampedAsItsWork := func() {
		t.Helper()
		work := dispatchedWork(t, ns, app, m2)
		eventually(t, 30*time.Second, func() error {
			slices, err := dispatched(consumer, ns, app)
			if err != nil {
				return err
			}
			if got, want := slices[0].Annotations[naming.AnnotationWorkGeneration], strconv.FormatInt(work.GetGeneration(), 10); got != want {
				return fmt.Errorf("the slice is stamped %s, its Work is at %s", got, want)
			}
			return nil
		})
	}

	// Work execution's applier (its full pass every 5 minutes) redoes the forged slice.
	forge()
	applier := &execution.Activities{
		ControlPlane: testEnv.ControlPlane.Dynamic(),
		Members:      memberclients.NewRegistry(testEnv.ControlPlane.Dynamic(), testEnv.ControlPlane.Client()),
		Parallelism:  1,
	}
	require.NoError(t, applier.ApplyWork(ctx, m2, dispatchedWork(t, ns, app, m2)))
	expectRemote(t, consumer, ns, app, map[string]int{m1: 1})
	stampedAsItsWork()

	// The Work's next generation is applied over a forged stamp.
	forge()
	scale(t, testEnv.Member(m1), ns, app, 2)
	expectRemote(t, consumer, ns, app, map[string]int{m1: 2})
	stampedAsItsWork()
}
