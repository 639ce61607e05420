// Package provisioning holds the decisions of installing a Karmada control plane: one entity
// workflow per Karmada object runs the install as the ordered step list of the spec, each
// step an activity of the same name. It records which steps succeeded with which inputs, so
// a failure resumes at the failed step and a spec change re-runs only the steps it affects;
// it pauses while the object is suspended and removes what it installed when the object goes.
package provisioning

import (
	"errors"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/workflows/searchattr"
)

// Names under which the workflow, its signals and its query are registered.
const (
	WorkflowName = "Karmada"
	SignalChange = "change"
	SignalResync = "resync"
	QueryState   = "state"
)

// changeRetryReadyStatus versions retrying a failed write of the Ready status (before, the
// error was dropped and the object showed Progressing until the next signal).
const changeRetryReadyStatus = "retry-ready-status"

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
	Step      string `json:",omitempty"`
	LastError string `json:",omitempty"`
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
	r.resyncs = workflow.GetSignalChannel(ctx, SignalResync)

	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.drain()
		if !r.pending {
			r.wait(ctx)
			r.drain()
		}
		if r.reconcile(ctx) {
			return nil
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			r.drain()
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, Karmada, Input{
				Namespace: in.Namespace, Name: in.Name, Progress: r.state.Progress, Resync: r.resync,
			})
		}
	}
}

type reconciler struct {
	ref              act.Ref
	changes, resyncs workflow.ReceiveChannel
	// pending asks for a pass; resync asks it to run every step; interrupted tells that a
	// signal cut the current pass short.
	pending, resync, interrupted bool
	retryAt                      time.Time
	state                        State
}

func (r *reconciler) drain() {
	var c Change
	for r.changes.ReceiveAsync(&c) {
		r.pending = true
	}
	var ignored any
	for r.resyncs.ReceiveAsync(&ignored) {
		r.pending, r.resync = true, true
	}
}

// wait blocks until a signal arrives or a retry is due.
func (r *reconciler) wait(ctx workflow.Context) {
	sel := workflow.NewSelector(ctx)
	r.addSignals(ctx, sel)
	if !r.retryAt.IsZero() {
		timerCtx, cancel := workflow.WithCancel(ctx)
		defer cancel()
		sel.AddFuture(workflow.NewTimer(timerCtx, max(r.retryAt.Sub(workflow.Now(ctx)), time.Millisecond)), func(workflow.Future) {
			r.pending = true
		})
	}
	sel.Select(ctx)
}

func (r *reconciler) addSignals(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(r.changes, func(c workflow.ReceiveChannel, _ bool) {
		var change Change
		c.Receive(ctx, &change)
		r.pending = true
	})
	sel.AddReceive(r.resyncs, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		r.pending, r.resync = true, true
	})
}

// errInterrupted ends a pass because a signal arrived while a step ran.
var errInterrupted = errors.New("interrupted by a signal")

// reconcile runs one pass and reports whether the workflow is finished (the object is gone).
func (r *reconciler) reconcile(ctx workflow.Context) (finished bool) {
	r.pending, r.retryAt, r.interrupted = false, time.Time{}, false
	// A resync received during this pass stays for the next one; an interrupted pass hands its
	// own on as well.
	force := r.resync
	r.resync = false
	defer func() {
		if r.interrupted {
			r.resync = r.resync || force
		}
	}()
	r.state.Passes++

	sum, err := r.validate(ctx)
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.Type() == act.ErrValidation:
		r.state.Generation = sum.Generation
		// No retry: nothing changes until the spec does.
		r.setPhase(ctx, PhaseInvalid)
		r.state.LastError = appErr.Message()
		err := r.writeStatus(ctx, act.StatusInput{Reason: operatorv1alpha1.ReasonValidationError, Message: appErr.Message(), Warning: true})
		if err != nil && !errors.Is(err, errInterrupted) {
			r.retryAt = workflow.Now(ctx).Add(5 * time.Second)
		}
		return false
	case err != nil:
		r.fail(ctx, "ValidateKarmada", err)
		return false
	}
	r.state.Generation = sum.Generation

	switch {
	case !sum.Exists:
		r.setPhase(ctx, PhaseDeleted)
		return true
	case sum.Deleting:
		return r.remove(ctx, sum)
	case sum.Suspended:
		r.setPhase(ctx, PhaseSuspended)
		return false
	case !sum.HasFinalizer:
		if err := r.execute(ctx, "AddKarmadaFinalizer", shortOptions, activities.AddKarmadaFinalizer, nil, r.ref); err != nil {
			r.fail(ctx, "AddKarmadaFinalizer", err)
			return false
		}
	}

	if err := r.install(ctx, sum, force); err != nil {
		if errors.Is(err, errInterrupted) {
			return false
		}
		r.fail(ctx, r.state.Step, err)
		r.state.Step = ""
		return false
	}
	r.state.Step, r.state.LastError, r.state.Failures = "", "", 0
	r.setPhase(ctx, PhaseReady)
	err = r.writeStatus(ctx, act.StatusInput{Ready: true, Reason: operatorv1alpha1.ReasonCompleted,
		Message: "Karmada control plane installed", AdminConfig: true, Completed: true})
	if err != nil && !errors.Is(err, errInterrupted) &&
		workflow.GetVersion(ctx, changeRetryReadyStatus, workflow.DefaultVersion, 1) == 1 {
		r.fail(ctx, "WriteKarmadaStatus", err) // the retry's pass writes Ready again
	}
	return false
}

