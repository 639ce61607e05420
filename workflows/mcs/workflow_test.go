package mcs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/jitter"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/wftest"
)

var ref = act.Ref{Namespace: "default", Name: "foo"}

func observation(clusters ...act.ClusterState) act.Observation {
	return act.Observation{
		Exists: true, HasFinalizer: true, Generation: 1, CrossCluster: true, ServiceExists: true,
		Providers: []string{"member1"}, Consumers: []string{"member2"},
		Clusters: clusters, UnhealthyGrace: time.Minute,
	}
}

func ready(name string) act.ClusterState { return act.ClusterState{Name: name, Ready: true} }

type recorder struct {
	// mu guards the fields below from the activity fakes, which the test environment runs in
	// goroutines of their own, several at a time.
	mu       sync.Mutex
	observed int // ObserveMCS calls
	deletes  []act.DeleteWorksInput
	status   []act.StatusInput
	dispatch []act.DispatchInput
	collect  []act.CollectInput
	// merged counts the CollectAndDispatch calls (each also recorded in collect and dispatch);
	// dispatchErrs are the consumers' failures they report.
	merged       int
	dispatchErrs map[string]string
	// othersWrote are the OthersWroteBefore of each call that reads Works, in order, by activity.
	othersWrote map[string][]time.Time
	// propagateFailures is how many PropagateService calls fail before they succeed.
	propagateFailures int
	// workCache is the Work cache the activities report, unless workCacheOf names another for
	// an activity; told are the WorkCache each call was given, in order, by activity.
	workCache   string
	workCacheOf map[string]string
	told        map[string][]string
}

// reports is the Work cache activity reports.
func (rec *recorder) reports(activity string) string {
	if c, ok := rec.workCacheOf[activity]; ok {
		return c
	}
	return rec.workCache
}

func newEnv(t *testing.T, obs func() act.Observation) (*testsuite.TestWorkflowEnvironment, *recorder) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env)
	rec := &recorder{othersWrote: map[string][]time.Time{}, told: map[string][]string{}}
	env.OnActivity(activities.ObserveMCS, mock.Anything, ref).Return(func(_ context.Context, _ act.Ref) (act.Observation, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.observed++
		o := obs()
		o.WorkCache = rec.reports("ObserveMCS")
		return o, nil
	})
	env.OnActivity(activities.AddFinalizer, mock.Anything, ref).Return(nil)
	env.OnActivity(activities.RemoveFinalizer, mock.Anything, ref).Return(nil)
	env.OnActivity(activities.DeleteWorks, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.DeleteWorksInput) (act.WorkWriteResult, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.deletes = append(rec.deletes, in)
		return act.WorkWriteResult{WorkCache: rec.reports("DeleteWorks")}, nil
	})
	env.OnActivity(activities.PropagateService, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.PropagateServiceInput) (act.WorkWriteResult, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.othersWrote["PropagateService"] = append(rec.othersWrote["PropagateService"], in.OthersWroteBefore)
		rec.told["PropagateService"] = append(rec.told["PropagateService"], in.WorkCache)
		if rec.propagateFailures > 0 {
			rec.propagateFailures--
			return act.WorkWriteResult{}, errors.New("the API server answered too late")
		}
		return act.WorkWriteResult{WorkCache: rec.reports("PropagateService")}, nil
	})
	env.OnActivity(activities.CollectEndpointSlices, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.CollectInput) (act.CollectResult, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.collect = append(rec.collect, in)
		rec.othersWrote["CollectEndpointSlices"] = append(rec.othersWrote["CollectEndpointSlices"], in.OthersWroteBefore)
		rec.told["CollectEndpointSlices"] = append(rec.told["CollectEndpointSlices"], in.WorkCache)
		return act.CollectResult{Slices: []act.SliceRef{{Name: "foo-abc", Generation: 1}}, Changed: true,
			WorkCache: rec.reports("CollectEndpointSlices")}, nil
	})
	env.OnActivity(activities.DispatchEndpointSlices, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.DispatchInput) (act.DispatchResult, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.dispatch = append(rec.dispatch, in)
		rec.othersWrote["DispatchEndpointSlices"] = append(rec.othersWrote["DispatchEndpointSlices"], in.OthersWroteBefore)
		rec.told["DispatchEndpointSlices"] = append(rec.told["DispatchEndpointSlices"], in.WorkCache)
		return act.DispatchResult{Works: 1, Changed: true, WorkCache: rec.reports("DispatchEndpointSlices")}, nil
	})
	env.OnActivity(activities.CollectAndDispatch, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.CollectAndDispatchInput) (act.CollectAndDispatchResult, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.merged++
		rec.othersWrote["CollectAndDispatch"] = append(rec.othersWrote["CollectAndDispatch"], in.OthersWroteBefore)
		rec.told["CollectAndDispatch"] = append(rec.told["CollectAndDispatch"], in.WorkCache)
		rec.collect = append(rec.collect, act.CollectInput{MCS: in.MCS, Provider: in.Provider})
		res := act.CollectAndDispatchResult{Collect: act.CollectResult{Slices: []act.SliceRef{{Name: "foo-abc", Generation: 2}}, Changed: true},
			WorkCache: rec.reports("CollectAndDispatch")}
		for _, d := range in.Dispatch {
			rec.dispatch = append(rec.dispatch, d)
			if msg, ok := rec.dispatchErrs[d.Consumer]; ok {
				res.DispatchErrs = map[string]string{d.Consumer: msg}
				continue
			}
			res.Dispatched = map[string]act.DispatchResult{d.Consumer: {Works: 1, Changed: true}}
		}
		return res, nil
	})
	env.OnActivity(activities.ObserveApplied, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.ObserveAppliedInput) ([]act.ConsumerApplied, error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var out []act.ConsumerApplied
		for _, c := range in.Consumers {
			out = append(out, act.ConsumerApplied{Consumer: c, Works: 1, Applied: 1})
		}
		return out, nil
	})
	env.OnActivity(activities.WriteStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.StatusInput) error {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.status = append(rec.status, in)
		return nil
	})
	return env, rec
}

