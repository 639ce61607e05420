// Package clusterhealth holds the decisions of a member cluster's health: one entity workflow
// per Cluster probes it on an interval, keeps a Ready Cluster Ready until its probes have failed
// for the failure threshold, and ends when the Cluster is gone. The probe and the Ready
// condition it writes are activities/health's.
package clusterhealth

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
	"github.com/karmadaflow/karmadaflow/workflows/workflowtask"
)

// Names under which the workflow, its signal and query are registered.
const (
	WorkflowName = "ClusterHealth"
	SignalResync = "resync"
	QueryState   = "state"
)

// Defaults of the input.
const (
	// DefaultInterval is how often a cluster is probed.
	DefaultInterval = 10 * time.Second
	// DefaultFailureThreshold is how long probes must fail before Ready turns False (Karmada's
	// --cluster-failure-threshold).
	DefaultFailureThreshold = 30 * time.Second
)

// changeFailureThreshold versions holding Ready through failed probes for the failure
// threshold, and ending with a new run instead when a resync arrived for a Cluster found gone
// (the Cluster may have been created again).
const changeFailureThreshold = "failure-threshold"

// changePullClusters versions probing a Pull cluster through its agent: the probe runs on the
// cluster's own task queue (naming.PullTaskQueue), and a probe no agent takes within the
// interval is recorded by the control plane as not reachable. It is asked only when a cluster
// first answers Pull, so the histories of Push clusters hold no marker.
const changePullClusters = "pull-clusters"

// changeProbeAsActivity versions probing a cluster with a regular activity instead of a local
// one: a cluster that does not answer takes the probe's timeout (5 s, twice), longer than a
// workflow task may wait for its local activities (package workflowtask).
const changeProbeAsActivity = "probe-as-activity"

// ProbeTimeout bounds one probe activity, both of the probe's attempts to reach the cluster
// (5 s each) included.
const ProbeTimeout = 15 * time.Second

// WorkflowID is the readable ID of the health workflow of one cluster.
func WorkflowID(cluster string) string { return "cluster/" + cluster }

// Input starts a run.
type Input struct {
	Cluster  string
	Interval time.Duration `json:",omitempty"`
	// FailureThreshold is how long probes must fail before Ready turns False.
	FailureThreshold time.Duration `json:",omitempty"`
	// FailingSince is when the probes began to fail, in a continued run (zero: the last succeeded).
	FailingSince time.Time `json:",omitzero"`
}

// State answers the state query.
type State struct {
	Ready        bool
	Message      string
	Probes       int
	LastProbe    time.Time
	FailingSince time.Time `json:",omitzero"`
}

var activities *health.Activities

// ClusterHealth probes one cluster until its Cluster object is deleted.
func ClusterHealth(ctx workflow.Context, in Input) error {
	interval := in.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	threshold := in.FailureThreshold
	if threshold <= 0 {
		threshold = DefaultFailureThreshold
	}
	state := State{FailingSince: in.FailingSince}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "Cluster", "", in.Cluster); err != nil {
		return err
	}
	retry := &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 2}
	ctx = workflowtask.WithLocalOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: ProbeTimeout, RetryPolicy: retry})
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: ProbeTimeout, RetryPolicy: retry})
	thresholded := workflow.GetVersion(ctx, changeFailureThreshold, workflow.DefaultVersion, 1) == 1
	probeAsActivity := workflow.GetVersion(ctx, changeProbeAsActivity, workflow.DefaultVersion, 1) == 1
	resyncs := workflow.GetSignalChannel(ctx, SignalResync)
	phase := ""
	pull := false // the cluster is in Pull mode: its agent probes it
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		probe := health.ProbeInput{Cluster: in.Cluster}
		if thresholded {
			probe.HoldReady = HoldReady(state.FailingSince, workflow.Now(ctx), threshold)
		}
		var res health.ProbeResult
		var err error
		if pull {
			res, err = probeThroughAgent(ctx, probe, interval)
		} else {
			err = probeHere(ctx, probe, probeAsActivity).Get(ctx, &res)
			if err == nil && res.Pull && workflow.GetVersion(ctx, changePullClusters, workflow.DefaultVersion, 1) == 1 {
				res, err = probeThroughAgent(ctx, probe, interval)
			}
		}
		if err == nil && (pull || res.Pull) {
			pull = res.Pull
		}
		state.Probes++
		state.LastProbe = workflow.Now(ctx)
		if err == nil {
			if !res.Exists {
				if thresholded && resyncs.Len() > 0 {
					// Someone asked after the probe: the Cluster may be back. A new run probes again.
					return workflowtask.ContinueAsNew(ctx, ClusterHealth, Input{Cluster: in.Cluster, Interval: in.Interval, FailureThreshold: in.FailureThreshold})
				}
				return nil
			}
			state.Ready, state.Message = res.Ready, res.Message
			if thresholded {
				switch {
				case res.Reachable:
					state.FailingSince = time.Time{}
				case state.FailingSince.IsZero():
					state.FailingSince = state.LastProbe
				}
			}
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
			in.FailingSince = state.FailingSince
			return workflowtask.ContinueAsNew(ctx, ClusterHealth, in)
		}
	}
}

// probeHere probes the cluster from this worker: as a regular activity, or, in runs from
// before probe-as-activity, as a local one.
func probeHere(ctx workflow.Context, probe health.ProbeInput, asActivity bool) workflow.Future {
	if asActivity {
		return workflow.ExecuteActivity(summary.Activity(ctx, "probe the API server of cluster %s", probe.Cluster), activities.ProbeCluster, probe)
	}
	return workflow.ExecuteLocalActivity(summary.Local(ctx, "probe the API server of cluster %s", probe.Cluster), activities.ProbeCluster, probe)
}

// probeThroughAgent has the agent of a Pull cluster probe it, on the cluster's own task
// queue. When no agent takes the probe within the interval, the control plane records the
// cluster as not reachable, without dialling it.
func probeThroughAgent(ctx workflow.Context, probe health.ProbeInput, interval time.Duration) (health.ProbeResult, error) {
	agentCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              naming.PullTaskQueue(naming.BaseTaskQueue(workflow.GetInfo(ctx).TaskQueueName), probe.Cluster),
		ScheduleToStartTimeout: interval,
		StartToCloseTimeout:    15 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var res health.ProbeResult
	err := workflow.ExecuteActivity(summary.Activity(agentCtx, "probe cluster %s through its agent", probe.Cluster),
		activities.ProbeCluster, probe).Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	probe.Unanswered = fmt.Sprintf("the agent of Pull cluster %s did not answer a probe within %s: %s", probe.Cluster, interval, err)
	record := summary.Local(ctx, "record that the agent of cluster %s did not answer", probe.Cluster)
	res = health.ProbeResult{}
	err = workflow.ExecuteLocalActivity(record, activities.ProbeCluster, probe).Get(ctx, &res)
	return res, err
}

func readyPhase(ready bool) string {
	if ready {
		return "Ready"
	}
	return "NotReady"
}

// HoldReady tells whether a probe at now that fails leaves a Ready cluster Ready: the probes
// have been failing since failingSince (zero: this would be the first failure) for less than
// threshold.
func HoldReady(failingSince, now time.Time, threshold time.Duration) bool {
	if failingSince.IsZero() {
		failingSince = now
	}
	return now.Sub(failingSince) < threshold
}
