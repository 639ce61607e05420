package mcs

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// The steps of a reconcile: each runs as a local activity, within the run's workflow task
// (workflowtask.LocalBudget). A step that misses that deadline, because the worker or an API
// server is too busy, runs again at once as a regular activity with room to finish, instead
// of failing the reconcile, which would be retried with backoff and redone in full, all of it
// again as local activities that the same load makes miss their deadline.

// changeSlowStepsAsActivities versions running a step again as a regular activity after its
// local activity missed its deadline. It is asked only then, so other histories hold no marker.
const changeSlowStepsAsActivities = "slow-steps-as-activities"

// slowStepOptions are those of a step run again as a regular activity: it holds no workflow
// task, so it may take as long as a busy API server needs.
var slowStepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    10 * time.Second,
		MaximumAttempts:    3,
	},
}

// step is a step of a reconcile started as a local activity. It is a workflow.Future.
type step struct {
	r     *reconciler
	what  string // the summary shown beside it in the history
	fn    any
	in    any
	local workflow.Future
	again workflow.Future // the run as a regular activity, once started
}

// startStep starts fn(in) as a local activity; format and args make its summary.
func (r *reconciler) startStep(ctx workflow.Context, fn, in any, format string, args ...any) *step {
	what := fmt.Sprintf(format, args...)
	return &step{r: r, what: what, fn: fn, in: in, local: workflow.ExecuteLocalActivity(summary.Local(ctx, "%s", what), fn, in)}
}

// Get waits for the step's result. A local activity that missed its deadline runs again as a
// regular activity, whose result it is then.
func (s *step) Get(ctx workflow.Context, result any) error {
	if s.again != nil {
		return s.again.Get(ctx, result)
	}
	err := s.local.Get(ctx, result)
	if !missedDeadline(err) || workflow.GetVersion(ctx, changeSlowStepsAsActivities, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return err
	}
	again := summary.Activity(workflow.WithActivityOptions(ctx, slowStepOptions), "%s (again: too slow for a local activity)", s.what)
	s.again = workflow.ExecuteActivity(again, s.fn, s.in)
	s.r.stepsElsewhere = true
	return s.again.Get(ctx, result)
}

// IsReady tells whether the local activity has ended (not whether a run again has).
func (s *step) IsReady() bool { return s.local.IsReady() }

// missedDeadline tells whether a local activity failed for want of time: its deadline ran
// out, or a call in it gave up because it could not finish in time (a request cut short, or
// client-go's rate limiter refusing to wait past the deadline).
func missedDeadline(err error) bool {
	return temporal.IsTimeoutError(err) || err != nil && strings.Contains(err.Error(), "context deadline")
}
