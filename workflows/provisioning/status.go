package provisioning

import (
	"errors"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
)

// Status and retry: the status written when it changes, the phase, and the backoff after a
// failed step.

// writeStatus writes the status unless it equals what was written last.
func (r *reconciler) writeStatus(ctx workflow.Context, in act.StatusInput) error {
	in.Ref, in.Generation = r.ref, r.state.Generation
	key := strconv.FormatInt(in.Generation, 10) + "|" + strconv.FormatBool(in.Ready) + "|" + in.Reason + "|" + in.Message +
		"|" + strconv.FormatBool(in.AdminConfig) + "|" + r.state.Progress.Service.Name + "|" + strconv.Itoa(int(r.state.Progress.Service.NodePort)) +
		"|" + r.state.Progress.Done[act.StepWaitLoadBalancer]
	if c := in.Certificates; c != nil {
		key += "|" + c.NotAfter.UTC().Format(time.RFC3339) + "|" + c.RenewAt.UTC().Format(time.RFC3339)
	}
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
	r.retryAt = workflow.Now(ctx).Add(entity.RetryDelay(r.state.Failures, 5*time.Second, 2*time.Minute))
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
