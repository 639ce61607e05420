package mcs

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/jitter"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
	"github.com/karmadaflow/karmadaflow/workflows/workflowtask"
)

// The entity workflow and its process in the entity loop (package entity): names, input and
// query state; a reconcile is due on a signal, the safety resync, a provider's grace running
// out or a retry.

// Names under which the workflow, its signals and its query are registered.
const (
	WorkflowName = "MultiClusterService"
	SignalChange = "change"
	SignalResync = "resync"
	QueryState   = "state"
)

// ResyncRequest is the optional payload of the resync signal. ContinueAsNew asks the run to
// continue as new once the resync is done (a fresh history, e.g. to record that path):
// temporal workflow signal --workflow-id mcs/<ns>/<name> --name resync --input '{"ContinueAsNew":true}'
//
// Wake asks the run only to continue as new on the worker deployment's current version
// (entity.IsWake), with what it knows: no reconcile.
type ResyncRequest struct {
	ContinueAsNew bool `json:",omitempty"`
	Wake          bool `json:",omitempty"`
}

// changeContinueAsNewOnRequest versions continuing as new when a resync asks for it.
const changeContinueAsNewOnRequest = "continue-as-new-on-request"

// SafetyResync is how often a full reconcile runs without any event, to catch drift; each
// workflow stretches or shrinks it by up to a fifth, by an amount fixed for its ID
// (jitter.Spread), so that workflows started together do not resync together.
const SafetyResync = 10 * time.Minute

// changeJitteredResync: the safety resync is spread by workflow ID.
const changeJitteredResync = "jittered-resync"

// WorkflowID is the readable ID of the workflow of one MultiClusterService.
func WorkflowID(namespace, name string) string { return "mcs/" + namespace + "/" + name }

// idPrefix is what precedes this run's own readable ID: the workflow-ID prefix of its
// installation (the starter's --workflow-id-prefix, empty by default), which the IDs of the
// workflows it signals carry too. A run under another ID (started by hand) has none.
func idPrefix(ctx workflow.Context, ref act.Ref) string {
	prefix, ok := strings.CutSuffix(workflow.GetInfo(ctx).WorkflowExecution.ID, WorkflowID(ref.Namespace, ref.Name))
	if !ok {
		return ""
	}
	return prefix
}

// Input starts a run; a continued run carries its pending work and the last status written.
type Input struct {
	Namespace  string
	Name       string
	Pending    Pending `json:",omitempty"`
	LastStatus string  `json:",omitempty"`
	// Carried is what the run this one continues knew (nil: a run the starter started, or
	// one that continued before runs carried it): with it the run starts with only the pending
	// work, not a full reconcile.
	Carried *Carried `json:",omitempty"`
}

// Carried is what a run hands the run it continues as: its last observation and plan, what
// it collected and the errors it met, and its state, so that a continue-as-new costs no full
// reconcile. The safety resync keeps its schedule (State.LastFullRun).
type Carried struct {
	Observation act.Observation
	Plan        Plan
	State       State
	CollectErrs map[string]string     `json:",omitempty"`
	DispatchErr map[string]string     `json:",omitempty"`
	Applied     []act.ConsumerApplied `json:",omitempty"`
	RetryAt     time.Time             `json:",omitempty"`
	// WorkCache: see reconciler.workCache.
	WorkCache string `json:",omitempty"`
}

// changeCarriedState versions starting a continued run from what its predecessor carried.
const changeCarriedState = "carried-state"

// State is what the state query answers: what the workflow believes now.
type State struct {
	Phase       string
	Generation  int64
	Providers   []string
	Consumers   []string
	Withdrawn   []string
	Unknown     []string
	Slices      map[string][]act.SliceRef // by provider
	Conditions  []act.Condition
	Reconciles  int
	Failures    int // reconciles that failed in a row; 0 once one ends well
	NextWakeUp  time.Time
	LastFullRun time.Time
}

// Phases, also upserted as the ReconcilePhase search attribute.
const (
	PhaseReconciling      = "Reconciling"
	PhaseReady            = "Ready"
	PhaseDegraded         = "Degraded"
	PhaseInvalid          = "Invalid"
	PhaseUnsupported      = "Unsupported"
	PhaseWaitingForSvc    = "WaitingForService"
	PhaseDeleted          = "Deleted"
	PhaseObservationError = "ObservationError"
)

