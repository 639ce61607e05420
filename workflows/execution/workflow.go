// Package execution holds the decisions of Work execution for one member cluster: an entity
// workflow per cluster gathers the Works that changed and has them applied in batches, retries
// what failed with backoff, re-applies everything periodically to heal drift, and ends when the
// Cluster is deleted. The applying itself is activities/execution's.
package execution

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/internal/jitter"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
	"github.com/karmadaflow/karmadaflow/workflows/workflowtask"
)

// Names under which the workflow, its signals and query are registered.
const (
	WorkflowName = "WorkExecution"
	SignalChange = "change"
	SignalResync = "resync"
	QueryState   = "state"
)

// Tunables of the loop.
const (
	SafetyResync   = 5 * time.Minute
	BatchSize      = 100
	ApplyTimeout   = 10 * time.Minute // one ApplyWorks call, a full pass included
	ApplyHeartbeat = 30 * time.Second // ApplyWorks heartbeats after each Work
	LocalBatch     = 10               // batches up to this size are applied by a local activity
)

// MaxSignalWorks bounds the Works one change signal names. At Kubernetes' longest names (253
// characters) and resourceVersions, a signal stays near 280 KB, below Temporal's 512 KB
// warning and far below its 2 MB limit, which refuses a larger signal on every retry. Senders
// split a larger change into several signals.
const MaxSignalWorks = 500

// changeApplyAsActivity versions the switch of large ApplyWorks batches from a local to a
// regular activity.
const changeApplyAsActivity = "apply-works-as-activity"

// changePassVersions versions passing the versions of changed Works on to ApplyWorks, which
// then reads them from the worker's cache.
const changePassVersions = "pass-work-versions"

// changeJitteredResync: the safety resync is spread by workflow ID (jitter.Spread), so that
// the workflows of many clusters started together do not resync together.
const changeJitteredResync = "jittered-resync"

// changeKeepFailed versions keeping failed Works for their retry when a batch of other
// Works runs first (before, that batch's result replaced the failures).
const changeKeepFailed = "keep-failed-works"

// changeEndWhenClusterGone versions ending the workflow when its Cluster is deleted, after
// releasing the Works left in its execution namespace and removing the namespace.
const changeEndWhenClusterGone = "end-when-cluster-gone"

// changeBoundCarriedWorks versions continuing as new without the Works still to apply when
// there are more than one payload holds: the new run's full pass applies every Work anyway.
const changeBoundCarriedWorks = "bound-carried-works"

// changePullClusters versions the Works of a Pull cluster being applied by its agent: a
// batch the control plane's side answers with Pull is run again on the cluster's own task
// queue (naming.PullTaskQueue), and the batches after it go there directly. It is asked only
// when a cluster first answers Pull, so the histories of Push clusters hold no marker.
const changePullClusters = "pull-clusters"

// changeAgentWatchesWorks versions leaving a Pull cluster's Works to its agent, which watches
// them itself: the control plane's full pass still makes the execution namespace, and nothing
// is scheduled on the cluster's own task queue any more (the agent holds no Temporal
// credential). It is asked when a cluster first answers Pull, after changePullClusters.
const changeAgentWatchesWorks = "pull-agent-watches-works"

// changeSlowAppliesAsActivity versions applying as a regular activity what is likely slow: a
// batch retried after a failure, and a batch whose local activity ran out of its time (bounded
// by the workflow task, package workflowtask), which runs again at once.
const changeSlowAppliesAsActivity = "slow-applies-as-activity"

// AgentScheduleToStart bounds how long a batch waited on a Pull cluster's task queue for its
// agent, in runs from before changeAgentWatchesWorks.
const AgentScheduleToStart = 30 * time.Second

// WorkflowID is the readable ID of the execution workflow of one cluster.
func WorkflowID(cluster string) string { return "execution/" + cluster }

// Change names Works of the cluster's execution namespace that changed.
type Change struct {
	// Work is the one Work each signal named before signals were batched into Works. No
	// starter sends it any more, but the histories of runs signalled so still hold it, and
	// replaying them needs it (test/replay: execution-member2-local-activity.json).
	Work  string   `json:",omitempty"`
	Works []string `json:",omitempty"`
	// Versions are the resourceVersions the changes were seen at, by Work name.
	Versions map[string]string `json:",omitempty"`
}

