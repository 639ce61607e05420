package mcs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The generic Work-sync engine: the Works held made exactly the desired ones (planned, written,
// deleted), and Works deleted by role.

// DeleteWorks removes the MultiClusterService's Works of the given roles from every namespace.
func (a *Activities) DeleteWorks(ctx context.Context, in DeleteWorksInput) (WorkWriteResult, error) {
	return WorkWriteResult{WorkCache: a.WorkCache.Instance()}, a.Metrics.count("delete", a.deleteWorks(ctx, in))
}

// deleteWorks lists the Works a prune removes as every other step of a reconcile reads them
// (listWorks): a Work another worker wrote that this worker's cache does not show yet is
// pruned by the next reconcile. The deletion of every Work of a MultiClusterService that goes
// is final, and reads the API server: a Work missed then would never be deleted.
func (a *Activities) deleteWorks(ctx context.Context, in DeleteWorksInput) error {
	roles := in.Roles
	if slices.Contains(roles, naming.RoleCollected) { // a provider's request for collection goes with what was collected
		roles = append(slices.Clone(roles), naming.RoleCollectRequest)
	}
	var works []unstructured.Unstructured
	var err error
	if in.Prune {
		works, err = a.listWorks(ctx, in.MCS, a.othersWroteBefore(in.EarlierWrites), roles...)
	} else {
		works, err = a.listWorksLive(ctx, in.MCS, listDeletion, roles...)
	}
	if err != nil {
		return err
	}
	final := len(in.Roles) == 0 && len(in.ExceptClusters) == 0 // the MultiClusterService is deleted
	for _, w := range works {
		if cluster, ok := naming.ClusterOfExecutionNamespace(w.GetNamespace()); ok && slices.Contains(in.ExceptClusters, cluster) {
			continue
		}
		if final && a.Execution == nil && w.GetLabels()[naming.LabelWorkRole] == naming.RoleService {
			if err := a.preserveOnDeletion(ctx, &w); err != nil {
				return err
			}
		}
		if err := a.deleteWork(ctx, &w); err != nil {
			return err
		}
	}
	if final {
		// Once its Works are gone, a policy may propagate the Service: not before, or Karmada's
		// binding controller would write Works of the names of those being deleted.
		return a.releaseService(ctx, in.MCS)
	}
	return nil
}

// preserveOnDeletion has Karmada's execution controller leave the Service in the member when
// the Work is deleted, as upstream does when a MultiClusterService is deleted (as when a
// PropagationPolicy is, for the service's stability). Beside Karmada the Service Work
// overwrites a provider's own Service (conflict resolution overwrite), which Karmada would
// otherwise delete with the Work, and the provider's own endpoints with it. karmadaflow's own
// Work execution only ever deletes what it created, and never took a provider's Service over.
func (a *Activities) preserveOnDeletion(ctx context.Context, work *unstructured.Unstructured) error {
	if preserve, _, _ := unstructured.NestedBool(work.Object, "spec", "preserveResourcesOnDeletion"); preserve || work.GetDeletionTimestamp() != nil {
		return nil
	}
	updated := work.DeepCopy()
	if err := unstructured.SetNestedField(updated.Object, true, "spec", "preserveResourcesOnDeletion"); err != nil {
		return err
	}
	written, err := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace()).Update(ctx, updated, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	if err != nil {
		return fmt.Errorf("keeping the Service of Work %s/%s in its member: %w", work.GetNamespace(), work.GetName(), err)
	}
	*work = *written
	return nil
}

func (a *Activities) deleteWork(ctx context.Context, work *unstructured.Unstructured) error {
	if work.GetDeletionTimestamp() != nil {
		return a.releaseSliceDispatch(ctx, work) // already going
	}
	err := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace()).Delete(ctx, work.GetName(), metav1.DeleteOptions{})
	if kube.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	a.WorkCache.Deleted(work)
	return a.releaseSliceDispatch(ctx, work)
}

