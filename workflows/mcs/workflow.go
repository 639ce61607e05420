// Package mcs holds the decisions of a MultiClusterService: one entity workflow per object
// propagates its Service, collects EndpointSlices from providers and dispatches them to every
// consumer, keeps the status conditions, and removes everything when the object goes.
package mcs

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

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
type ResyncRequest struct {
	ContinueAsNew bool `json:",omitempty"`
}

// changeContinueAsNewOnRequest versions continuing as new when a resync asks for it.
const changeContinueAsNewOnRequest = "continue-as-new-on-request"

// changeCollectAndDispatch versions a provider's slice change handled by one activity that
// collects and dispatches at once, in place of collecting first and dispatching after.
const changeCollectAndDispatch = "collect-and-dispatch"

// SafetyResync is how often a full reconcile runs without any event, to catch drift.
const SafetyResync = 10 * time.Minute

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

// ChangeKind says what changed, so the workflow redoes only what it affects.
type ChangeKind string

const (
	ChangeSpec           ChangeKind = "spec"           // the MultiClusterService or its Service
	ChangeClusters       ChangeKind = "clusters"       // a Cluster joined, left or changed health
	ChangeEndpointSlices ChangeKind = "endpointslices" // slices changed in Change.Cluster
	ChangeWorks          ChangeKind = "works"          // the status of a dispatched Work changed
)

// Change is the payload of the change signal the starter sends.
type Change struct {
	Kind    ChangeKind
	Cluster string `json:",omitempty"`
	// DetectedAt is when the starter saw the change, for the sync-duration metrics.
	DetectedAt time.Time `json:",omitempty"`
}

// Input starts a run; a continued run carries its pending work and the last status written.
type Input struct {
	Namespace  string
	Name       string
	Pending    Pending `json:",omitempty"`
	LastStatus string  `json:",omitempty"`
}

// Pending is the work the signals received so far ask for.
type Pending struct {
	Full      bool     `json:",omitempty"` // re-read and redo everything
	Providers []string `json:",omitempty"` // providers whose slices changed
	Applied   bool     `json:",omitempty"` // re-check the dispatched Works' Applied state
	// Members asks the member clusters' Work execution to re-apply everything (a user's
	// resync: objects deleted by hand in a member come back).
	Members bool `json:",omitempty"`
	// DetectedAt is the earliest detection time of the pending changes.
	DetectedAt time.Time `json:",omitempty"`
}

func (p Pending) any() bool { return p.Full || p.Applied || len(p.Providers) > 0 }

func (p *Pending) add(c Change) {
	if !c.DetectedAt.IsZero() && (p.DetectedAt.IsZero() || c.DetectedAt.Before(p.DetectedAt)) {
		p.DetectedAt = c.DetectedAt
	}
	switch c.Kind {
	case ChangeEndpointSlices:
		if !slices.Contains(p.Providers, c.Cluster) {
			p.Providers = append(p.Providers, c.Cluster)
		}
	case ChangeWorks:
		p.Applied = true
	default:
		p.Full = true
	}
}

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
	Failures    int
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
	}
	r.pending.Full = true // a new run trusts nothing it did not read itself
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return r.state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "MultiClusterService", in.Namespace, in.Name); err != nil {
		return err
	}
	changes := workflow.GetSignalChannel(ctx, SignalChange)
	resyncs := workflow.GetSignalChannel(ctx, SignalResync)
	ctx = workflow.WithLocalActivityOptions(ctx, localActivityOptions)

	for {
		if err := ctx.Err(); err != nil {
			return err // cancelled: stop where we are
		}
		r.drain(changes, resyncs)
		if !r.pending.any() {
			r.wait(ctx, changes, resyncs)
			r.drain(changes, resyncs)
		}
		finished := r.reconcile(ctx)
		if finished {
			return nil
		}
		r.describe(ctx)
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || r.continueAsNewAsked(ctx) {
			r.drain(changes, resyncs)
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, MultiClusterService, Input{
				Namespace: in.Namespace, Name: in.Name, Pending: r.pending, LastStatus: r.lastStatus,
			})
		}
	}
}

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
	ref        act.Ref
	pending    Pending
	lastStatus string
	// askedToContinueAsNew: a resync asked the run to continue as new.
	askedToContinueAsNew bool
	obs                  *act.Observation
	plan                 Plan
	lastFull             time.Time
	retryAt              time.Time
	failures             int
	// Errors of the last attempt per provider and consumer, kept across partial reconciles.
	collectErrs map[string]string
	dispatchErr map[string]string
	applied     []act.ConsumerApplied

	timer       workflow.Future
	timerAt     time.Time
	cancelTimer workflow.CancelFunc

	state State
}