// names are the Works the change names.
func (c Change) names() []string {
	if c.Work == "" {
		return c.Works
	}
	return append([]string{c.Work}, c.Works...)
}

// Input starts a run; a continued run carries the Works still to apply.
type Input struct {
	Cluster string
	Pending []string `json:",omitempty"`
}

// State answers the state query.
type State struct {
	Pending    int
	Applied    int
	Deleted    int
	Failed     []string
	LastError  string
	Reconciles int
	LastFull   time.Time
}

var activities *act.Activities

// WorkExecution applies the Works of one cluster, for as long as the cluster exists.
func WorkExecution(ctx workflow.Context, in Input) error {
	e := &executor{cluster: in.Cluster, pending: newWorkNames(in.Pending), versions: map[string]string{}, full: true}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return e.state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "WorkExecution", "", in.Cluster); err != nil {
		return err
	}
	retry := &temporal.RetryPolicy{
		InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second, MaximumAttempts: 4,
	}
	ctx = workflowtask.WithLocalOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 2 * time.Minute,
		StartToCloseTimeout:    time.Minute,
		RetryPolicy:            retry,
	})
	// A large batch can take long when the API servers are busy: as a (heartbeating) activity
	// it does not hold the workflow task open the way a local activity does. A few Works (the
	// usual single change) stay a local activity, which is quicker by a workflow task.
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: ApplyTimeout,
		HeartbeatTimeout:    ApplyHeartbeat,
		RetryPolicy:         retry,
	})
	e.applyAsActivity = workflow.GetVersion(ctx, changeApplyAsActivity, workflow.DefaultVersion, 1) == 1
	e.passVersions = workflow.GetVersion(ctx, changePassVersions, workflow.DefaultVersion, 1) == 1
	e.keepFailed = workflow.GetVersion(ctx, changeKeepFailed, workflow.DefaultVersion, 1) == 1
	e.endWhenGone = workflow.GetVersion(ctx, changeEndWhenClusterGone, workflow.DefaultVersion, 1) == 1
	e.boundCarried = workflow.GetVersion(ctx, changeBoundCarriedWorks, workflow.DefaultVersion, 1) == 1
	e.slowAsActivity = workflow.GetVersion(ctx, changeSlowAppliesAsActivity, workflow.DefaultVersion, 1) == 1
	e.safetyResync = SafetyResync
	if workflow.GetVersion(ctx, changeJitteredResync, workflow.DefaultVersion, 1) == 1 {
		e.safetyResync = jitter.Spread(workflow.GetInfo(ctx).WorkflowExecution.ID, SafetyResync)
	}
	e.changes = workflow.GetSignalChannel(ctx, SignalChange)
	e.resyncs = entity.NewResyncs(ctx, SignalResync)
	return entity.Run(ctx, WorkExecution, e)
}

// executor is the process of one cluster's Work execution in the entity loop (package entity):
// a pass is due when Works changed, on a resync, on a retry and on the safety resync.
type executor struct {
	cluster string
	changes workflow.ReceiveChannel
	resyncs *entity.Resyncs
	// The branches of the run's version changes.
	applyAsActivity, passVersions, keepFailed, endWhenGone, boundCarried, slowAsActivity bool
	safetyResync                                                                         time.Duration

	pending  *workNames
	versions map[string]string // of pending Works, when the signals carried them
	full     bool              // the next pass re-applies everything (a new run does once)
	pull     bool              // the cluster is in Pull mode: its agent applies the Works
	retrying bool              // the pass retries Works that failed
	lastFull time.Time
	retryAt  time.Time
	failures int
	state    State
}

// record adds the Works a change names to those pending.
func (e *executor) record(c Change) {
	e.pending.add(c.names())
	if e.passVersions {
		// Setting keys is order-independent.
		//workflowcheck:ignore
		for name, version := range c.Versions {
			e.versions[name] = version
		}
	}
}

// Drain records the signals received.
func (e *executor) Drain() {
	var c Change
	for e.changes.ReceiveAsync(&c) {
		e.record(c)
		c = Change{}
	}
	e.resyncs.Drain(e.resync)
}