func lastCondition(t *testing.T, rec *recorder, condType string) act.Condition {
	t.Helper()
	require.NotEmpty(t, rec.status)
	for _, c := range rec.status[len(rec.status)-1].Conditions {
		if c.Type == condType {
			return c
		}
	}
	t.Fatalf("condition %s not written", condType)
	return act.Condition{}
}

func TestFullReconcileDispatchesAndReportsReady(t *testing.T) {
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	wftest.CheckAt(t, env, time.Second, func() {
		assert.Equal(t, []act.CollectInput{{MCS: ref, Provider: "member1"}}, rec.collect)
		require.Len(t, rec.dispatch, 1)
		assert.Equal(t, "member2", rec.dispatch[0].Consumer)
		assert.Equal(t, []string{"member1"}, rec.dispatch[0].Providers)
		assert.True(t, rec.dispatch[0].Exclusive)
		for _, c := range rec.status[len(rec.status)-1].Conditions {
			assert.Equal(t, "True", c.Status, c.Type)
		}
		assert.Len(t, rec.status[len(rec.status)-1].Conditions, 4)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

// TestContinuedRunReadsTheWorksFresh: the first reconcile of a run that continued another
// tells its activities that other workers may have written the Works until the run started,
// so that they are listed from the API server unless the cache started well after; once it
// succeeded, the following ones read the cache. The first run's reconciles tell nothing:
// nothing preceded them.
func TestContinuedRunReadsTheWorksFresh(t *testing.T) {
	started := time.Date(2026, 11, 26, 5, 0, 0, 0, time.Local)
	for _, continued := range []bool{false, true} {
		t.Run(fmt.Sprintf("continued=%v", continued), func(t *testing.T) {
			env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
			env.SetStartTime(started)
			if continued {
				env.SetContinuedExecutionRunID("the-previous-run")
			}
			env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", execution.SignalResync, nil).Return(nil)
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
			}, time.Second)
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalResync, nil)
			}, 2*time.Second)
			first := time.Time{}
			if continued {
				first = started
			}
			wftest.CheckAt(t, env, 3*time.Second, func() {
				assert.Equal(t, map[string][]time.Time{
					"PropagateService":       {first, {}}, // the first full reconcile, then the resync
					"CollectEndpointSlices":  {first, {}},
					"DispatchEndpointSlices": {first, {}},
					"CollectAndDispatch":     {{}}, // the slice change
				}, rec.othersWrote)
			}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
		})
	}
}