func (r *reconciler) drain(changes, resyncs workflow.ReceiveChannel) {
	var c Change
	for changes.ReceiveAsync(&c) {
		r.pending.add(c)
	}
	var request any // decoded as before ResyncRequest existed: any payload is a resync
	for resyncs.ReceiveAsync(&request) {
		r.resync(request)
		request = nil
	}
}

// resync asks for a full reconcile that re-applies everything in the members, and records a
// request to continue as new.
func (r *reconciler) resync(request any) {
	r.pending.Full, r.pending.Members = true, true
	fields, _ := request.(map[string]any)
	if ask, _ := fields["ContinueAsNew"].(bool); ask {
		r.askedToContinueAsNew = true
	}
}

// continueAsNewAsked tells whether a resync asked to continue as new (runs that received one
// before this was versioned ignore it).
func (r *reconciler) continueAsNewAsked(ctx workflow.Context) bool {
	return r.askedToContinueAsNew && workflow.GetVersion(ctx, changeContinueAsNewOnRequest, workflow.DefaultVersion, 1) == 1
}

// wait blocks until a signal arrives or the next timed wake-up (safety resync, a provider's
// grace running out, or a retry) is due. One timer is kept across waits.
func (r *reconciler) wait(ctx workflow.Context, changes, resyncs workflow.ReceiveChannel) {
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
	sel.AddReceive(changes, func(c workflow.ReceiveChannel, _ bool) {
		var change Change
		c.Receive(ctx, &change)
		r.pending.add(change)
	})
	sel.AddReceive(resyncs, func(c workflow.ReceiveChannel, _ bool) {
		var request any
		c.ReceiveAsync(&request) // one that does not decode is still a resync, as it always was
		r.resync(request)
	})
	sel.AddFuture(r.timer, func(workflow.Future) {
		r.timer, r.cancelTimer = nil, nil
		r.pending.Full = true
	})
	sel.Select(ctx)
}

// wakeUpAt is when the next timed full reconcile is due: the safety resync, a provider's
// grace running out, or a retry, whichever comes first.
func (r *reconciler) wakeUpAt() time.Time {
	wakeAt := r.lastFull.Add(SafetyResync)
	if !r.plan.NextWithdrawal.IsZero() && r.plan.NextWithdrawal.Before(wakeAt) {
		wakeAt = r.plan.NextWithdrawal
	}
	if !r.retryAt.IsZero() && (r.lastFull.IsZero() || r.retryAt.Before(wakeAt)) {
		wakeAt = r.retryAt
	}
	return wakeAt
}

