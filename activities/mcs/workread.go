package mcs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The Work read path: a MultiClusterService's Works by role, from the worker's cache when it
// can answer and the workflow has not just moved to this worker, else from the API server.

// listWorks reads, in every namespace, the Works of the MultiClusterService with one of roles
// (any role when none is given): from the cache when it can answer, else from the API server.
// othersWroteBefore is the workflow's word that another worker may have written them until
// then (see EarlierWrites.OthersWroteBefore): unless the cache started watching well
// after, it may not show those writes yet, and the API server is listed.
//
// A list made here for the same othersWroteBefore (by a reconcile here that failed later)
// came after those writes, and the cache has shown it since: the cache answers then too.
//
// While the watch lags behind this process's writes (a busy API server), the Works the cache
// knows of are read again by name. Only the workflow, in this process, creates its Works, so
// the cache knows every one of them; Karmada only updates their status or deletes them, which
// the reads by name show. A list with a label selector costs the API server a pass over every
// Work of the control plane, and a busy one is what makes the watch lag.
func (a *Activities) listWorks(ctx context.Context, ref Ref, othersWroteBefore time.Time, roles ...string) ([]unstructured.Unstructured, error) {
	works, _, err := a.readWorks(ctx, ref, othersWroteBefore, roles...)
	return works, err
}

// readWorks is listWorks, and tells whether the answer came from the API server (a list, or
// reads by name) rather than from the cache.
func (a *Activities) readWorks(ctx context.Context, ref Ref, othersWroteBefore time.Time, roles ...string) (works []unstructured.Unstructured, fromAPIServer bool, err error) {
	reason := listMoved
	if othersWroteBefore.IsZero() || a.WorkCache.StartedAfter(othersWroteBefore) ||
		a.WorkCache.ListedFor(ref.Namespace, ref.Name, roles, othersWroteBefore) {
		if cached, ok := a.cachedWorks(ctx, ref, roles...); ok {
			return cached, false, nil
		}
		if known, ok := a.knownWorks(ref, roles...); ok {
			works, err = a.rereadKnown(ctx, known)
			return works, true, err
		}
		reason = listCacheUnanswerable
	}
	works, err = a.listWorksFor(ctx, ref, othersWroteBefore, reason, roles...)
	return works, true, err
}

// othersWroteBefore is the moment until which other workers may have written the Works, as
// an activity is to take it: the workflow's word (OthersWroteBefore), unless the workflow
// says that this worker's Work cache made and shows every write so far.
func (a *Activities) othersWroteBefore(earlier EarlierWrites) time.Time {
	if earlier.WorkCache != "" && earlier.WorkCache == a.WorkCache.Instance() {
		return time.Time{}
	}
	return earlier.OthersWroteBefore
}

// listWorksOfOthers is listWorks for reads that include Works other processes create (what
// karmada-agent collects): while the watch lags, the API server is listed.
func (a *Activities) listWorksOfOthers(ctx context.Context, ref Ref, othersWroteBefore time.Time, roles ...string) ([]unstructured.Unstructured, error) {
	reason := listMoved
	if othersWroteBefore.IsZero() || a.WorkCache.StartedAfter(othersWroteBefore) {
		if cached, ok := a.cachedWorks(ctx, ref, roles...); ok {
			return cached, nil
		}
		reason = listLagging
	}
	return a.listWorksLive(ctx, ref, reason, roles...)
}

// knownWorks is what the cache knows of the Works of the MultiClusterService with one of
// roles (any when none is given), even while its watch lags; ok is false when it cannot answer.
func (a *Activities) knownWorks(ref Ref, roles ...string) ([]unstructured.Unstructured, bool) {
	works, ok := a.WorkCache.Known(ref.Namespace, ref.Name)
	if !ok {
		return nil, false
	}
	return withRoles(works, roles), true
}

// rereadKnown reads each of works again by name, and tells the cache what it found, so that
// its reads show it until the watch catches up.
func (a *Activities) rereadKnown(ctx context.Context, works []unstructured.Unstructured) ([]unstructured.Unstructured, error) {
	fresh, gone, err := a.rereadWorks(ctx, works)
	if err != nil {
		return nil, err
	}
	a.WorkCache.Reread(fresh, gone)
	return fresh, nil
}