var activities *act.Activities

// MultiClusterService is the entity workflow of one MultiClusterService.
func MultiClusterService(ctx workflow.Context, in Input) error {
	r := &reconciler{
		ref:         act.Ref{Namespace: in.Namespace, Name: in.Name},
		pending:     in.Pending,
		lastStatus:  in.LastStatus,
		collectErrs: map[string]string{},
		dispatchErr: map[string]string{},
		state:       State{Phase: PhaseReconciling, Slices: map[string][]act.SliceRef{}},
		worksUnread: true,
	}
	if in.Carried == nil || workflow.GetVersion(ctx, changeCarriedState, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		r.pending.Full = true // a run with nothing carried trusts nothing it did not read itself
	} else {
		r.restore(*in.Carried)
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return r.state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "MultiClusterService", in.Namespace, in.Name); err != nil {
		return err
	}
	r.safetyResync = SafetyResync
	if workflow.GetVersion(ctx, changeJitteredResync, workflow.DefaultVersion, 1) == 1 {
		r.safetyResync = jitter.Spread(workflow.GetInfo(ctx).WorkflowExecution.ID, SafetyResync)
	}
	r.changes = workflow.GetSignalChannel(ctx, SignalChange)
	r.resyncs = entity.NewResyncs(ctx, SignalResync)
	ctx = workflowtask.WithLocalOptions(ctx, localActivityOptions)
	return entity.Run(ctx, MultiClusterService, r)
}

// localActivityOptions are bounded by the run's workflow task (workflowtask.BoundLocal): a step
// that takes longer fails, and the reconcile is retried with backoff.
var localActivityOptions = workflow.LocalActivityOptions{
	ScheduleToCloseTimeout: 30 * time.Second,
	StartToCloseTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    100 * time.Millisecond,
		BackoffCoefficient: 2,
		MaximumInterval:    2 * time.Second,
		MaximumAttempts:    4,
	},
}

type reconciler struct {
	ref     act.Ref
	changes workflow.ReceiveChannel
	resyncs *entity.Resyncs
	// worksUnread: no reconcile has run to its end without a failure in this process since it
	// loaded the workflow (started it, or replayed it after another worker ran it, or after it
	// left the cache). Until one has, every reconcile here tells its activities until when
	// another worker may have written the Works (othersWroteBefore,
	// act.EarlierWrites.OthersWroteBefore): the end of the last reconcile before the
	// first that ran here, or the start of a run that continued another. It stays the same
	// moment across the reconciles here, so that a list of the Works that a failed one made
	// serves the next (workcache.Cache.ListedFor); readHere says it is set. These change
	// activity inputs only, never a command, so a history replays the same whatever they were
	// when written.
	worksUnread       bool
	readHere          bool
	othersWroteBefore time.Time
	// workCache names the Work cache that shows every write the workflow made to its Works
	// (act.EarlierWrites.WorkCache; empty when unknown), carried across
	// continue-as-new; reports is what the current reconcile learnt of it (workcache.go).
	workCache string
	reports   workCacheReports
	// lastReconcileEnd is the workflow time at the end of the last reconcile.
	lastReconcileEnd time.Time
	// safetyResync is this workflow's SafetyResync.
	safetyResync time.Duration
	pending      Pending
	lastStatus   string
	// askedToContinueAsNew: a resync asked the run to continue as new.
	askedToContinueAsNew bool
	obs                  *act.Observation
	plan                 Plan
	lastFull             time.Time
	retryAt              time.Time
	// Errors of the last attempt per provider and consumer, kept across partial reconciles.
	collectErrs map[string]string
	dispatchErr map[string]string
	applied     []act.ConsumerApplied

	timer       workflow.Future
	timerAt     time.Time
	cancelTimer workflow.CancelFunc

	state State
}

// Drain records the signals received.
func (r *reconciler) Drain() {
	var c Change
	for r.changes.ReceiveAsync(&c) {
		r.pending.add(c)
	}
	r.resyncs.Drain(r.resync) // decoded as before ResyncRequest existed
}