// reconcile does what is pending and reports whether the workflow is finished (the object is
// gone and everything it caused removed).
func (r *reconciler) reconcile(ctx workflow.Context) (finished bool) {
	pending := r.pending
	r.pending = Pending{}
	r.state.Reconciles++
	now := workflow.Now(ctx)

	if pending.Full || r.obs == nil {
		var obs act.Observation
		observe := summary.Local(ctx, "read MultiClusterService %s, its Service and the Clusters", r.ref)
		if err := workflow.ExecuteLocalActivity(observe, activities.ObserveMCS, r.ref).Get(ctx, &obs); err != nil {
			r.fail(ctx, now, PhaseObservationError)
			return false
		}
		r.obs, r.lastFull, r.state.LastFullRun = &obs, now, now
		r.state.Generation = obs.Generation
		pending.Full = true
	}
	obs := *r.obs

	switch {
	case !obs.Exists || obs.Deleting:
		return r.remove(ctx, now, obs)
	case !obs.HasFinalizer:
		add := summary.Local(ctx, "add the finalizer to MultiClusterService %s", r.ref)
		if err := workflow.ExecuteLocalActivity(add, activities.AddFinalizer, r.ref).Get(ctx, nil); err != nil {
			r.fail(ctx, now, PhaseReconciling)
			return false
		}
		r.obs.HasFinalizer = true
	}

	switch {
	case len(obs.Invalid) > 0:
		// No retries: nothing changes until the spec does.
		r.settle(ctx, PhaseInvalid, serviceOnlyConditions(networkingv1alpha1.ReasonInvalidSpec, "invalid spec: "+strings.Join(obs.Invalid, "; ")))
		return false
	case !obs.CrossCluster:
		if r.deleteWorks(ctx, now) {
			r.settle(ctx, PhaseUnsupported, serviceOnlyConditions(networkingv1alpha1.ReasonUnsupportedType,
				"type LoadBalancer needs a cloud load balancer, which karmadaflow does not provide; only CrossCluster is served"))
		}
		return false
	case !obs.ServiceExists:
		if r.deleteWorks(ctx, now) {
			r.settle(ctx, PhaseWaitingForSvc, serviceOnlyConditions(networkingv1alpha1.ReasonServiceAppliedFailed,
				"Service "+r.ref.String()+" not found in the control plane"))
		}
		return false
	}

	plan := MakePlan(obs, now)
	r.plan = plan
	r.state.Providers, r.state.Consumers, r.state.Withdrawn = plan.Providers, plan.Consumers, plan.Withdrawn
	r.state.Unknown = union(plan.UnknownProviders, plan.UnknownConsumers)
	failed := false
	var out Outcome

	if pending.Full {
		in := act.PropagateServiceInput{MCS: r.ref, Clusters: plan.ServiceClusters(), Ports: obs.Ports, DetectedAt: pending.DetectedAt,
			Unready: notReady(obs.Clusters)}
		propagate := summary.Local(ctx, "propagate Service %s to %s", r.ref, summary.List(in.Clusters))
		if err := workflow.ExecuteLocalActivity(propagate, activities.PropagateService, in).Get(ctx, nil); err != nil {
			out.ServiceErr, failed = errorMessage(err), true
		}
	}

	if pending.Full && !r.prune(ctx, plan) {
		failed = true
	}
	var dispatchChanged bool
	if !pending.Full && len(pending.Providers) > 0 &&
		workflow.GetVersion(ctx, changeCollectAndDispatch, workflow.DefaultVersion, 1) == 1 {
		dispatchChanged = r.collectAndDispatch(ctx, plan, obs, pending)
	} else {
		dispatchChanged = r.dispatch(ctx, plan, obs, pending, r.collect(ctx, plan, pending))
	}
	if pending.Full || pending.Applied || dispatchChanged {
		in := act.ObserveAppliedInput{MCS: r.ref, Consumers: plan.Consumers, Announced: pending.Applied}
		observe := summary.Local(ctx, "check that the EndpointSlices of %s are applied in %s", r.ref, summary.List(in.Consumers))
		if err := workflow.ExecuteLocalActivity(observe, activities.ObserveApplied, in).Get(ctx, &r.applied); err != nil {
			failed = true
		}
	}
	failed = failed || len(r.collectErrs) > 0 || len(r.dispatchErr) > 0
	if pending.Members {
		resyncExecution(ctx, idPrefix(ctx, r.ref), plan.ServiceClusters())
	}

	out.CollectErrs, out.DispatchErr, out.Applied = r.collectErrs, r.dispatchErr, r.applied
	for _, c := range obs.Clusters {
		if !c.Ready && slices.Contains(plan.Consumers, c.Name) {
			out.Unreachable = append(out.Unreachable, c.Name)
		}
	}
	phase := PhaseReady
	if failed || len(plan.Withdrawn) > 0 || len(r.state.Unknown) > 0 {
		phase = PhaseDegraded
	}
	r.writeStatus(ctx, conditions(plan, out))
	r.setPhase(ctx, phase)
	if failed {
		r.scheduleRetry(now)
	} else {
		r.failures, r.retryAt = 0, time.Time{}
	}
	return false
}