// TestFailedReconcilesKeepTheMomentOfOthersWrites: the reconciles of a continued run that
// fail keep telling their activities the run's start, not the end of the reconcile here
// before them, so that a list of the Works one of them made serves the next; once one ends
// well, they read the cache.
func TestFailedReconcilesKeepTheMomentOfOthersWrites(t *testing.T) {
	started := time.Date(2026, 11, 27, 4, 0, 0, 0, time.Local)
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	rec.propagateFailures = 2 * propagateAttempts // two reconciles fail
	env.SetStartTime(started)
	env.SetContinuedExecutionRunID("the-previous-run")
	wftest.CheckAt(t, env, 30*time.Second, func() {
		// At least: on a busy machine a local activity can also outlive its deadline in the
		// test environment's clock, which adds attempts; every one of them must carry the start.
		require.GreaterOrEqual(t, len(rec.othersWrote["PropagateService"]), 2*propagateAttempts+1, "two failed reconciles, then one that ends well")
		for i, moment := range rec.othersWrote["PropagateService"] {
			assert.Equal(t, started, moment, "call %d", i)
		}
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

// propagateAttempts is how often a reconcile calls PropagateService before it fails.
var propagateAttempts = int(localActivityOptions.RetryPolicy.MaximumAttempts)

// The Work cache a reconcile's activities reported, when they wrote within one workflow task,
// is what the next reconcile's activities are told: where it is theirs, they read the Works
// from it. Reports that differ name none.
func TestActivitiesAreToldTheWorkCacheOfEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name        string
		workCacheOf map[string]string
		want        string
	}{
		{"every activity reports one cache", nil, "worker-a"},
		{"a dispatch reports another", map[string]string{"DispatchEndpointSlices": "worker-b"}, ""},
		{"a collect reports none", map[string]string{"CollectEndpointSlices": ""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
			rec.workCache, rec.workCacheOf = "worker-a", tc.workCacheOf
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
			}, time.Second)
			wftest.CheckAt(t, env, 2*time.Second, func() {
				assert.Equal(t, []string{""}, rec.told["PropagateService"], "the first reconcile knows of no cache")
				assert.Equal(t, []string{tc.want}, rec.told["CollectAndDispatch"], "the slice change's reconcile")
			}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
		})
	}
}

// The Work cache is carried to the run a run continues as.
func TestContinuedRunIsToldTheWorkCache(t *testing.T) {
	r := &reconciler{ref: ref, obs: &act.Observation{}, workCache: "worker-a"}
	next := r.Next()
	require.NotNil(t, next.Carried)
	continued := &reconciler{}
	continued.restore(*next.Carried)
	assert.Equal(t, "worker-a", continued.workCache)
}

func TestEarlierWritesEnd(t *testing.T) {
	start, last := time.Unix(1000, 0), time.Unix(2000, 0)
	assert.True(t, earlierWritesEnd(time.Time{}, &workflow.Info{WorkflowStartTime: start}).IsZero(), "the first run's first reconcile")
	assert.Equal(t, start, earlierWritesEnd(time.Time{}, &workflow.Info{WorkflowStartTime: start, ContinuedExecutionRunID: "r"}), "a continued run's first reconcile")
	assert.Equal(t, last, earlierWritesEnd(last, &workflow.Info{WorkflowStartTime: start}), "after a reconcile ran (elsewhere, when replayed)")
}

func TestSliceChangeCollectsOnlyThatProvider(t *testing.T) {
	obs := observation(ready("member1"), ready("member2"), ready("member3"))
	obs.Providers, obs.Consumers = []string{"member1", "member2"}, []string{"member2", "member3"}
	env, rec := newEnv(t, func() act.Observation { return obs })
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member2"})
	}, time.Second)
	wftest.CheckAt(t, env, 2*time.Second, func() {
		// The full reconcile collected both providers, the signal only member2.
		require.Len(t, rec.collect, 3)
		assert.Equal(t, act.CollectInput{MCS: ref, Provider: "member2"}, rec.collect[2])
		// member2 never receives its own slices back; member3 gets member2's.
		var partial []act.DispatchInput
		for _, d := range rec.dispatch {
			if d.Exclusive {
				assert.NotContains(t, d.Providers, d.Consumer)
			} else {
				partial = append(partial, d)
			}
		}
		require.Len(t, partial, 1)
		assert.Equal(t, "member3", partial[0].Consumer)
		assert.Equal(t, []string{"member2"}, partial[0].Providers)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

// A slice change is collected and dispatched by one activity; runs from before that version
// collect first and dispatch after, as they did.
func TestSliceChangeCollectsAndDispatchesInOneActivity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version workflow.Version
		merged  int
	}{{"new runs", 1, 1}, {"runs from before the change", workflow.DefaultVersion, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
			env.OnGetVersion(changeCollectAndDispatch, workflow.DefaultVersion, 1).Return(tc.version)
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
			}, time.Second)
			wftest.CheckAt(t, env, 2*time.Second, func() {
				assert.Equal(t, tc.merged, rec.merged)
				require.Len(t, rec.dispatch, 2, "the full reconcile's dispatch and the change's")
				assert.Equal(t, act.DispatchInput{MCS: ref, Consumer: "member2", Providers: []string{"member1"}}, rec.dispatch[1])
				assert.Equal(t, "True", lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceDispatched).Status)
			}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
		})
	}
}

