// Package execution holds the decisions of Work execution for one member cluster: an entity
// workflow per cluster gathers the Works that changed and has them applied in batches, retries
// what failed with backoff, re-applies everything periodically to heal drift, and ends when the
// Cluster is deleted. The applying itself is activities/execution's.
package execution

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/internal/jitter"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
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

// changeSlowAppliesAsActivity versions applying as a regular activity what is likely slow: a
// batch retried after a failure, and a batch whose local activity ran out of its time (bounded
// by the workflow task, package workflowtask), which runs again at once.
const changeSlowAppliesAsActivity = "slow-applies-as-activity"

// AgentScheduleToStart bounds how long a batch waits on a Pull cluster's task queue for its
// agent: an agent that is down fails the batch, which is retried with the usual backoff.
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
	var state State
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return state, nil }); err != nil {
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
	applyAsActivity := workflow.GetVersion(ctx, changeApplyAsActivity, workflow.DefaultVersion, 1) == 1
	passVersions := workflow.GetVersion(ctx, changePassVersions, workflow.DefaultVersion, 1) == 1
	keepFailed := workflow.GetVersion(ctx, changeKeepFailed, workflow.DefaultVersion, 1) == 1
	endWhenGone := workflow.GetVersion(ctx, changeEndWhenClusterGone, workflow.DefaultVersion, 1) == 1
	boundCarried := workflow.GetVersion(ctx, changeBoundCarriedWorks, workflow.DefaultVersion, 1) == 1
	slowAsActivity := workflow.GetVersion(ctx, changeSlowAppliesAsActivity, workflow.DefaultVersion, 1) == 1
	safetyResync := SafetyResync
	if workflow.GetVersion(ctx, changeJitteredResync, workflow.DefaultVersion, 1) == 1 {
		safetyResync = jitter.Spread(workflow.GetInfo(ctx).WorkflowExecution.ID, SafetyResync)
	}
	changes := workflow.GetSignalChannel(ctx, SignalChange)
	resyncs := workflow.GetSignalChannel(ctx, SignalResync)

	pending := newWorkNames(in.Pending)
	versions := map[string]string{} // of pending Works, when the signals carried them
	record := func(c Change) {
		pending.add(c.names())
		if passVersions {
			// Setting keys is order-independent.
			//workflowcheck:ignore
			for name, version := range c.Versions {
				versions[name] = version
			}
		}
	}
	full := true      // a new run re-applies everything once
	pull := false     // the cluster is in Pull mode: its agent applies the Works
	retrying := false // the round retries Works that failed
	var lastFull, retryAt time.Time
	failures := 0
	drain := func() {
		var c Change
		for changes.ReceiveAsync(&c) {
			record(c)
			c = Change{}
		}
		for resyncs.ReceiveAsync(nil) {
			full = true
		}
	}

	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		drain()
		if !full && len(pending.list) == 0 {
			wakeAt := lastFull.Add(safetyResync)
			if !retryAt.IsZero() && (lastFull.IsZero() || retryAt.Before(wakeAt)) {
				wakeAt = retryAt
			}
			sel := workflow.NewSelector(ctx)
			timerCtx, cancel := workflow.WithCancel(ctx)
			sel.AddFuture(workflow.NewTimer(timerCtx, max(wakeAt.Sub(workflow.Now(ctx)), time.Millisecond)), func(workflow.Future) {
				if slices.Contains(state.Failed, "*") || lastFull.IsZero() || !workflow.Now(ctx).Before(lastFull.Add(safetyResync)) {
					full = true
				} else {
					pending.extend(retryNames(state.Failed))
					retrying = true
				}
			})
			sel.AddReceive(changes, func(c workflow.ReceiveChannel, _ bool) {
				var ch Change
				c.Receive(ctx, &ch)
				record(ch)
			})
			sel.AddReceive(resyncs, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				full = true
			})
			sel.Select(ctx)
			cancel()
			drain()
		}

		var batches []act.ApplyInput
		if full {
			batches = []act.ApplyInput{{Cluster: in.Cluster, All: true}}
		} else {
			slices.Sort(pending.list)
			for start := 0; start < len(pending.list); start += BatchSize {
				names := pending.list[start:min(start+BatchSize, len(pending.list))]
				batches = append(batches, act.ApplyInput{Cluster: in.Cluster, Works: names, Versions: versionsOf(versions, names)})
			}
		}
		futures := make([]workflow.Future, len(batches))
		local := make([]bool, len(batches))
		for i, b := range batches {
			switch {
			case pull && !b.All: // a full pass asks the control plane's side first: is it still Pull?
				futures[i] = applyOnAgent(ctx, b)
			case applyAsActivity && (b.All || len(b.Works) > LocalBatch), slowAsActivity && retrying:
				futures[i] = workflow.ExecuteActivity(summary.Activity(ctx, "%s", applySummary(b)), activities.ApplyWorks, b)
			default:
				futures[i], local[i] = workflow.ExecuteLocalActivity(summary.Local(ctx, "%s", applySummary(b)), activities.ApplyWorks, b), true
			}
		}
		state.Reconciles++
		var failed []string
		lastErr := ""
		gone := false
		for i, f := range futures {
			var res act.ApplyResult
			err := f.Get(ctx, &res)
			if slowAsActivity && local[i] && temporal.IsTimeoutError(err) {
				// A member too slow for a local activity: the batch again, as a regular one.
				res = act.ApplyResult{}
				err = workflow.ExecuteActivity(summary.Activity(ctx, "%s (again: too slow for a local activity)", applySummary(batches[i])),
					activities.ApplyWorks, batches[i]).Get(ctx, &res)
			}
			if err == nil && (batches[i].All || res.Pull) {
				pull = res.Pull && workflow.GetVersion(ctx, changePullClusters, workflow.DefaultVersion, 1) == 1
			}
			if err == nil && res.Pull && pull {
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
			state.Applied += res.Applied
			state.Deleted += res.Deleted
			failed = append(failed, res.Failed...)
			if res.Error != "" {
				lastErr = res.Error
			}
		}
		if endWhenGone && gone {
			removed, err := removeExecutionSpace(ctx, in.Cluster)
			switch {
			case err != nil:
				lastErr = err.Error()
			case removed && (changes.Len() > 0 || resyncs.Len() > 0):
				// Asked for after the Cluster was found gone: it may be back. A new run looks again.
				return workflowtask.ContinueAsNew(ctx, WorkExecution, Input{Cluster: in.Cluster})
			case removed:
				return nil
			}
			failed = append(failed, "*") // the Cluster is back, or the removal failed: a full pass again
		}
		if full && !slices.Contains(failed, "*") {
			lastFull = workflow.Now(ctx)
			state.LastFull = lastFull
		}
		var waiting []string // failed before, not tried in this round: still due at retryAt
		if keepFailed && !full {
			waiting = slices.DeleteFunc(slices.Clone(state.Failed), func(name string) bool { return pending.has[name] })
		}
		full, pending, versions, retrying = false, newWorkNames(nil), map[string]string{}, false
		state.Failed, state.LastError, state.Pending = addNames(failed, waiting), lastErr, 0
		switch {
		case len(failed) > 0:
			failures++
			retryAt = workflow.Now(ctx).Add(min(time.Second<<min(failures-1, 6), time.Minute))
		case len(waiting) == 0:
			failures, retryAt = 0, time.Time{}
		}

		describe(ctx, in.Cluster, state, retryAt)

		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			drain()
			carried := append(pending.list, retryNames(state.Failed)...)
			if boundCarried && len(carried) > MaxSignalWorks {
				carried = nil // too large an input to start the new run with; its full pass covers them
			}
			return workflowtask.ContinueAsNew(ctx, WorkExecution, Input{Cluster: in.Cluster, Pending: carried})
		}
	}
}