// resync asks for a full reconcile that re-applies everything in the members, and records a
// request to continue as new.
func (r *reconciler) resync(request any) {
	fields, _ := request.(map[string]any)
	r.pending.Full, r.pending.Members = true, true
	if ask, _ := fields["ContinueAsNew"].(bool); ask {
		r.askedToContinueAsNew = true
	}
}

// UpgradeAsked tells whether a wake asked the run to move to the current version.
func (r *reconciler) UpgradeAsked() bool { return r.resyncs.UpgradeAsked() }

// Due tells whether a signal, a timer or the last reconcile left work to do.
func (r *reconciler) Due() bool { return r.pending.any() }

// Pass reconciles what is pending and describes the result; it ends the workflow once the
// object is gone and everything removed.
func (r *reconciler) Pass(ctx workflow.Context) (end bool, err error) {
	if r.reconcile(ctx) {
		return true, nil
	}
	r.describe(ctx)
	return false, nil
}

// Next carries the pending work, the last status written and, once a reconcile observed the
// object, what the run knew, to the next run.
func (r *reconciler) Next() Input {
	in := Input{Namespace: r.ref.Namespace, Name: r.ref.Name, Pending: r.pending, LastStatus: r.lastStatus}
	if r.obs != nil {
		in.Carried = &Carried{Observation: *r.obs, Plan: r.plan, State: r.state, CollectErrs: r.collectErrs,
			DispatchErr: r.dispatchErr, Applied: r.applied, RetryAt: r.retryAt, WorkCache: r.workCache}
	}
	return in
}

// restore takes up what the run this one continues carried.
func (r *reconciler) restore(c Carried) {
	obs := c.Observation
	r.obs, r.plan, r.state = &obs, c.Plan, c.State
	if r.state.Slices == nil {
		r.state.Slices = map[string][]act.SliceRef{}
	}
	r.lastFull, r.retryAt, r.applied, r.workCache = c.State.LastFullRun, c.RetryAt, c.Applied, c.WorkCache
	if c.CollectErrs != nil {
		r.collectErrs = c.CollectErrs
	}
	if c.DispatchErr != nil {
		r.dispatchErr = c.DispatchErr
	}
}

// ContinueAsNewAsked tells whether a resync asked to continue as new (runs that received one
// before this was versioned ignore it).
func (r *reconciler) ContinueAsNewAsked(ctx workflow.Context) bool {
	return r.askedToContinueAsNew && workflow.GetVersion(ctx, changeContinueAsNewOnRequest, workflow.DefaultVersion, 1) == 1
}

// Wait blocks until a signal arrives or the next timed wake-up (safety resync, a provider's
// grace running out, or a retry) is due. One timer is kept across waits.
func (r *reconciler) Wait(ctx workflow.Context) {
	wakeAt := r.wakeUpAt()
	if r.timer == nil || !wakeAt.Equal(r.timerAt) {
		if r.cancelTimer != nil {
			r.cancelTimer()
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		r.timer, r.timerAt, r.cancelTimer = workflow.NewTimer(timerCtx, max(wakeAt.Sub(workflow.Now(ctx)), time.Millisecond)), wakeAt, cancel
		r.state.NextWakeUp = wakeAt
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(r.changes, func(c workflow.ReceiveChannel, _ bool) {
		var change Change
		c.Receive(ctx, &change)
		r.pending.add(change)
	})
	r.resyncs.AddTo(sel, r.resync) // one that does not decode is still a resync, as it always was
	sel.AddFuture(r.timer, func(workflow.Future) {
		r.timer, r.cancelTimer = nil, nil
		r.pending.Full = true
	})
	sel.Select(ctx)
}

// wakeUpAt is when the next timed full reconcile is due: the safety resync, a provider's
// grace running out, or a retry, whichever comes first.
func (r *reconciler) wakeUpAt() time.Time {
	wakeAt := r.lastFull.Add(r.safetyResync)
	if !r.plan.NextWithdrawal.IsZero() && r.plan.NextWithdrawal.Before(wakeAt) {
		wakeAt = r.plan.NextWithdrawal
	}
	if !r.retryAt.IsZero() && (r.lastFull.IsZero() || r.retryAt.Before(wakeAt)) {
		wakeAt = r.retryAt
	}
	return wakeAt
}
