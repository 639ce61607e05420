package provisioning

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// One pass: the object read and validated, then installed, left alone while suspended, or what
// it installed removed when it goes.

// changeRetryReadyStatus versions retrying a failed write of the Ready status (before, the
// error was dropped and the object showed Progressing until the next signal).
const changeRetryReadyStatus = "retry-ready-status"

// changeRecheckInvalid versions checking a refused spec again every recheckInvalidAfter
// (before, nothing happened until the spec changed or a resync came).
const changeRecheckInvalid = "recheck-invalid"

// recheckInvalidAfter is how long a refused spec waits before it is checked again.
const recheckInvalidAfter = 5 * time.Minute

// changeCertificateRenewal versions reading the certificates' expiry once installed, writing
// it to the status and renewing them on a timer (before, certificates were never renewed).
const changeCertificateRenewal = "certificate-renewal"

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
		r.setPhase(ctx, PhaseInvalid)
		r.state.LastError = appErr.Message()
		// A spec is checked against what it names too (a remote host cluster's Secret, the
		// instance's etcd, what the worker allows), which changes without the spec: it is
		// checked again now and then. The same refusal is not written twice.
		recheck := workflow.GetVersion(ctx, changeRecheckInvalid, workflow.DefaultVersion, 1) == 1
		if recheck && r.refusalWritten == appErr.Message() {
			r.retryAt = workflow.Now(ctx).Add(recheckInvalidAfter)
			return false
		}
		r.refusalWritten = ""
		err := r.writeStatus(ctx, act.StatusInput{Reason: operatorv1alpha1.ReasonValidationError, Message: appErr.Message(), Warning: true})
		switch {
		case err != nil && !errors.Is(err, errInterrupted):
			r.retryAt = workflow.Now(ctx).Add(5 * time.Second)
		case err == nil && recheck:
			r.refusalWritten = appErr.Message()
			r.retryAt = workflow.Now(ctx).Add(recheckInvalidAfter)
		}
		return false
	case err != nil:
		r.fail(ctx, "ValidateKarmada", err)
		r.refusalWritten = ""
		return false
	}
	r.state.Generation = sum.Generation
	r.refusalWritten = "" // the status will say what this pass does

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
	ready := act.StatusInput{Ready: true, Reason: operatorv1alpha1.ReasonCompleted,
		Message: "Karmada control plane installed", AdminConfig: true, Completed: true}
	if workflow.GetVersion(ctx, changeCertificateRenewal, workflow.DefaultVersion, 1) == 1 {
		var expiries act.CertificateExpiries
		if err := r.execute(ctx, "InspectCertificates", shortOptions, activities.InspectCertificates, &expiries, r.ref); err != nil {
			if !errors.Is(err, errInterrupted) {
				r.fail(ctx, "InspectCertificates", err)
			}
			r.state.Step = ""
			return false
		}
		r.state.RenewAt, r.renewing = expiries.RenewAt, false
		r.state.Progress.Completed = true
		ready.Certificates = &expiries
	}
	r.state.Step, r.state.LastError, r.state.Failures = "", "", 0
	r.setPhase(ctx, PhaseReady)
	err = r.writeStatus(ctx, ready)
	if err != nil && !errors.Is(err, errInterrupted) &&
		workflow.GetVersion(ctx, changeRetryReadyStatus, workflow.DefaultVersion, 1) == 1 {
		r.fail(ctx, "WriteKarmadaStatus", err) // the retry's pass writes Ready again
	}
	return false
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
