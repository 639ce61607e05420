package mcs

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	act "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
	"github.com/karmadaflow/karmadaflow/workflows/summary"
)

// Status and retry: the conditions and phase recorded, and the backoff of the full reconcile
// that follows a failure.

// settle records a state that needs no retry.
func (r *reconciler) settle(ctx workflow.Context, phase string, conds []act.Condition) {
	r.writeStatus(ctx, conds)
	r.setPhase(ctx, phase)
	r.state.Failures, r.retryAt = 0, time.Time{}
	r.plan = Plan{}
}

func (r *reconciler) fail(ctx workflow.Context, now time.Time, phase string) {
	r.setPhase(ctx, phase)
	r.pending.Full = true
	r.scheduleRetry(now)
}

// scheduleRetry sets the next full reconcile after a failure: 1s, 2s, 4s ... up to a minute.
func (r *reconciler) scheduleRetry(now time.Time) {
	r.state.Failures++
	r.retryAt = now.Add(entity.RetryDelay(r.state.Failures, time.Second, time.Minute))
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