// applyOnAgent has a batch applied by the agent of a Pull cluster, on the cluster's own task
// queue.
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

// applySummary says what an ApplyWorks call does.
func applySummary(in act.ApplyInput) string {
	if in.All {
		return "apply every Work of " + in.Cluster + " (a full pass)"
	}
	return fmt.Sprintf("apply %d changed Works to %s: %s", len(in.Works), in.Cluster, summary.List(in.Works))
}

// describe sets the current details the Temporal UI shows: what the last pass did, what failed
// and when it is retried.
func describe(ctx workflow.Context, cluster string, state State, retryAt time.Time) {
	var lines []string
	lines = append(lines, fmt.Sprintf("**Work execution of %s**\n", cluster))
	lines = append(lines, fmt.Sprintf("- passes: %d, last at %s", state.Reconciles, summary.Time(workflow.Now(ctx))))
	lines = append(lines, fmt.Sprintf("- last full pass: %s", summary.Time(state.LastFull)))
	lines = append(lines, fmt.Sprintf("- applied %d, deleted %d in all", state.Applied, state.Deleted))
	if len(state.Failed) == 0 {
		lines = append(lines, "- no retry pending")
	} else {
		failed := slices.Clone(state.Failed)
		if i := slices.Index(failed, "*"); i >= 0 {
			failed[i] = "the full pass"
		}
		lines = append(lines, fmt.Sprintf("- failed, retried at %s: %s", summary.Time(retryAt), summary.List(failed)))
	}
	if state.LastError != "" {
		lines = append(lines, fmt.Sprintf("- last error: %s", summary.Error(state.LastError)))
	}
	workflow.SetCurrentDetails(ctx, strings.Join(lines, "\n"))
}

// retryNames are the Works to apply again after a failure; "*" (a failed full pass) is left to
// the next full pass.
func retryNames(failed []string) []string {
	return slices.DeleteFunc(slices.Clone(failed), func(s string) bool { return s == "*" })
}

// addNames appends to names those of more it does not hold yet, each once.
func addNames(names []string, more []string) []string {
	w := newWorkNames(names)
	w.add(more)
	return w.list
}

// workNames are Work names in the order they were named, and the set of them, so that adding
// a name costs the same however many are held: a scan of the list made a batch of n names cost
// O(n²), over a second for 20,000, which Temporal's deadlock detector fails.
type workNames struct {
	list []string
	has  map[string]bool
}

// newWorkNames holds names as they are, repeated ones included: a run continued with a
// repeated name applies it as the run before would have.
func newWorkNames(names []string) *workNames {
	w := &workNames{list: slices.Clone(names), has: make(map[string]bool, len(names))}
	for _, name := range names {
		w.has[name] = true
	}
	return w
}

// add appends the names not held yet, each once.
func (w *workNames) add(names []string) {
	for _, name := range names {
		if name != "" && !w.has[name] {
			w.list = append(w.list, name)
			w.has[name] = true
		}
	}
}

// extend appends names as they are, as the retry of failed Works always has.
func (w *workNames) extend(names []string) {
	w.list = append(w.list, names...)
	for _, name := range names {
		w.has[name] = true
	}
}

// versionsOf picks the versions of names (nil when there are none).
func versionsOf(versions map[string]string, names []string) map[string]string {
	var out map[string]string
	for _, name := range names {
		if v, ok := versions[name]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}