// A consumer that the combined activity could not dispatch to is reported, and retried.
func TestCollectAndDispatchReportsAConsumersFailure(t *testing.T) {
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	env.RegisterDelayedCallback(func() {
		rec.dispatchErrs = map[string]string{"member2": "member2 refused it"}
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
	}, time.Second)
	wftest.CheckAt(t, env, 1500*time.Millisecond, func() {
		require.Equal(t, 1, rec.merged)
		cond := lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceDispatched)
		assert.Equal(t, "False", cond.Status)
		assert.Contains(t, cond.Message, "member2 refused it")
		assert.Len(t, rec.dispatch, 2, "no retry yet")
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

func TestInvalidSpecReportsAndDoesNotRetry(t *testing.T) {
	obs := observation(ready("member1"), ready("member2"))
	obs.Invalid = []string{`spec.ports[0].port 0: must be between 1 and 65535`}
	env, rec := newEnv(t, func() act.Observation { return obs })
	wftest.CheckAt(t, env, 5*time.Minute, func() {
		c := lastCondition(t, rec, networkingv1alpha1.ConditionServiceApplied)
		assert.Equal(t, networkingv1alpha1.ReasonInvalidSpec, c.Reason)
		assert.Contains(t, c.Message, "spec.ports[0].port")
		assert.Empty(t, rec.collect)
		assert.Len(t, rec.status, 1)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

func TestDeletionRemovesWorksThenFinalizer(t *testing.T) {
	obs := observation(ready("member1"), ready("member2"))
	obs.Deleting = true
	env, _ := newEnv(t, func() act.Observation { return obs })
	env.ExecuteWorkflow(MultiClusterService, Input{Namespace: "default", Name: "foo"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertActivityNumberOfCalls(t, "DeleteWorks", 1)
	env.AssertActivityNumberOfCalls(t, "RemoveFinalizer", 1)
}

func TestProviderWithdrawnAfterGraceAndRestored(t *testing.T) {
	var start time.Time
	member1 := act.ClusterState{Name: "member1", Ready: true}
	env, rec := newEnv(t, func() act.Observation { return observation(member1, ready("member2")) })
	env.RegisterDelayedCallback(func() {
		start = env.Now()
		member1 = act.ClusterState{Name: "member1", Ready: false, Since: start}
		rec.dispatch = nil
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeClusters})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		// Inside the grace: member1's slices still go to member2.
		require.NotEmpty(t, rec.dispatch)
		assert.Equal(t, []string{"member1"}, rec.dispatch[len(rec.dispatch)-1].Providers)
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		// The grace ran out on its own timer: member2 holds nothing from member1.
		last := rec.dispatch[len(rec.dispatch)-1]
		assert.Empty(t, last.Providers)
		assert.True(t, last.Exclusive)
		c := lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceCollected)
		assert.Equal(t, "False", c.Status)
		assert.Contains(t, c.Message, "member1")
		member1 = ready("member1")
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeClusters})
	}, 75*time.Second)
	wftest.CheckAt(t, env, 80*time.Second, func() {
		last := rec.dispatch[len(rec.dispatch)-1]
		assert.Equal(t, []string{"member1"}, last.Providers)
		assert.Equal(t, "True", lastCondition(t, rec, networkingv1alpha1.ConditionEndpointSliceCollected).Status)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

func TestMissingServiceWaitsAndRemovesWorks(t *testing.T) {
	obs := observation(ready("member1"), ready("member2"))
	obs.ServiceExists = false
	env, rec := newEnv(t, func() act.Observation { return obs })
	env.RegisterDelayedCallback(func() {
		c := lastCondition(t, rec, networkingv1alpha1.ConditionServiceApplied)
		assert.Equal(t, "False", c.Status)
		assert.Contains(t, c.Message, "default/foo not found")
		obs.ServiceExists = true
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeSpec})
	}, time.Second)
	wftest.CheckAt(t, env, 2*time.Second, func() {
		assert.Equal(t, "True", lastCondition(t, rec, networkingv1alpha1.ConditionServiceApplied).Status)
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
	var everything int
	for _, d := range rec.deletes {
		if len(d.Roles) == 0 {
			everything++
		}
	}
	assert.Equal(t, 1, everything, "all Works removed once, while the Service was missing")
}

func TestFullReconcilePrunesFormerProvidersAndConsumers(t *testing.T) {
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	wftest.CheckAt(t, env, time.Second, func() {
		assert.Contains(t, rec.deletes, act.DeleteWorksInput{MCS: ref, Roles: []string{"collected"}, ExceptClusters: []string{"member1"}, Prune: true})
		assert.Contains(t, rec.deletes, act.DeleteWorksInput{MCS: ref, Roles: []string{"dispatched"}, ExceptClusters: []string{"member2"}, Prune: true})
	}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
}

func TestContinuesAsNewCarryingPendingWorkAndStatus(t *testing.T) {
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	env.SetContinueAsNewSuggested(true)
	signalled := false
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "WriteStatus" && !signalled {
			// Arrives while the first reconcile runs: the next run must not lose it.
			signalled = true
			env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
		}
	})
	env.ExecuteWorkflow(MultiClusterService, Input{Namespace: "default", Name: "foo"})

	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Equal(t, "default", next.Namespace)
	assert.Equal(t, "foo", next.Name)
	assert.Equal(t, []string{"member1"}, next.Pending.Providers, "the signal received before continuing is carried")
	require.Len(t, rec.status, 1)
	assert.Equal(t, statusKey(1, rec.status[0].Conditions), next.LastStatus, "the status written is carried, so it is not written again")
}

// A resync asking for it continues the run as new once the full reconcile is done.
func TestResyncAskingToContinueAsNew(t *testing.T) {
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	// A user's resync has the members' Work execution re-apply everything.
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", execution.SignalResync, nil).Return(nil)
	env.RegisterDelayedCallback(func() {
		require.Len(t, rec.collect, 1)
		env.SignalWorkflow(SignalResync, nil) // a plain resync does not
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		require.Len(t, rec.collect, 2)
		env.SignalWorkflow(SignalResync, ResyncRequest{ContinueAsNew: true})
	}, 2*time.Second)
	env.ExecuteWorkflow(MultiClusterService, Input{Namespace: "default", Name: "foo"})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Len(t, rec.collect, 3, "the resync's reconcile ran first")
	require.NotNil(t, next.Carried, "what the run knew is carried")
	assert.Equal(t, Input{Namespace: "default", Name: "foo", LastStatus: next.LastStatus, Carried: next.Carried}, next)
	assert.NotEmpty(t, next.LastStatus)
	assert.Equal(t, observation(ready("member1"), ready("member2")), next.Carried.Observation)
	assert.Equal(t, []string{"member1"}, next.Carried.Plan.Providers)
	assert.Equal(t, map[string][]act.SliceRef{"member1": {{Name: "foo-abc", Generation: 1}}}, next.Carried.State.Slices)
	assert.Equal(t, 3, next.Carried.State.Reconciles)
}

// A run that continued one that carried its state starts with only the pending work: no
// observation, no full reconcile, and the safety resync keeps the schedule it had.
func TestContinuedRunStartsFromTheCarriedState(t *testing.T) {
	observed := 0
	env, rec := newEnv(t, func() act.Observation { observed++; return observation(ready("member1"), ready("member2")) })
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", execution.SignalResync, nil).Return(nil)
	start := env.Now()
	carried := &Carried{
		Observation: observation(ready("member1"), ready("member2")),
		Plan:        Plan{Providers: []string{"member1"}, Consumers: []string{"member2"}},
		State: State{Phase: PhaseReady, Generation: 1, Providers: []string{"member1"}, Consumers: []string{"member2"},
			Slices: map[string][]act.SliceRef{"member1": {{Name: "foo-abc", Generation: 1}}}, Reconciles: 7,
			LastFullRun: start.Add(-time.Minute)},
	}
	env.RegisterDelayedCallback(func() {
		assert.Zero(t, observed, "no observation before a change")
		assert.Empty(t, rec.collect)
		env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		assert.Zero(t, observed, "the change of a provider's slices needs no observation")
		assert.Len(t, rec.collect, 1, "only the changed provider's slices were collected")
		env.SignalWorkflow(SignalResync, ResyncRequest{ContinueAsNew: true})
	}, 2*time.Minute)
	env.ExecuteWorkflow(MultiClusterService, Input{Namespace: "default", Name: "foo", Carried: carried})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	require.NotNil(t, next.Carried)
	assert.Equal(t, 9, next.Carried.State.Reconciles, "the change's reconcile and the resync's follow the carried seven")
}

// A wake (sent to the runs of a version that is no longer current) makes the run continue as
// new at once, with what it knows and without a reconcile.
func TestWakeContinuesAsNewWithoutAReconcile(t *testing.T) {
	env, rec := newEnv(t, func() act.Observation { return observation(ready("member1"), ready("member2")) })
	env.RegisterDelayedCallback(func() {
		require.Len(t, rec.collect, 1)
		env.SignalWorkflow(SignalResync, ResyncRequest{Wake: true})
	}, time.Second)
	env.ExecuteWorkflow(MultiClusterService, Input{Namespace: "default", Name: "foo"})
	require.True(t, env.IsWorkflowCompleted())
	var next Input
	wftest.ContinuedInput(t, env.GetWorkflowError(), &next)
	assert.Len(t, rec.collect, 1, "the wake ran no reconcile")
	assert.False(t, next.Pending.any(), "nothing is pending")
	require.NotNil(t, next.Carried)
	assert.Equal(t, 1, next.Carried.State.Reconciles)
}

// TestSafetyResyncIsSpreadByWorkflowID: without any event, the next full reconcile comes after
// the workflow's own spread of SafetyResync, fixed by its ID, not after SafetyResync itself.
func TestSafetyResyncIsSpreadByWorkflowID(t *testing.T) {
	for _, id := range []string{"mcs/default/foo", "mcs/shop/web"} { // spread above and below SafetyResync
		t.Run(id, func(t *testing.T) {
			resync := jitter.Spread(id, SafetyResync)
			require.NotEqual(t, SafetyResync, resync)
			for _, tc := range []struct {
				at    time.Duration
				fulls int
			}{{resync - time.Second, 1}, {resync + time.Second, 2}} {
				observed := 0
				env, _ := newEnv(t, func() act.Observation { observed++; return observation(ready("member1"), ready("member2")) })
				env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
				wftest.CheckAt(t, env, tc.at, func() {
					assert.Equal(t, tc.fulls, observed, "full reconciles at %s (spread %s)", tc.at, resync)
				}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
			}
		})
	}
}

// A Pull provider's slices are collected by its agent into Works of its execution namespace,
// full reconcile and slice change alike (karmadaflow's agent standalone, karmada-agent beside
// Karmada), and the workflow reads that collection: nothing is scheduled on the cluster's own
// task queue, which no agent polls. Dispatching stays here; the one-activity
// collect-and-dispatch path is not taken.
func TestPullProviderIsCollectedByItsAgent(t *testing.T) {
	for _, besideKarmada := range []bool{false, true} {
		t.Run(fmt.Sprintf("besideKarmada=%v", besideKarmada), func(t *testing.T) {
			env, rec := newEnv(t, func() act.Observation {
				obs := observation(act.ClusterState{Name: "member1", Ready: true, Pull: true}, ready("member2"))
				obs.KarmadaAgents = besideKarmada
				return obs
			})
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: "karmadaflow"})
			var onAgent, readFromAgent int
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.TaskQueue == "karmadaflow/cluster/member1" {
					onAgent++
				}
			})
			env.OnActivity(activities.ReadAgentCollection, mock.Anything, mock.Anything).Return(func(_ context.Context, in act.CollectInput) (act.CollectResult, error) {
				readFromAgent++
				return act.CollectResult{Slices: []act.SliceRef{{Name: "foo-abc", Generation: 1}}, Changed: true}, nil
			})
			env.RegisterDelayedCallback(func() {
				env.SignalWorkflow(SignalChange, Change{Kind: ChangeEndpointSlices, Cluster: "member1"})
			}, time.Second)
			wftest.CheckAt(t, env, 2*time.Second, func() {
				assert.Equal(t, [2]int{0, 2}, [2]int{onAgent, readFromAgent}, "activities on the agent's queue, collections read")
				assert.Zero(t, rec.merged, "no collect-and-dispatch of a Pull provider here")
				assert.Len(t, rec.dispatch, 2, "dispatched after each collection")
			}, MultiClusterService, Input{Namespace: "default", Name: "foo"})
		})
	}
}
