// Package entity owns the loop every entity workflow runs: take the signals received, wait
// for a signal or a timer when no pass is due, run a pass, and continue as new when the history
// has grown long. Each workflow supplies its process (Process); this package supplies the order,
// the same for all of them, and the retry backoff they share.
package entity

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/workflowtask"
)

// Process is what one entity workflow does in its loop. In is the input of its workflow, which
// a continued run starts with.
type Process[In any] interface {
	// Drain records the signals already received, without blocking.
	Drain()
	// Due tells whether a pass is due now, without waiting.
	Due() bool
	// Wait blocks until a signal arrives or a timer of the process fires.
	Wait(ctx workflow.Context)
	// Pass runs one pass. end tells that the workflow ends, returning err: nil when its object is
	// gone, or a continue-as-new the pass decided on.
	Pass(ctx workflow.Context) (end bool, err error)
	// ContinueAsNewAsked tells whether the run should continue as new although the server does
	// not suggest it yet (a user asked for it).
	ContinueAsNewAsked(ctx workflow.Context) bool
	// Next is the input of the run this one continues as, asked after the last signals were
	// drained.
	Next() In
}

// changeUpgrade is the workflow.GetVersion change ID of continuing as new, before the next
// pass, when the worker deployment's current version is no longer the run's (upgrade).
const changeUpgrade = "upgrade-on-new-version"

// VersionChanges are the workflow.GetVersion changes of the loop itself, which every entity
// workflow's own VersionChanges include.
var VersionChanges = []versioning.Change{
	{ID: changeUpgrade, Max: 1}, // when the deployment has a new current version
}

// Run runs p until a pass ends it or ctx is cancelled. It continues as new, with the input
// p.Next gives, after a pass when the server suggests it (the history has grown long) or p
// asks for it, and before a pass when the worker deployment has a new current version (the
// run is pinned to its own version; the next run starts on the new one); each time once every
// signal has been taken and every handler has finished.
func Run[In any](ctx workflow.Context, wf func(workflow.Context, In) error, p Process[In]) error {
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		p.Drain()
		if !p.Due() && !upgrade(ctx) {
			p.Wait(ctx)
			p.Drain()
		}
		if upgrade(ctx) {
			return continueAsNew(ctx, wf, p)
		}
		if end, err := p.Pass(ctx); end {
			return err
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || p.ContinueAsNewAsked(ctx) {
			return continueAsNew(ctx, wf, p)
		}
	}
}

// upgrade tells whether the run should move to the deployment's new current version now. The
// server says so only to a run pinned to another version, in the workflow task's start event,
// so old histories, which never say it, replay without the change's marker.
func upgrade(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetTargetWorkerDeploymentVersionChanged() &&
		workflow.GetVersion(ctx, changeUpgrade, workflow.DefaultVersion, 1) == 1
}

// continueAsNew takes the last signals, waits for the handlers and continues as new with the
// input p gives.
func continueAsNew[In any](ctx workflow.Context, wf func(workflow.Context, In) error, p Process[In]) error {
	p.Drain()
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	return workflowtask.ContinueAsNew(ctx, wf, p.Next())
}

// RetryDelay is how long a workflow waits before it retries after failures failures in a row:
// first, doubled with each further failure, at most limit.
func RetryDelay(failures int, first, limit time.Duration) time.Duration {
	delay := first
	for i := 1; i < failures && delay < limit; i++ {
		delay *= 2
	}
	return min(delay, limit)
}