// releaseSliceDispatch removes the endpointsliceDispatch controller's finalizer from a Work
// karmada-agent collected (naming.FinalizerSliceDispatch): karmadaflow dispatches in that
// controller's place, from the collected Works as they are, so a Work that goes needs nothing
// more of it. Karmada's controller would remove it once it had cleaned the consumers up.
func (a *Activities) releaseSliceDispatch(ctx context.Context, work *unstructured.Unstructured) error {
	finalizers := work.GetFinalizers()
	if !slices.Contains(finalizers, naming.FinalizerSliceDispatch) {
		return nil
	}
	released := work.DeepCopy()
	released.SetFinalizers(slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == naming.FinalizerSliceDispatch }))
	_, err := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace()).Update(ctx, released, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	if kube.IgnoreNotFound(err) != nil {
		return fmt.Errorf("releasing Work %s/%s (finalizer %s): %w", work.GetNamespace(), work.GetName(), naming.FinalizerSliceDispatch, err)
	}
	return nil
}

// syncWorksIn makes namespace hold exactly the desired Works (by name) of one role of the
// MultiClusterService; it serves the collected Works, which are never executed.
// othersWroteBefore: see listWorks.
func (a *Activities) syncWorksIn(ctx context.Context, namespace string, ref Ref, role string, othersWroteBefore time.Time, desired map[string]*unstructured.Unstructured) (bool, error) {
	works, err := a.listWorks(ctx, ref, othersWroteBefore, role)
	if err != nil {
		return false, err
	}
	return a.syncWorks(ctx, worksIn(works, namespace, role), desired, nil, nil)
}

// syncWorks makes a namespace hold exactly the desired Works, given the ones of the same role
// it holds now. With onlyProviders, only Works dispatched from those providers are candidates
// for deletion. Works of the clusters named unready are left to Work execution.
func (a *Activities) syncWorks(ctx context.Context, current []unstructured.Unstructured, desired map[string]*unstructured.Unstructured, onlyProviders, unready []string) (bool, error) {
	return a.applyWorkSync(ctx, planWorkSync(current, sortedWorks(desired), onlyProviders), unready)
}

// applyWorkSync carries out a plan, and has the Works written, and those held but not applied,
// executed at once (see Execution). A desired Work that is still being deleted is written once
// it is gone: until then the sync reports an error, so that it is retried.
func (a *Activities) applyWorkSync(ctx context.Context, plan workSync, unready []string) (changed bool, err error) {
	for _, w := range plan.release {
		if err := a.releaseSliceDispatch(ctx, w); err != nil {
			return false, err
		}
	}
	for _, w := range plan.remove {
		if err := a.deleteWork(ctx, w); err != nil {
			return changed, err
		}
		changed = true
	}
	toExecute := plan.unapplied
	for _, work := range plan.write {
		held := plan.writeOver[work.GetNamespace()+"/"+work.GetName()]
		write := func() (*unstructured.Unstructured, error) { return a.applyWork(ctx, work, held) }
		var written *unstructured.Unstructured
		var err error
		if cluster, ok := a.appliesWhileWriting(work, held, unready); ok {
			written, err = a.executeWhileWriting(ctx, cluster, held, work, write)
		} else if written, err = write(); err == nil {
			toExecute = append(toExecute, written)
		}
		if err != nil {
			a.execute(ctx, toExecute, unready)
			return changed, err
		}
		changed = true
	}
	a.execute(ctx, toExecute, unready)
	if len(plan.awaitingDeletion) > 0 {
		return changed, fmt.Errorf("Works %s are still being deleted; they are written again once gone", strings.Join(plan.awaitingDeletion, ", "))
	}
	return changed, nil
}

// workSync is what it takes to make the Works held exactly the desired ones.
type workSync struct {
	remove           []*unstructured.Unstructured          // held, not desired
	write            []*unstructured.Unstructured          // desired, missing or with another manifest hash
	writeOver        map[string]*unstructured.Unstructured // of write, the Work held now (namespace/name), if any
	awaitingDeletion []string                              // desired, held but being deleted (namespace/name): written once gone
	unapplied        []*unstructured.Unstructured          // desired, held as desired, but not applied at its generation
	release          []*unstructured.Unstructured          // held, being deleted, waiting for the endpointsliceDispatch finalizer
}

