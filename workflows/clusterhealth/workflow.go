// Package clusterhealth holds the decisions of a member cluster's health: one entity workflow
// per Cluster probes it on an interval and ends when the Cluster is gone.
package clusterhealth

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/workflows/searchattr"
)

// Names under which the workflow, its signal and query are registered.
const (
	WorkflowName = "ClusterHealth"
	SignalResync = "resync"
	QueryState   = "state"
)

// DefaultInterval is how often a cluster is probed unless the input says otherwise.
const DefaultInterval = 10 * time.Second

// WorkflowID is the readable ID of the health workflow of one cluster.
func WorkflowID(cluster string) string { return "cluster/" + cluster }

// Input starts a run.
type Input struct {
	Cluster  string
	Interval time.Duration `json:",omitempty"`
}

// State answers the state query.
type State struct {
	Ready     bool
	Message   string
	Probes    int
	LastProbe time.Time
}

var activities *health.Activities

// ClusterHealth probes one cluster until its Cluster object is deleted.
func ClusterHealth(ctx workflow.Context, in Input) error {
	interval := in.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	var state State
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "Cluster", "", in.Cluster); err != nil {
		return err
	}
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 15 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 2},
	})
	resyncs := workflow.GetSignalChannel(ctx, SignalResync)
	phase := ""
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		var res health.ProbeResult
		err := workflow.ExecuteLocalActivity(ctx, activities.ProbeCluster, in.Cluster).Get(ctx, &res)
		state.Probes++
		state.LastProbe = workflow.Now(ctx)
		if err == nil {
			if !res.Exists {
				return nil
			}
			state.Ready, state.Message = res.Ready, res.Message
			if p := readyPhase(res.Ready); p != phase {
				phase = p
				_ = searchattr.SetPhase(ctx, p)
			}
		}

		sel := workflow.NewSelector(ctx)
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, interval), func(workflow.Future) {})
		sel.AddReceive(resyncs, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		cancel()
		for resyncs.ReceiveAsync(nil) {
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return workflow.NewContinueAsNewError(ctx, ClusterHealth, in)
		}
	}
}

func readyPhase(ready bool) string {
	if ready {
		return "Ready"
	}
	return "NotReady"
}