// install is the install, step by step, as the spec lists it. A step runs when forced, when
// it has not succeeded yet, or when the spec parts it depends on changed since it did.
func (r *reconciler) install(ctx workflow.Context, sum act.Summary, force bool) error {
	p := &r.state.Progress
	ref := r.ref
	due := func(step string) bool { return force || p.Done[step] != sum.Hashes[step] }
	progressing := func() error {
		r.setPhase(ctx, PhaseInstalling)
		return r.writeStatus(ctx, act.StatusInput{Reason: operatorv1alpha1.ReasonProgressing,
			Message: "installing generation " + strconv.FormatInt(sum.Generation, 10), AdminConfig: p.Done[act.StepWriteAdminKubeconfig] != ""})
	}
	run := func(step string, opts workflow.ActivityOptions, fn, result any, args ...any) error {
		if !due(step) {
			return nil
		}
		if r.state.Phase != PhaseInstalling {
			if err := progressing(); err != nil {
				return err
			}
		}
		if err := r.execute(ctx, step, opts, fn, result, args...); err != nil {
			return err
		}
		p.Done[step] = sum.Hashes[step]
		return nil
	}
	certs := act.Certificates{CertHash: p.CertHash}
	loadBalancer := sum.ServiceType == "LoadBalancer"

	// 3. Namespace, then 2. certificates: the keys are written straight into Secrets of that
	// namespace (never into history), so it comes first (a remote host cluster may lack it).
	if err := run(act.StepEnsureNamespace, shortOptions, activities.EnsureNamespace, nil, ref); err != nil {
		return err
	}
	if err := run(act.StepGenerateCertificates, shortOptions, activities.GenerateCertificates, &certs, ref); err != nil {
		return err
	}
	p.CertHash = certs.CertHash
	// 4. etcd.
	if err := run(act.StepInstallEtcd, shortOptions, activities.InstallEtcd, nil, r.installInput()); err != nil {
		return err
	}
	if err := run(act.StepWaitEtcdReady, waitOptions, activities.WaitEtcdReady, nil, ref); err != nil {
		return err
	}
	// 5. API server, its Service (and load balancer), its readiness.
	if err := run(act.StepInstallAPIServer, shortOptions, activities.InstallAPIServer, &p.Service, r.installInput()); err != nil {
		return err
	}
	if due(act.StepWaitAPIServerReady) && r.state.Phase == PhaseInstalling {
		// Publish apiServerService as soon as the Service exists.
		if err := progressing(); err != nil {
			return err
		}
	}
	if loadBalancer {
		var address string
		if err := run(act.StepWaitLoadBalancer, loadBalancerOptions, activities.WaitLoadBalancer, &address, ref); err != nil {
			return err
		}
		if due(act.StepCertifyLoadBalancer) {
			if err := progressing(); err != nil {
				return err
			}
		}
		if err := run(act.StepCertifyLoadBalancer, shortOptions, activities.CertifyLoadBalancer, &certs, act.LoadBalancerInput{Ref: ref, Address: address}); err != nil {
			return err
		}
		p.CertHash = certs.CertHash
	}
	if err := run(act.StepWaitAPIServerReady, waitOptions, activities.WaitAPIServerReady, nil, ref); err != nil {
		return err
	}
	// 6. Admin kubeconfig (and one per component).
	if err := run(act.StepWriteAdminKubeconfig, shortOptions, activities.WriteAdminKubeconfig, &p.Endpoint, ref); err != nil {
		return err
	}
	// 7. Aggregated API server, then the objects inside the new control plane.
	if err := run(act.StepInstallAggregatedAPIServer, shortOptions, activities.InstallAggregatedAPIServer, nil, r.installInput()); err != nil {
		return err
	}
	if err := run(act.StepWaitAggregatedAPIServerReady, waitOptions, activities.WaitAggregatedAPIServerReady, nil, ref); err != nil {
		return err
	}
	if err := run(act.StepInitControlPlane, controlPlaneOptions, activities.InitControlPlane, nil, ref); err != nil {
		return err
	}
	// 8. Components.
	var installed []string
	if err := run(act.StepInstallComponents, shortOptions, activities.InstallComponents, &installed, r.installInput()); err != nil {
		return err
	}
	return run(act.StepWaitComponentsReady, waitOptions, activities.WaitComponentsReady, nil, ref)
}

func (r *reconciler) installInput() act.InstallInput {
	return act.InstallInput{Ref: r.ref, CertHash: r.state.Progress.CertHash}
}