// resync asks for a full pass.
func (e *executor) resync(any) { e.full = true }

// UpgradeAsked tells whether a wake asked the run to move to the current version.
func (e *executor) UpgradeAsked() bool { return e.resyncs.UpgradeAsked() }

// Due tells whether a full pass or changed Works are waiting.
func (e *executor) Due() bool { return e.full || len(e.pending.list) > 0 }

// Wait blocks until a change or resync arrives, or the retry or the safety resync is due.
func (e *executor) Wait(ctx workflow.Context) {
	wakeAt := e.lastFull.Add(e.safetyResync)
	if !e.retryAt.IsZero() && (e.lastFull.IsZero() || e.retryAt.Before(wakeAt)) {
		wakeAt = e.retryAt
	}
	sel := workflow.NewSelector(ctx)
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel.AddFuture(workflow.NewTimer(timerCtx, max(wakeAt.Sub(workflow.Now(ctx)), time.Millisecond)), func(workflow.Future) {
		if slices.Contains(e.state.Failed, "*") || e.lastFull.IsZero() || !workflow.Now(ctx).Before(e.lastFull.Add(e.safetyResync)) {
			e.full = true
		} else {
			e.pending.extend(retryNames(e.state.Failed))
			e.retrying = true
		}
	})
	sel.AddReceive(e.changes, func(c workflow.ReceiveChannel, _ bool) {
		var ch Change
		c.Receive(ctx, &ch)
		e.record(ch)
	})
	e.resyncs.AddTo(sel, e.resync)
	sel.Select(ctx)
}

// Pass applies the pending Works in batches (or every Work, in a full pass) and schedules a
// retry of what failed. It ends the workflow when the Cluster is gone and its execution
// namespace removed.
func (e *executor) Pass(ctx workflow.Context) (end bool, err error) {
	batches := e.batches()
	futures := make([]workflow.Future, len(batches))
	local := make([]bool, len(batches))
	for i, b := range batches {
		switch {
		case e.pull && !b.All && e.agentWatches(ctx): // its agent applies it: nothing to do here
		case e.pull && !b.All: // a full pass asks the control plane's side first: is it still Pull?
			futures[i] = applyOnAgent(ctx, b)
		case e.applyAsActivity && (b.All || len(b.Works) > LocalBatch), e.slowAsActivity && e.retrying:
			futures[i] = workflow.ExecuteActivity(summary.Activity(ctx, "%s", applySummary(b)), activities.ApplyWorks, b)
		default:
			futures[i], local[i] = workflow.ExecuteLocalActivity(summary.Local(ctx, "%s", applySummary(b)), activities.ApplyWorks, b), true
		}
	}
	e.state.Reconciles++
	var failed []string
	lastErr := ""
	gone := false
	for i, f := range futures {
		if f == nil {
			continue // left to the agent
		}
		var res act.ApplyResult
		err := f.Get(ctx, &res)
		if e.slowAsActivity && local[i] && temporal.IsTimeoutError(err) {
			// A member too slow for a local activity: the batch again, as a regular one.
			res = act.ApplyResult{}
			err = workflow.ExecuteActivity(summary.Activity(ctx, "%s (again: too slow for a local activity)", applySummary(batches[i])),
				activities.ApplyWorks, batches[i]).Get(ctx, &res)
		}
		if err == nil && (batches[i].All || res.Pull) {
			e.pull = res.Pull && workflow.GetVersion(ctx, changePullClusters, workflow.DefaultVersion, 1) == 1
		}
		if err == nil && res.Pull && e.pull && !e.agentWatches(ctx) {
			res = act.ApplyResult{}
			err = applyOnAgent(ctx, batches[i]).Get(ctx, &res)
		}
		if err != nil {
			lastErr = err.Error()
			if batches[i].All {
				failed = append(failed, "*")
			} else {
				failed = append(failed, batches[i].Works...)
			}
			continue
		}
		gone = gone || res.ClusterGone
		e.state.Applied += res.Applied
		e.state.Deleted += res.Deleted
		failed = append(failed, res.Failed...)
		if res.Error != "" {
			lastErr = res.Error
		}
	}
	if e.endWhenGone && gone {
		removed, err := removeExecutionSpace(ctx, e.cluster)
		switch {
		case err != nil:
			lastErr = err.Error()
		case removed && (e.changes.Len() > 0 || e.resyncs.Len() > 0):
			// Asked for after the Cluster was found gone: it may be back. A new run looks again.
			return true, workflowtask.ContinueAsNew(ctx, WorkExecution, Input{Cluster: e.cluster})
		case removed:
			return true, nil
		}
		failed = append(failed, "*") // the Cluster is back, or the removal failed: a full pass again
	}
	if e.full && !slices.Contains(failed, "*") {
		e.lastFull = workflow.Now(ctx)
		e.state.LastFull = e.lastFull
	}
	var waiting []string // failed before, not tried in this pass: still due at retryAt
	if e.keepFailed && !e.full {
		waiting = slices.DeleteFunc(slices.Clone(e.state.Failed), func(name string) bool { return e.pending.has[name] })
	}
	e.full, e.pending, e.versions, e.retrying = false, newWorkNames(nil), map[string]string{}, false
	e.state.Failed, e.state.LastError, e.state.Pending = addNames(failed, waiting), lastErr, 0
	switch {
	case len(failed) > 0:
		e.failures++
		e.retryAt = workflow.Now(ctx).Add(entity.RetryDelay(e.failures, time.Second, time.Minute))
	case len(waiting) == 0:
		e.failures, e.retryAt = 0, time.Time{}
	}
	describe(ctx, e.cluster, e.state, e.retryAt)
	return false, nil
}

