// Package localactivity fits local activities in the workflow task that runs them. A task
// waits for its local activities; one still waiting at 80% of the workflow task timeout is
// heartbeated by the SDK (a round trip and three history events), and a worker that dies
// meanwhile holds the task until the timeout. So no local activity may outlast its task:
// whatever can take longer (a probe of a cluster that does not answer, a slow member) runs as
// a regular, heartbeating activity instead.
package localactivity

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Share is the part of the run's workflow task timeout one local activity may take, its
// retries included: below the SDK's heartbeat point of 80%.
const Share = 0.75

// Budget is how long a local activity of this run may take: Share of its workflow task
// timeout (10 s, the server's default, when the run has none).
func Budget(ctx workflow.Context) time.Duration {
	timeout := workflow.GetInfo(ctx).WorkflowTaskTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return time.Duration(Share * float64(timeout))
}

// Bounded is opts with its schedule-to-close and start-to-close timeouts no longer than
// Budget. Timeouts are not recorded in the history, so this changes no command.
func Bounded(ctx workflow.Context, opts workflow.LocalActivityOptions) workflow.LocalActivityOptions {
	budget := Budget(ctx)
	if opts.ScheduleToCloseTimeout <= 0 || opts.ScheduleToCloseTimeout > budget {
		opts.ScheduleToCloseTimeout = budget
	}
	if opts.StartToCloseTimeout <= 0 || opts.StartToCloseTimeout > budget {
		opts.StartToCloseTimeout = budget
	}
	return opts
}

// With sets the local activity options of ctx to Bounded(opts).
func With(ctx workflow.Context, opts workflow.LocalActivityOptions) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, Bounded(ctx, opts))
}
