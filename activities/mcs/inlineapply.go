package mcs

import (
	"context"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The inline member apply: the Works these activities write, applied at once by Work
// execution's applier when it runs in this worker.

// Bounds of the Works one activity executes: how many at once, and for how long in all (a
// member that is slow to answer leaves its Works to Work execution instead of holding the
// workflow task).
const (
	inlineParallelism = 8
	inlineTimeout     = 4 * time.Second
)

// withMemberBudget bounds the members' part of an activity: inlineTimeout, and at most half
// of what is left of the activity's own time, so that a slow member leaves its Works to Work
// execution while the activity still has the time to finish its writes.
func withMemberBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := inlineTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)/2)
	}
	return context.WithTimeout(ctx, budget)
}

// execute has the executable Works applied by Work execution's applier, when it runs in this
// worker, except in the clusters named unready. A failure is counted, not returned: the Work is
// written, and Work execution, told of it by the starter, applies it with its own retries.
func (a *Activities) execute(ctx context.Context, works []*unstructured.Unstructured, unready []string) {
	if a.Execution == nil || len(works) == 0 {
		return
	}
	ctx, cancel := withMemberBudget(ctx)
	defer cancel()
	var group errgroup.Group
	group.SetLimit(inlineParallelism)
	for _, w := range works {
		cluster, ok := naming.ClusterOfExecutionNamespace(w.GetNamespace())
		if !ok || !executable(w) || w.GetDeletionTimestamp() != nil || slices.Contains(unready, cluster) {
			continue
		}
		group.Go(func() error {
			_ = a.Metrics.count("execute", unlessPull(a.Execution.ApplyWork(ctx, cluster, w)))
			return nil
		})
	}
	_ = group.Wait()
}

// appliesWhileWriting tells whether an update of work (held: as last read) is brought into
// its member while it is written, and names the member: when Work execution runs in this
// worker, the member is Ready, and the Work held is applied there already, under execution's
// finalizer. A new Work is written first, so that nothing reaches a member before the record
// that owns it.
func (a *Activities) appliesWhileWriting(work, held *unstructured.Unstructured, unready []string) (string, bool) {
	if a.Execution == nil || held == nil || !executable(work) || held.GetDeletionTimestamp() != nil ||
		!slices.Contains(held.GetFinalizers(), naming.FinalizerExecution) {
		return "", false
	}
	cluster, ok := naming.ClusterOfExecutionNamespace(work.GetNamespace())
	return cluster, ok && !slices.Contains(unready, cluster)
}

// executeWhileWriting writes the Work and applies it to the member at the same time, with Work
// execution's applier (bounded as execute is); a failure to apply is counted, not returned.
func (a *Activities) executeWhileWriting(ctx context.Context, cluster string, held, work *unstructured.Unstructured, write func() (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	memberCtx, cancel := withMemberBudget(ctx)
	defer cancel()
	written, writeErr, applyErr := a.Execution.ApplyWhileWriting(memberCtx, cluster, held, work, write)
	if writeErr == nil {
		_ = a.Metrics.count("execute", unlessPull(applyErr))
	}
	return written, writeErr
}

// unlessPull is err, except the refusal to dial a Pull cluster, which is no failure: its
// agent applies the Work, told of it by the starter like any Work execution.
func unlessPull(err error) error {
	if members.IsPull(err) {
		return nil
	}
	return err
}