// batches are the ApplyWorks calls of a pass: every Work, or the pending ones in sorted
// batches of BatchSize.
func (e *executor) batches() []act.ApplyInput {
	if e.full {
		return []act.ApplyInput{{Cluster: e.cluster, All: true}}
	}
	var batches []act.ApplyInput
	slices.Sort(e.pending.list)
	for start := 0; start < len(e.pending.list); start += BatchSize {
		names := e.pending.list[start:min(start+BatchSize, len(e.pending.list))]
		batches = append(batches, act.ApplyInput{Cluster: e.cluster, Works: names, Versions: versionsOf(e.versions, names)})
	}
	return batches
}

// ContinueAsNewAsked: Work execution continues as new only when the server suggests it.
func (e *executor) ContinueAsNewAsked(workflow.Context) bool { return false }

// Next carries the Works still to apply, and those to retry, to the next run.
func (e *executor) Next() Input {
	carried := append(e.pending.list, retryNames(e.state.Failed)...)
	if e.boundCarried && len(carried) > MaxSignalWorks {
		carried = nil // too large an input to start the new run with; its full pass covers them
	}
	return Input{Cluster: e.cluster, Pending: carried}
}

// agentWatches tells whether the agent of this Pull cluster applies its Works by itself
// (changeAgentWatchesWorks); asked only once the cluster is known Pull.
func (e *executor) agentWatches(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, changeAgentWatchesWorks, workflow.DefaultVersion, 1) == 1
}

// applyOnAgent has a batch applied by the agent of a Pull cluster, on the cluster's own task
// queue: the branch of runs from before changeAgentWatchesWorks, for replay only (no agent
// polls that queue any more).
func applyOnAgent(ctx workflow.Context, b act.ApplyInput) workflow.Future {
	options := workflow.GetActivityOptions(ctx)
	options.TaskQueue = naming.PullTaskQueue(naming.BaseTaskQueue(workflow.GetInfo(ctx).TaskQueueName), b.Cluster)
	options.ScheduleToStartTimeout = AgentScheduleToStart
	ctx = workflow.WithActivityOptions(ctx, options)
	return workflow.ExecuteActivity(summary.Activity(ctx, "%s, by its agent", applySummary(b)), activities.ApplyWorks, b)
}

// removeExecutionSpace releases the Works of the gone cluster and removes its execution
// namespace; removed is false when the Cluster exists again.
func removeExecutionSpace(ctx workflow.Context, cluster string) (removed bool, err error) {
	var res act.RemoveResult
	remove := summary.Activity(ctx, "release the Works of deleted Cluster %s and delete its execution namespace", cluster)
	err = workflow.ExecuteActivity(remove, activities.RemoveExecutionSpace, cluster).Get(ctx, &res)
	return res.Removed, err
}
