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
	"github.com/karmadaflow/karmadaflow/workflows/entity"
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

// changeAgentLease versions judging a Pull cluster on the control plane's side: the probe
// activity reads the lease its agent renews (and the Ready condition the agent wrote) and its
// result stands, where before the probe ran on the cluster's own task queue (the agent holds
// no Temporal credential any more). It is asked when a cluster first answers Pull.
const changeAgentLease = "pull-agent-lease"

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

// changeEntityLoop versions running the entity loop (package entity): the resyncs received
// before a probe are taken before it, and the run continues as new right after a probe, where
// before it did after the wait that follows one.
const changeEntityLoop = "entity-loop"

// ClusterHealth probes one cluster until its Cluster object is deleted.
func ClusterHealth(ctx workflow.Context, in Input) error {
	h := &prober{in: in, interval: in.Interval, threshold: in.FailureThreshold, state: State{FailingSince: in.FailingSince}, due: true}
	if h.interval <= 0 {
		h.interval = DefaultInterval
	}
	if h.threshold <= 0 {
		h.threshold = DefaultFailureThreshold
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return h.state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "Cluster", "", in.Cluster); err != nil {
		return err
	}
	retry := &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 2}
	ctx = workflowtask.WithLocalOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: ProbeTimeout, RetryPolicy: retry})
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: ProbeTimeout, RetryPolicy: retry})
	h.thresholded = workflow.GetVersion(ctx, changeFailureThreshold, workflow.DefaultVersion, 1) == 1
	h.probeAsActivity = workflow.GetVersion(ctx, changeProbeAsActivity, workflow.DefaultVersion, 1) == 1
	h.resyncs = entity.NewResyncs(ctx, SignalResync)
	if workflow.GetVersion(ctx, changeEntityLoop, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return h.loopBeforeEntityLoop(ctx)
	}
	return entity.Run(ctx, ClusterHealth, h)
}

// prober is the process of one cluster's health in the entity loop (package entity): a probe
// is due when the interval has passed since the last one, and on a resync.
type prober struct {
	in                  Input
	interval, threshold time.Duration
	// The branches of the run's version changes.
	thresholded, probeAsActivity bool
	resyncs                      *entity.Resyncs
	due                          bool   // a probe is due: the first, or one asked for
	pull                         bool   // the cluster is in Pull mode: its agent probes it
	phase                        string // the ReconcilePhase search attribute set last
	state                        State
}

// Drain takes the resyncs received: each asks for a probe now.
func (h *prober) Drain() { h.resyncs.Drain(h.resync) }

func (h *prober) resync(any) { h.due = true }

// UpgradeAsked tells whether a wake asked the run to move to the current version.
func (h *prober) UpgradeAsked() bool { return h.resyncs.UpgradeAsked() }

// Due tells whether a probe is due now.
func (h *prober) Due() bool { return h.due }

// Wait blocks for the interval, or until a resync arrives.
func (h *prober) Wait(ctx workflow.Context) {
	sel := workflow.NewSelector(ctx)
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel.AddFuture(workflow.NewTimer(timerCtx, h.interval), func(workflow.Future) { h.due = true })
	h.resyncs.AddTo(sel, h.resync)
	sel.Select(ctx)
}

// Pass probes the cluster; it ends the workflow when the Cluster is gone.
func (h *prober) Pass(ctx workflow.Context) (end bool, err error) {
	h.due = false
	return h.probe(ctx)
}

// ContinueAsNewAsked: a health workflow continues as new only when the server suggests it.
func (h *prober) ContinueAsNewAsked(workflow.Context) bool { return false }

// Next carries the input and when the probes began to fail to the next run.
func (h *prober) Next() Input {
	next := h.in
	next.FailingSince = h.state.FailingSince
	return next
}

// probe probes the cluster once and records the result in the state and the Cluster's Ready
// condition. It ends the workflow when the Cluster is gone, with a new run when a resync came
// after the probe (the Cluster may be back).
func (h *prober) probe(ctx workflow.Context) (end bool, err error) {
	probe := health.ProbeInput{Cluster: h.in.Cluster}
	if h.thresholded {
		probe.HoldReady = HoldReady(h.state.FailingSince, workflow.Now(ctx), h.threshold)
	}
	var res health.ProbeResult
	if h.pull && !byLease(ctx) {
		res, err = probeThroughAgent(ctx, probe, h.interval)
	} else {
		err = probeHere(ctx, probe, h.probeAsActivity).Get(ctx, &res)
		if err == nil && res.Pull && !byLease(ctx) && workflow.GetVersion(ctx, changePullClusters, workflow.DefaultVersion, 1) == 1 {
			res, err = probeThroughAgent(ctx, probe, h.interval)
		}
	}
	if err == nil && (h.pull || res.Pull) {
		h.pull = res.Pull
	}
	h.state.Probes++
	h.state.LastProbe = workflow.Now(ctx)
	if err != nil {
		return false, nil // the next probe tries again
	}
	if !res.Exists {
		if h.thresholded && h.resyncs.Len() > 0 {
			// Someone asked after the probe: the Cluster may be back. A new run probes again.
			return true, workflowtask.ContinueAsNew(ctx, ClusterHealth, Input{Cluster: h.in.Cluster, Interval: h.in.Interval, FailureThreshold: h.in.FailureThreshold})
		}
		return true, nil
	}
	h.state.Ready, h.state.Message = res.Ready, res.Message
	if h.thresholded {
		switch {
		case res.Reachable:
			h.state.FailingSince = time.Time{}
		case h.state.FailingSince.IsZero():
			h.state.FailingSince = h.state.LastProbe
		}
	}
	if p := readyPhase(res.Ready); p != h.phase {
		h.phase = p
		_ = searchattr.SetPhase(ctx, p)
	}
	return false, nil
}

// loopBeforeEntityLoop is the loop of runs started before entity-loop: probe, wait, take the
// resyncs, continue as new when suggested. It goes when no such run is left (docs/building-
// and-testing.md, "Retiring a GetVersion branch").
func (h *prober) loopBeforeEntityLoop(ctx workflow.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		if end, err := h.probe(ctx); end {
			return err
		}
		h.Wait(ctx)
		h.Drain()
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return workflowtask.ContinueAsNew(ctx, ClusterHealth, h.Next())
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

// byLease tells whether a Pull cluster is judged here by its agent's lease
// (changeAgentLease); asked only once the cluster is known Pull.
func byLease(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, changeAgentLease, workflow.DefaultVersion, 1) == 1
}

// probeThroughAgent has the agent of a Pull cluster probe it, on the cluster's own task
// queue: the branch of runs from before changeAgentLease, for replay only (no agent polls that
// queue any more). When no agent takes the probe within the interval, the control plane records the
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
