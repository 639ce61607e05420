package provisioning

import (
	"time"

	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
)

// The entity workflow and its process in the entity loop (package entity): names, input and
// query state; a pass is due on a signal, a retry or a certificate renewal.

// Names under which the workflow, its signals and its query are registered.
const (
	WorkflowName = "Karmada"
	SignalChange = "change"
	SignalResync = "resync"
	QueryState   = "state"
)

// WorkflowID is the readable ID of the workflow of one Karmada object.
func WorkflowID(namespace, name string) string { return "karmada/" + namespace + "/" + name }

// Change is the payload of the change signal the starter sends. The workflow reads the
// object afresh either way; Generation (the one the starter saw) makes the signal readable in
// the history.
type Change struct {
	Generation int64 `json:",omitempty"`
}

// Phases, also upserted as the ReconcilePhase search attribute.
const (
	PhaseInstalling = "Installing"
	PhaseReady      = "Ready"
	PhaseFailed     = "Failed"
	PhaseInvalid    = "Invalid"
	PhaseSuspended  = "Suspended"
	PhaseDeleting   = "Deleting"
	PhaseDeleted    = "Deleted"
)

// Progress is what the workflow carries across continue-as-new: what succeeded with which
// inputs, and what the steps returned.
type Progress struct {
	// Done maps each step to the input hash it last succeeded with.
	Done map[string]string `json:",omitempty"`
	// Runs counts the executions of each step (successful or not) since the workflow started.
	Runs       map[string]int `json:",omitempty"`
	CertHash   string         `json:",omitempty"`
	Service    act.ServiceInfo
	Endpoint   string `json:",omitempty"`
	LastStatus string `json:",omitempty"`
	// Completed tells that the instance was Ready once: later passes roll out changes.
	Completed bool `json:",omitempty"`
}

// Input starts a run; a continued run carries its progress.
type Input struct {
	Namespace string
	Name      string
	Progress  Progress `json:",omitempty"`
	// Resync asks the first pass to run every step.
	Resync bool `json:",omitempty"`
}

// State is what the state query answers.
type State struct {
	Phase      string
	Generation int64
	// Step is the step running now, if any.
	Step string `json:",omitempty"`
	// Rolling is what the last install step rolled or did ("rolling etcd").
	Rolling string `json:",omitempty"`
	// RenewAt is when the first certificate is due for renewal.
	RenewAt   time.Time `json:",omitempty"`
	LastError string    `json:",omitempty"`
	Progress  Progress
	Passes    int
	Failures  int
}

var activities *act.Activities

// Karmada is the entity workflow of one Karmada object.
func Karmada(ctx workflow.Context, in Input) error {
	r := &reconciler{ref: act.Ref{Namespace: in.Namespace, Name: in.Name}, pending: true, resync: in.Resync}
	r.state.Progress = in.Progress
	if r.state.Progress.Done == nil {
		r.state.Progress.Done = map[string]string{}
	}
	if r.state.Progress.Runs == nil {
		r.state.Progress.Runs = map[string]int{}
	}
	if err := workflow.SetQueryHandler(ctx, QueryState, func() (State, error) { return r.state, nil }); err != nil {
		return err
	}
	if err := searchattr.Identify(ctx, "Karmada", in.Namespace, in.Name); err != nil {
		return err
	}
	r.changes = workflow.GetSignalChannel(ctx, SignalChange)
	r.resyncs = entity.NewResyncs(ctx, SignalResync)
	return entity.Run(ctx, Karmada, r)
}

type reconciler struct {
	ref     act.Ref
	changes workflow.ReceiveChannel
	resyncs *entity.Resyncs
	// pending asks for a pass; resync asks it to run every step; interrupted tells that a
	// signal cut the current pass short; renewing that the pass renews certificates.
	pending, resync, interrupted, renewing bool
	retryAt                                time.Time
	// refusalWritten is the validation error the Ready status says now, if it says one.
	refusalWritten string
	state          State
}

// Due tells whether a signal or a timer asked for a pass.
func (r *reconciler) Due() bool { return r.pending }

// Pass runs the steps; it ends the workflow once the object is gone and everything removed.
func (r *reconciler) Pass(ctx workflow.Context) (end bool, err error) { return r.reconcile(ctx), nil }

// ContinueAsNewAsked: a Karmada workflow continues as new only when the server suggests it.
func (r *reconciler) ContinueAsNewAsked(workflow.Context) bool { return false }

// Next carries the progress, and a resync not run yet, to the next run.
func (r *reconciler) Next() Input {
	return Input{Namespace: r.ref.Namespace, Name: r.ref.Name, Progress: r.state.Progress, Resync: r.resync}
}

// Drain records the signals received.
func (r *reconciler) Drain() {
	var c Change
	for r.changes.ReceiveAsync(&c) {
		r.pending = true
	}
	r.resyncs.Drain(r.takeResync)
}

// takeResync asks for a pass that runs every step.
func (r *reconciler) takeResync(any) { r.pending, r.resync = true, true }

// UpgradeAsked tells whether a wake asked the run to move to the current version.
func (r *reconciler) UpgradeAsked() bool { return r.resyncs.UpgradeAsked() }

// Wait blocks until a signal arrives, a retry is due or a certificate is due for renewal.
func (r *reconciler) Wait(ctx workflow.Context) {
	sel := workflow.NewSelector(ctx)
	r.addSignals(ctx, sel)
	if !r.retryAt.IsZero() {
		timerCtx, cancel := workflow.WithCancel(ctx)
		defer cancel()
		sel.AddFuture(workflow.NewTimer(timerCtx, max(r.retryAt.Sub(workflow.Now(ctx)), time.Millisecond)), func(workflow.Future) {
			r.pending = true
		})
	}
	if renewAt := r.state.RenewAt; !renewAt.IsZero() {
		// A renewal is a pass that runs every step: the steps re-issue what is due and roll
		// what mounts it. At least a minute apart, should a renewal leave a certificate due.
		timerCtx, cancel := workflow.WithCancel(ctx)
		defer cancel()
		timer := workflow.NewTimerWithOptions(timerCtx, max(renewAt.Sub(workflow.Now(ctx)), minRenewalInterval), workflow.TimerOptions{
			Summary: "renew the certificates of Karmada " + r.ref.String() + ": the first is due at " + renewAt.UTC().Format(time.RFC3339),
		})
		sel.AddFuture(timer, func(workflow.Future) {
			r.pending, r.resync, r.renewing = true, true, true
		})
	}
	sel.Select(ctx)
}

// minRenewalInterval is the least time between two certificate renewals.
const minRenewalInterval = time.Minute

func (r *reconciler) addSignals(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(r.changes, func(c workflow.ReceiveChannel, _ bool) {
		var change Change
		c.Receive(ctx, &change)
		r.pending = true
	})
	r.resyncs.AddTo(sel, r.takeResync)
}