// cachedWorks is what the cache holds of the Works of the MultiClusterService with one of
// roles (any when none is given); ok is false when it cannot answer.
func (a *Activities) cachedWorks(ctx context.Context, ref Ref, roles ...string) ([]unstructured.Unstructured, bool) {
	works, ok := a.WorkCache.Works(ctx, ref.Namespace, ref.Name)
	if !ok {
		return nil, false
	}
	return withRoles(works, roles), true
}

// withRoles copies the works with one of roles (every one when none is given).
func withRoles(works []*unstructured.Unstructured, roles []string) []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, 0, len(works))
	for _, w := range works {
		if len(roles) == 0 || slices.Contains(roles, naming.RoleOf(w.GetLabels())) {
			out = append(out, *w)
		}
	}
	return out
}

// rereadWorks reads each of works again from the API server, by name: fresh are those found,
// gone those deleted meanwhile.
func (a *Activities) rereadWorks(ctx context.Context, works []unstructured.Unstructured) (fresh []unstructured.Unstructured, gone []*unstructured.Unstructured, err error) {
	fresh = make([]unstructured.Unstructured, 0, len(works))
	for i, w := range works {
		got, err := a.ControlPlane.Resource(kube.Works).Namespace(w.GetNamespace()).Get(ctx, w.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			gone = append(gone, &works[i])
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading Work %s/%s: %w", w.GetNamespace(), w.GetName(), err)
		}
		fresh = append(fresh, *got)
	}
	return fresh, gone, nil
}

// listWorksLive lists the Works of the MultiClusterService with one of roles from the API
// server, and tells the cache what it found, so that later reads from the cache show it.
// reason says why the cache did not answer (mcs_work_lists_total).
func (a *Activities) listWorksLive(ctx context.Context, ref Ref, reason string, roles ...string) ([]unstructured.Unstructured, error) {
	return a.listWorksFor(ctx, ref, time.Time{}, reason, roles...)
}

// listWorksFor is listWorksLive for a reconcile told othersWroteBefore: the cache then
// remembers the list was made for that moment (workcache.Cache.ListedFor).
func (a *Activities) listWorksFor(ctx context.Context, ref Ref, othersWroteBefore time.Time, reason string, roles ...string) ([]unstructured.Unstructured, error) {
	a.Metrics.countWorkList(reason)
	selector := labels.NewSelector()
	for key, value := range map[string]string{networkingv1alpha1.LabelMCSName: ref.Name, networkingv1alpha1.LabelMCSNamespace: ref.Namespace} {
		req, err := labels.NewRequirement(key, selection.Equals, []string{value})
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidName", err)
		}
		selector = selector.Add(*req)
	}
	// The Works karmada-agent collects carry no role label of karmadaflow's (naming.RoleOf):
	// collected Works are picked here, not by the API server.
	listedRoles := roles
	if slices.Contains(roles, naming.RoleCollected) {
		listedRoles = nil
	}
	if len(listedRoles) > 0 {
		req, err := labels.NewRequirement(naming.LabelWorkRole, selection.In, listedRoles)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidName", err)
		}
		selector = selector.Add(*req)
	}
	list, err := a.ControlPlane.Resource(kube.Works).Namespace(a.WorkNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing Works of %s: %w", ref, err)
	}
	a.WorkCache.Listed(ref.Namespace, ref.Name, listedRoles, list.Items, list.GetResourceVersion(), othersWroteBefore)
	if len(listedRoles) == len(roles) {
		return list.Items, nil
	}
	out := make([]unstructured.Unstructured, 0, len(list.Items))
	for _, w := range list.Items {
		if slices.Contains(roles, naming.RoleOf(w.GetLabels())) {
			out = append(out, w)
		}
	}
	return out, nil
}

// worksIn picks the Works of one role in namespace.
func worksIn(works []unstructured.Unstructured, namespace, role string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, w := range works {
		if w.GetNamespace() == namespace && naming.RoleOf(w.GetLabels()) == role {
			out = append(out, w)
		}
	}
	return out
}

func workLabels(ref Ref, role string) map[string]string {
	return map[string]string{networkingv1alpha1.LabelMCSName: ref.Name, networkingv1alpha1.LabelMCSNamespace: ref.Namespace, naming.LabelWorkRole: role}
}