// collect records the slices of the providers that changed (all providers on a full
// reconcile, except withdrawn ones) and returns the providers whose collected Works changed.
func (r *reconciler) collect(ctx workflow.Context, plan Plan, pending Pending) []string {
	targets := plan.Providers
	if !pending.Full {
		targets = nil
		for _, p := range plan.Providers {
			if slices.Contains(pending.Providers, p) {
				targets = append(targets, p)
			}
		}
	}
	// Deleting keys is order-independent.
	//workflowcheck:ignore
	for p := range r.collectErrs {
		if !slices.Contains(plan.Providers, p) {
			delete(r.collectErrs, p)
		}
	}
	futures := make([]workflow.Future, 0, len(targets))
	for _, p := range targets {
		if slices.Contains(plan.Withdrawn, p) {
			futures = append(futures, nil)
			continue
		}
		collect := summary.Local(ctx, "collect EndpointSlices of %s from %s", r.ref, p)
		futures = append(futures, workflow.ExecuteLocalActivity(collect, activities.CollectEndpointSlices, act.CollectInput{MCS: r.ref, Provider: p}))
	}
	var changed []string
	for i, p := range targets {
		if futures[i] == nil {
			continue
		}
		var res act.CollectResult
		if err := futures[i].Get(ctx, &res); err != nil {
			r.collectErrs[p] = errorMessage(err)
			continue
		}
		delete(r.collectErrs, p)
		r.state.Slices[p] = res.Slices
		if res.Changed || pending.Full {
			changed = append(changed, p)
		}
	}
	return changed
}

// dispatch gives every consumer the slices of its sources. A full reconcile makes each
// consumer hold exactly its sources' slices; otherwise only the changed providers are synced.
// Consumers are dispatched in parallel; one consumer's failure is recorded for it alone.
func (r *reconciler) dispatch(ctx workflow.Context, plan Plan, obs act.Observation, pending Pending, changed []string) bool {
	full := pending.Full
	// Deleting keys is order-independent.
	//workflowcheck:ignore
	for c := range r.dispatchErr {
		if !slices.Contains(plan.Consumers, c) {
			delete(r.dispatchErr, c)
		}
	}
	type call struct {
		consumer string
		future   workflow.Future
	}
	unready := notReady(obs.Clusters)
	var calls []call
	for _, c := range plan.Consumers {
		in := act.DispatchInput{MCS: r.ref, Consumer: c, Ports: obs.Ports, Exclusive: full, DetectedAt: pending.DetectedAt}
		if slices.Contains(unready, c) {
			in.Unready = []string{c}
		}
		for _, p := range plan.Sources(c) {
			if full || slices.Contains(changed, p) {
				in.Providers = append(in.Providers, p)
			}
		}
		if !full && len(in.Providers) == 0 {
			continue
		}
		calls = append(calls, call{c, workflow.ExecuteLocalActivity(r.dispatchSummary(ctx, in), activities.DispatchEndpointSlices, in)})
	}
	anyChanged := false
	for _, c := range calls {
		var res act.DispatchResult
		if err := c.future.Get(ctx, &res); err != nil {
			r.dispatchErr[c.consumer] = errorMessage(err)
			continue
		}
		delete(r.dispatchErr, c.consumer)
		anyChanged = anyChanged || res.Changed
	}
	return anyChanged
}

