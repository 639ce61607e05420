// Package workflowtask owns what a workflow task may hold and how long it may take: the time
// local activities may use within a task, and the task timeout a run continues as new with.
//
// A task waits for its local activities; one still waiting at 80% of the workflow task timeout
// is heartbeated by the SDK (a round trip and three history events), and a worker that dies
// meanwhile holds the task until the timeout. So no local activity may outlast its task:
// whatever can take longer (a probe of a cluster that does not answer, a slow member) runs as
// a regular, heartbeating activity instead.
package workflowtask

import (
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/workflow"
)

// LocalShare is the part of the run's workflow task timeout one local activity may take, its
// retries included: below the SDK's heartbeat point of 80%.
const LocalShare = 0.75

// LocalBudget is how long a local activity of this run may take: LocalShare of its workflow
// task timeout (10 s, the server's default, when the run has none).
func LocalBudget(ctx workflow.Context) time.Duration {
	timeout := workflow.GetInfo(ctx).WorkflowTaskTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return time.Duration(LocalShare * float64(timeout))
}

// BoundLocal is opts with its schedule-to-close and start-to-close timeouts no longer than
// LocalBudget. Timeouts are not recorded in the history, so this changes no command.
func BoundLocal(ctx workflow.Context, opts workflow.LocalActivityOptions) workflow.LocalActivityOptions {
	budget := LocalBudget(ctx)
	if opts.ScheduleToCloseTimeout <= 0 || opts.ScheduleToCloseTimeout > budget {
		opts.ScheduleToCloseTimeout = budget
	}
	if opts.StartToCloseTimeout <= 0 || opts.StartToCloseTimeout > budget {
		opts.StartToCloseTimeout = budget
	}
	return opts
}

// WithLocalOptions sets the local activity options of ctx to BoundLocal(opts).
func WithLocalOptions(ctx workflow.Context, opts workflow.LocalActivityOptions) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, BoundLocal(ctx, opts))
}

// continuedRunTimeout is the worker's --workflow-task-timeout (zero: not set).
var continuedRunTimeout atomic.Int64

// SetContinuedRunTimeout makes the runs this process continues as new take timeout as their
// workflow task timeout: a changed --workflow-task-timeout then reaches running workflows at
// their next continue-as-new, not only new starts. Zero keeps each run's own.
func SetContinuedRunTimeout(timeout time.Duration) { continuedRunTimeout.Store(int64(timeout)) }

// continuedRunQueues is the task queue of each workflow type this process runs (nil: not set).
var continuedRunQueues atomic.Pointer[map[string]string]

// SetContinuedRunQueues makes the runs this process continues as new go on the task queue
// queues names for their workflow type: a run started on another queue (the single queue of
// every workflow before each capability had its own) moves to its capability's queue at its
// next continue-as-new. Types queues does not name keep their run's queue.
func SetContinuedRunQueues(queues map[string]string) { continuedRunQueues.Store(&queues) }

// ContinueAsNew is workflow.NewContinueAsNewError, with the workflow task timeout of
// SetContinuedRunTimeout and the task queue of SetContinuedRunQueues when they are set. Both
// are attributes of the command, which a replay does not compare (the Go SDK matches a
// continue-as-new command to its event by type alone), so they change no history.
func ContinueAsNew(ctx workflow.Context, wfn any, args ...any) error {
	if timeout := time.Duration(continuedRunTimeout.Load()); timeout > 0 {
		ctx = workflow.WithWorkflowTaskTimeout(ctx, timeout)
	}
	if queues := continuedRunQueues.Load(); queues != nil {
		if queue, ok := (*queues)[workflow.GetInfo(ctx).WorkflowType.Name]; ok {
			ctx = workflow.WithWorkflowTaskQueue(ctx, queue)
		}
	}
	// A run pinned to its worker's version starts the next one on the deployment's current
	// version: a new release takes the runs over as they continue, an old one never replays
	// what a newer one wrote.
	return workflow.NewContinueAsNewErrorWithOptions(ctx,
		workflow.ContinueAsNewErrorOptions{InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade}, wfn, args...)
}
