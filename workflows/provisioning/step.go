package provisioning

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Running one step: an activity that a signal arriving meanwhile cancels, and the activity
// options of each kind of step.

// errInterrupted ends a pass because a signal arrived while a step ran.
var errInterrupted = errors.New("interrupted by a signal")

// execute runs one activity; a signal arriving meanwhile cancels it and returns
// errInterrupted, so the next pass starts from what the object says now.
func (r *reconciler) execute(ctx workflow.Context, step string, opts workflow.ActivityOptions, fn, result any, args ...any) error {
	r.state.Step = step
	r.state.Progress.Runs[step]++
	workflow.SetCurrentDetails(ctx, "running "+step)
	opts.Summary = step + " for Karmada " + r.ref.String()
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	defer cancel()
	future := workflow.ExecuteActivity(actCtx, fn, args...)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(future, func(workflow.Future) {})
	r.addSignals(ctx, sel)
	sel.Select(ctx)
	if !future.IsReady() {
		r.interrupted = true
		return errInterrupted // a signal woke us: cancel the step (deferred) and start afresh
	}
	return future.Get(ctx, result)
}

// Activity options: short steps retry a few times, then the workflow retries the step later;
// waits heartbeat, so a lost worker is noticed within the heartbeat timeout.
var (
	retry = &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    15 * time.Second,
		MaximumAttempts:    5,
	}
	shortOptions = workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: retry}
	waitOptions  = workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: 10 * time.Second, RetryPolicy: retry}
	// The load balancer is somebody else's: wait as long as it takes.
	loadBalancerOptions = workflow.ActivityOptions{StartToCloseTimeout: 24 * time.Hour, HeartbeatTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}}
	controlPlaneOptions = workflow.ActivityOptions{StartToCloseTimeout: 3 * time.Minute, HeartbeatTimeout: 20 * time.Second, RetryPolicy: retry}
)
