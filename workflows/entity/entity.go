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
	// UpgradeAsked tells whether a wake (a resync whose payload IsWake) asked the run to move
	// to the worker deployment's current version: its Resyncs know.
	UpgradeAsked() bool
}

// changeUpgrade is the workflow.GetVersion change ID of continuing as new, before the next
// pass, when a wake asks the run to move to the worker deployment's current version.
const changeUpgrade = "upgrade-on-new-version"

// VersionChanges are the workflow.GetVersion changes of the loop itself, which every entity
// workflow's own VersionChanges include.
var VersionChanges = []versioning.Change{
	{ID: changeUpgrade, Max: 1}, // when a wake asks the run to move
}

// Run runs p until a pass ends it or ctx is cancelled. It continues as new, with the input
// p.Next gives, after a pass when the server suggests it (the history has grown long) or p
// asks for it, and before a pass when a wake asks it to move to the worker deployment's
// current version (the run is pinned to its own version; the next run starts on the current
// one); each time once every signal has been taken and every handler has finished.
func Run[In any](ctx workflow.Context, wf func(workflow.Context, In) error, p Process[In]) error {
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		p.Drain()
		if !p.Due() && !p.UpgradeAsked() {
			p.Wait(ctx)
			p.Drain()
		}
		if p.UpgradeAsked() && workflow.GetVersion(ctx, changeUpgrade, workflow.DefaultVersion, 1) == 1 {
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

// IsWake tells whether the payload of a resync signal is a wake: {"Wake":true}, which the
// workers of a worker deployment version that is no longer current send the runs pinned to it
// (workerdeployment.Keeper). The run then continues as new, on the current version, instead of
// resyncing. The decision rests on the signal, which the history holds, not on the server's
// TargetWorkerDeploymentVersionChanged, which a retried workflow task can be told otherwise
// than its history later says. Only keepers of releases that read wakes send them, and only to
// runs that say they are pinned to the keeper's own version (not as visibility lists them, which
// may still name a continuation an older release runs), so no other release reads one.
func IsWake(payload any) bool {
	fields, _ := payload.(map[string]any)
	wake, _ := fields["Wake"].(bool)
	return wake
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