// collectAndDispatch handles the slice changes of providers on a partial reconcile: one
// activity per changed provider collects its slices and dispatches them to each of its
// consumers at once, so that no consumer waits for the collected Work to be written.
func (r *reconciler) collectAndDispatch(ctx workflow.Context, plan Plan, obs act.Observation, pending Pending) bool {
	type call struct {
		in     act.CollectAndDispatchInput
		future workflow.Future
	}
	unready := notReady(obs.Clusters)
	var calls []call
	for _, p := range plan.Providers {
		if !slices.Contains(pending.Providers, p) || slices.Contains(plan.Withdrawn, p) {
			continue
		}
		in := act.CollectAndDispatchInput{MCS: r.ref, Provider: p}
		var consumers []string
		for _, c := range plan.Consumers {
			if !slices.Contains(plan.Sources(c), p) {
				continue
			}
			d := act.DispatchInput{MCS: r.ref, Consumer: c, Providers: []string{p}, Ports: obs.Ports, DetectedAt: pending.DetectedAt}
			if slices.Contains(unready, c) {
				d.Unready = []string{c}
			}
			in.Dispatch = append(in.Dispatch, d)
			consumers = append(consumers, c)
		}
		work := summary.Local(ctx, "collect EndpointSlices of %s from %s and dispatch them to %s", r.ref, p, summary.List(consumers))
		calls = append(calls, call{in, workflow.ExecuteLocalActivity(work, activities.CollectAndDispatch, in)})
	}
	anyChanged := false
	failed := map[string]bool{} // consumers, over every provider's call
	var dispatched []string
	for _, c := range calls {
		p := c.in.Provider
		var res act.CollectAndDispatchResult
		if err := c.future.Get(ctx, &res); err != nil {
			r.collectErrs[p] = errorMessage(err)
			continue
		}
		r.state.Slices[p] = res.Collect.Slices
		if res.CollectErr != "" {
			r.collectErrs[p] = res.CollectErr
		} else {
			delete(r.collectErrs, p)
		}
		for _, d := range c.in.Dispatch {
			if msg, ok := res.DispatchErrs[d.Consumer]; ok {
				r.dispatchErr[d.Consumer], failed[d.Consumer] = msg, true
				continue
			}
			dispatched = append(dispatched, d.Consumer)
			anyChanged = anyChanged || res.Dispatched[d.Consumer].Changed
		}
	}
	for _, c := range dispatched {
		if !failed[c] {
			delete(r.dispatchErr, c)
		}
	}
	return anyChanged
}

// notReady names the clusters that are not Ready.
func notReady(clusters []act.ClusterState) []string {
	var names []string
	for _, c := range clusters {
		if !c.Ready {
			names = append(names, c.Name)
		}
	}
	return names
}

// prune removes the collected Works of clusters that are no longer providers and the
// dispatched Works of clusters that are no longer consumers.
func (r *reconciler) prune(ctx workflow.Context, plan Plan) bool {
	collected := workflow.ExecuteLocalActivity(summary.Local(ctx, "delete the EndpointSlices of %s collected from clusters other than %s", r.ref, summary.List(plan.Providers)),
		activities.DeleteWorks, act.DeleteWorksInput{MCS: r.ref, Roles: []string{naming.RoleCollected}, ExceptClusters: plan.Providers})
	dispatched := workflow.ExecuteLocalActivity(summary.Local(ctx, "delete the EndpointSlices of %s dispatched to clusters other than %s", r.ref, summary.List(plan.Consumers)),
		activities.DeleteWorks, act.DeleteWorksInput{MCS: r.ref, Roles: []string{naming.RoleDispatched}, ExceptClusters: plan.Consumers})
	errCollected, errDispatched := collected.Get(ctx, nil), dispatched.Get(ctx, nil)
	return errCollected == nil && errDispatched == nil
}