// validate reads and checks the object; a validation error carries the Summary as details.
func (r *reconciler) validate(ctx workflow.Context) (act.Summary, error) {
	var sum act.Summary
	err := r.execute(ctx, "ValidateKarmada", shortOptions, activities.ValidateKarmada, &sum, r.ref)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == act.ErrValidation && appErr.HasDetails() {
		_ = appErr.Details(&sum)
	}
	return sum, err
}

// remove deletes what the instance installed (unless the object asks to keep it), then
// releases the finalizer.
func (r *reconciler) remove(ctx workflow.Context, sum act.Summary) bool {
	r.setPhase(ctx, PhaseDeleting)
	if sum.HasFinalizer && !sum.KeepOnDelete {
		var removed int
		if err := r.execute(ctx, "Uninstall", shortOptions, activities.Uninstall, &removed, r.ref); err != nil {
			r.fail(ctx, "Uninstall", err)
			return false
		}
	}
	if sum.HasFinalizer {
		if err := r.execute(ctx, "RemoveKarmadaFinalizer", shortOptions, activities.RemoveKarmadaFinalizer, nil, r.ref); err != nil {
			r.fail(ctx, "RemoveKarmadaFinalizer", err)
			return false
		}
	}
	r.setPhase(ctx, PhaseDeleted)
	return true
}

// execute runs one activity; a signal arriving meanwhile cancels it and returns
// errInterrupted, so the next pass starts from what the object says now.
func (r *reconciler) execute(ctx workflow.Context, step string, opts workflow.ActivityOptions, fn, result any, args ...any) error {
	r.state.Step = step
	r.state.Progress.Runs[step]++
	workflow.SetCurrentDetails(ctx, "running "+step)
	opts.Summary = step + " for Karmada " + r.ref.String()
	actCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
	defer cancel()
	future := workflow.ExecuteActivity(actCtx, fn, args...)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(future, func(workflow.Future) {})
	r.addSignals(ctx, sel)
	sel.Select(ctx)
	if !future.IsReady() {
		r.interrupted = true
		return errInterrupted // a signal woke us: cancel the step (deferred) and start afresh
	}
	return future.Get(ctx, result)
}

// writeStatus writes the status unless it equals what was written last.
func (r *reconciler) writeStatus(ctx workflow.Context, in act.StatusInput) error {
	in.Ref, in.Generation = r.ref, r.state.Generation
	key := strconv.FormatInt(in.Generation, 10) + "|" + strconv.FormatBool(in.Ready) + "|" + in.Reason + "|" + in.Message +
		"|" + strconv.FormatBool(in.AdminConfig) + "|" + r.state.Progress.Service.Name + "|" + strconv.Itoa(int(r.state.Progress.Service.NodePort)) +
		"|" + r.state.Progress.Done[act.StepWaitLoadBalancer]
	if key == r.state.Progress.LastStatus {
		return nil
	}
	step := r.state.Step
	defer func() { r.state.Step = step }()
	if err := r.execute(ctx, "WriteKarmadaStatus", shortOptions, activities.WriteKarmadaStatus, nil, in); err != nil {
		return err
	}
	r.state.Progress.LastStatus = key
	return nil
}

// fail records a failed step, reports it in the status and schedules a retry that resumes
// at that step: 5s, 10s, 20s ... up to two minutes.
func (r *reconciler) fail(ctx workflow.Context, step string, err error) {
	if errors.Is(err, errInterrupted) {
		return // not a failure: the signal asks for a new pass
	}
	r.state.Failures++
	message := step + ": " + errorMessage(err)
	r.state.LastError = message
	r.setPhase(ctx, PhaseFailed)
	delay := min(5*time.Second<<min(r.state.Failures-1, 5), 2*time.Minute)
	r.retryAt = workflow.Now(ctx).Add(delay)
	if r.state.Generation > 0 {
		_ = r.writeStatus(ctx, act.StatusInput{Reason: operatorv1alpha1.ReasonFailed, Message: message,
			AdminConfig: r.state.Progress.Done[act.StepWriteAdminKubeconfig] != ""})
	}
}

func (r *reconciler) setPhase(ctx workflow.Context, phase string) {
	if r.state.Phase == phase {
		return
	}
	r.state.Phase = phase
	workflow.SetCurrentDetails(ctx, phase)
	_ = searchattr.SetPhase(ctx, phase)
}

// errorMessage is the message of an activity error without the SDK's wrapping.
func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return "timed out (" + timeoutErr.TimeoutType().String() + ")"
	}
	return err.Error()
}

// Activity options: short steps retry a few times, then the workflow retries the step later;
// waits heartbeat, so a lost worker is noticed within the heartbeat timeout.
var (
	retry = &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    15 * time.Second,
		MaximumAttempts:    5,
	}
	shortOptions = workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: retry}
	waitOptions  = workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: 10 * time.Second, RetryPolicy: retry}
	// The load balancer is somebody else's: wait as long as it takes.
	loadBalancerOptions = workflow.ActivityOptions{StartToCloseTimeout: 24 * time.Hour, HeartbeatTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second}}
	controlPlaneOptions = workflow.ActivityOptions{StartToCloseTimeout: 3 * time.Minute, HeartbeatTimeout: 20 * time.Second, RetryPolicy: retry}
)