// planWorkSync compares the Works held (current) with the desired ones by namespace, name and
// manifest hash. With onlyProviders, only Works dispatched from those providers may be
// removed. Works already being deleted are not deleted again.
func planWorkSync(current []unstructured.Unstructured, desired []*unstructured.Unstructured, onlyProviders []string) workSync {
	key := func(w *unstructured.Unstructured) string { return w.GetNamespace() + "/" + w.GetName() }
	wanted := map[string]bool{}
	for _, w := range desired {
		wanted[key(w)] = true
	}
	var plan workSync
	held := map[string]*unstructured.Unstructured{}
	for i := range current {
		w := &current[i]
		held[key(w)] = w
		if w.GetDeletionTimestamp() != nil && slices.Contains(w.GetFinalizers(), naming.FinalizerSliceDispatch) {
			plan.release = append(plan.release, w)
		}
		switch {
		case wanted[key(w)], w.GetDeletionTimestamp() != nil:
		case len(onlyProviders) > 0 && !slices.Contains(onlyProviders, w.GetLabels()[naming.LabelProvider]):
		default:
			plan.remove = append(plan.remove, w)
		}
	}
	for _, work := range desired {
		w, ok := held[key(work)]
		switch {
		case ok && w.GetDeletionTimestamp() != nil:
			plan.awaitingDeletion = append(plan.awaitingDeletion, key(work))
		case ok && w.GetAnnotations()[naming.AnnotationManifestHash] == work.GetAnnotations()[naming.AnnotationManifestHash]:
			if !executable(w) {
				break
			}
			if applied, _ := WorkApplied(w); !applied {
				plan.unapplied = append(plan.unapplied, w)
			}
		default:
			plan.write = append(plan.write, work)
			if ok {
				if plan.writeOver == nil {
					plan.writeOver = map[string]*unstructured.Unstructured{}
				}
				plan.writeOver[key(work)] = w
			}
		}
	}
	return plan
}

// applyWork creates or updates a Work and returns it as written; one that members apply carries
// the execution finalizer from the start, as the Works Karmada's own controllers create do:
// whoever applies it (karmadaflow's Work execution, or Karmada's execution controller beside
// Karmada, which never adds it) removes the manifests from the member before it lets the Work
// go. Without it, a Work deleted beside Karmada left its slice in the member. A Work not held is created, and one held (as
// last read: held) is updated from that copy, keeping what others set on it; both cost the API
// server far less than a server-side apply. When the copy was stale (Conflict), or the Work
// appeared meanwhile, it is applied.
func (a *Activities) applyWork(ctx context.Context, work, held *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if executable(work) {
		work = work.DeepCopy()
		work.SetFinalizers([]string{naming.FinalizerExecution})
	}
	client := a.ControlPlane.Resource(kube.Works).Namespace(work.GetNamespace())
	var written *unstructured.Unstructured
	var err error
	if held == nil {
		written, err = client.Create(ctx, work, metav1.CreateOptions{FieldManager: naming.FieldManager})
	} else {
		written, err = client.Update(ctx, updatedWork(held, work), metav1.UpdateOptions{FieldManager: naming.FieldManager})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		written, err = kube.Apply(ctx, client, work)
	}
	if err != nil {
		return nil, fmt.Errorf("writing Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	a.WorkCache.Wrote(written)
	return written, nil
}

// updatedWork is the held Work with the desired one's spec, labels, annotations and finalizers
// added: what others set on it stays.
func updatedWork(held, desired *unstructured.Unstructured) *unstructured.Unstructured {
	out := held.DeepCopy()
	out.Object["spec"] = desired.DeepCopy().Object["spec"]
	lbls := merged(out.GetLabels(), desired.GetLabels())
	delete(lbls, networkingv1alpha1.LabelEndpointSliceName) // ServiceExport's, put here once
	delete(lbls, networkingv1alpha1.LabelEndpointSliceNamespace)
	out.SetLabels(lbls)
	out.SetAnnotations(merged(out.GetAnnotations(), desired.GetAnnotations()))
	finalizers := out.GetFinalizers()
	for _, f := range desired.GetFinalizers() {
		if !slices.Contains(finalizers, f) {
			finalizers = append(finalizers, f)
		}
	}
	out.SetFinalizers(finalizers)
	delete(out.Object, "status") // written by Work execution through its subresource
	return out
}

func merged(base, more map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(more))
	maps.Copy(out, base)
	maps.Copy(out, more)
	return out
}

// executable tells a Work that Work execution applies: one not suspended (the Works collected
// from providers are records only).
func executable(work *unstructured.Unstructured) bool {
	suspended, _, _ := unstructured.NestedBool(work.Object, "spec", "suspendDispatching")
	return !suspended
}