// remove deletes every Work of the MultiClusterService, then releases the finalizer.
func (r *reconciler) remove(ctx workflow.Context, now time.Time, obs act.Observation) bool {
	r.setPhase(ctx, PhaseDeleted)
	if !r.deleteWorks(ctx, now) {
		return false
	}
	if obs.Exists && obs.HasFinalizer {
		release := summary.Local(ctx, "remove the finalizer from MultiClusterService %s", r.ref)
		if err := workflow.ExecuteLocalActivity(release, activities.RemoveFinalizer, r.ref).Get(ctx, nil); err != nil {
			r.fail(ctx, now, PhaseDeleted)
			return false
		}
	}
	return true
}

func (r *reconciler) deleteWorks(ctx workflow.Context, now time.Time) bool {
	remove := summary.Local(ctx, "delete every Work of %s in every cluster", r.ref)
	if err := workflow.ExecuteLocalActivity(remove, activities.DeleteWorks, act.DeleteWorksInput{MCS: r.ref}).Get(ctx, nil); err != nil {
		r.fail(ctx, now, r.state.Phase)
		return false
	}
	r.state.Slices = map[string][]act.SliceRef{}
	return true
}

// settle records a state that needs no retry.
func (r *reconciler) settle(ctx workflow.Context, phase string, conds []act.Condition) {
	r.writeStatus(ctx, conds)
	r.setPhase(ctx, phase)
	r.failures, r.retryAt = 0, time.Time{}
	r.plan = Plan{}
}

func (r *reconciler) fail(ctx workflow.Context, now time.Time, phase string) {
	r.setPhase(ctx, phase)
	r.pending.Full = true
	r.scheduleRetry(now)
}

// scheduleRetry sets the next full reconcile after a failure: 1s, 2s, 4s ... up to a minute.
func (r *reconciler) scheduleRetry(now time.Time) {
	r.failures++
	r.state.Failures = r.failures
	delay := min(time.Second<<min(r.failures-1, 6), time.Minute)
	r.retryAt = now.Add(delay)
}

// writeStatus writes the conditions unless they equal what was written last.
func (r *reconciler) writeStatus(ctx workflow.Context, conds []act.Condition) {
	r.state.Conditions = conds
	key := statusKey(r.state.Generation, conds)
	if key == r.lastStatus {
		return
	}
	in := act.StatusInput{MCS: r.ref, Generation: r.state.Generation, Conditions: conds, Withdrawn: r.state.Withdrawn}
	write := summary.Local(ctx, "write the status of %s: %s", r.ref, conditionList(conds))
	if err := workflow.ExecuteLocalActivity(write, activities.WriteStatus, in).Get(ctx, nil); err != nil {
		r.pending.Full = true
		r.scheduleRetry(workflow.Now(ctx))
		return
	}
	r.lastStatus = key
}

func (r *reconciler) setPhase(ctx workflow.Context, phase string) {
	if r.state.Phase == phase {
		return
	}
	r.state.Phase = phase
	_ = searchattr.SetPhase(ctx, phase)
}

func statusKey(generation int64, conds []act.Condition) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(generation, 10))
	for _, c := range conds {
		b.WriteString("|" + c.Type + "=" + c.Status + "/" + c.Reason + "/" + c.Message)
	}
	return b.String()
}

// errorMessage is the message of an activity error without the SDK's wrapping.
func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// resyncExecution asks the Work execution workflow of each cluster to re-apply its Works. A
// cluster without one (Work execution left to Karmada) is skipped.
func resyncExecution(ctx workflow.Context, prefix string, clusters []string) {
	futures := make([]workflow.Future, 0, len(clusters))
	for _, c := range clusters {
		futures = append(futures, workflow.SignalExternalWorkflow(ctx, prefix+execution.WorkflowID(c), "", execution.SignalResync, nil))
	}
	for _, f := range futures {
		_ = f.Get(ctx, nil)
	}
}
