// Package execution applies Works to member clusters (standalone mode, in place of Karmada's
// execution controller): the manifests of each non-suspended Work in karmada-es-<cluster> are
// server-side applied to that cluster, removed from it when the Work goes, and the Work's
// Applied condition and manifest statuses are written back.
package execution

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
)

// Activities holds the clients the execution activities use.
type Activities struct {
	ControlPlane dynamic.Interface
	Members      *members.Registry
	// Parallelism bounds the Works applied at once in one call.
	Parallelism int
	Metrics     *Metrics
	// WorkCache, when set, answers reads of Works whose changed version is known.
	WorkCache *workcache.Cache
}

// ApplyInput names Works of one cluster's execution namespace to bring into the member; with
// All, every Work there is applied and objects of Works that no longer exist are removed.
type ApplyInput struct {
	Cluster string
	Works   []string `json:",omitempty"`
	All     bool     `json:",omitempty"`
	// Versions are, by name, the resourceVersions the changes were seen at: a Work is read
	// from the cache once it holds that version, instead of from the API server.
	Versions map[string]string `json:",omitempty"`
}

// ApplyResult says which Works could not be applied, to be retried.
type ApplyResult struct {
	Applied int
	Deleted int
	Failed  []string `json:",omitempty"`
	// Error is the first failure, for the workflow's state.
	Error string `json:",omitempty"`
	// ClusterGone: the Cluster is deleted; nothing was applied.
	ClusterGone bool `json:",omitempty"`
}

// Reasons of a Work's Applied condition (Karmada's).
const (
	ReasonAppliedSuccessful = "AppliedSuccessful"
	ReasonAppliedFailed     = "AppliedFailed"
)

// ApplyWorks brings the named Works (or all) of the cluster into the member cluster. A full
// pass first makes sure that the Cluster exists and has its execution namespace.
func (a *Activities) ApplyWorks(ctx context.Context, in ApplyInput) (ApplyResult, error) {
	var res ApplyResult
	var spaceErr error // the execution namespace is still deleting: the pass is repeated
	if in.All {
		exists, err := a.clusterExists(ctx, in.Cluster)
		if err != nil || !exists {
			return ApplyResult{ClusterGone: err == nil}, err
		}
		spaceErr = a.ensureExecutionSpace(ctx, in.Cluster)
	}
	member, err := a.Members.Get(ctx, in.Cluster)
	if err != nil {
		if exists, existsErr := a.clusterExists(ctx, in.Cluster); existsErr == nil && !exists {
			return ApplyResult{ClusterGone: true}, nil
		}
		return res, err
	}
	namespace := naming.ExecutionNamespace(in.Cluster)
	works := a.ControlPlane.Resource(kube.Works).Namespace(namespace)

	// A full pass lists the namespace; named Works are read one by one by the appliers below
	// (from the worker's cache when the change's version is known): one list of a namespace
	// holding thousands of Works costs the API server and the worker far more than a batch needs.
	var items []*unstructured.Unstructured
	if in.All {
		list, err := works.List(ctx, metav1.ListOptions{})
		if err != nil {
			return res, fmt.Errorf("listing Works of cluster %s: %w", in.Cluster, err)
		}
		for i := range list.Items {
			// In a namespace that is deleting, only the Works being deleted are executed
			// (their manifests removed, their finalizers released); the others go next.
			if spaceErr == nil || list.Items[i].GetDeletionTimestamp() != nil {
				items = append(items, &list.Items[i])
			}
		}
	}

	var mu sync.Mutex
	record := func(name string, deleted bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			res.Failed = append(res.Failed, name)
			if res.Error == "" {
				res.Error = err.Error()
			}
		case deleted:
			res.Deleted++
		default:
			res.Applied++
		}
	}
	limit := make(chan struct{}, max(a.Parallelism, 1))
	var wg sync.WaitGroup
	// run executes one Work: w as listed, or, when nil, read by name.
	run := func(name string, w *unstructured.Unstructured) {
		limit <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-limit; wg.Done() }()
			var err error
			if w == nil {
				w, err = a.read(ctx, works, namespace, name, in.Versions[name])
			}
			switch {
			case apierrors.IsNotFound(err):
				// Gone: its objects were removed while it was deleting, or by the orphan sweep.
			case err != nil:
				record(name, false, fmt.Errorf("reading Work %s/%s: %w", namespace, name, err))
			default:
				deleted, err := a.execute(ctx, member, works, w)
				record(name, deleted, err)
			}
			activity.RecordHeartbeat(ctx, name)
		}()
	}
	for _, w := range items {
		run(w.GetName(), w)
	}
	if !in.All {
		for _, name := range in.Works {
			run(name, nil)
		}
	}
	wg.Wait()
	slices.Sort(res.Failed)

	if in.All && spaceErr == nil {
		if err := a.removeOrphans(ctx, member, namespace, items); err != nil {
			return res, err
		}
	}
	if spaceErr != nil {
		res.Failed, res.Error = append(res.Failed, "*"), spaceErr.Error()
	}
	return res, nil
}

// ApplyWork executes one Work of the cluster's execution namespace as ApplyWorks does: its
// manifests are applied to the member (or removed, when it is being deleted) and its Applied
// condition is written. Activities that write a Work call it to have it applied at once; the
// execution workflow remains the reconciler of what this leaves undone.
func (a *Activities) ApplyWork(ctx context.Context, cluster string, work *unstructured.Unstructured) error {
	member, err := a.Members.Get(ctx, cluster)
	if err != nil {
		return err
	}
	works := a.ControlPlane.Resource(kube.Works).Namespace(naming.ExecutionNamespace(cluster))
	_, err = a.execute(ctx, member, works, work.DeepCopy())
	return err
}

// read reads a Work from the cache once it holds version (when known), else from the API
// server. Gone is a NotFound error either way.
func (a *Activities) read(ctx context.Context, works dynamic.ResourceInterface, namespace, name, version string) (*unstructured.Unstructured, error) {
	if version != "" {
		if cached, exists, ok := a.WorkCache.Get(ctx, namespace, name, version); ok {
			if !exists {
				return nil, apierrors.NewNotFound(kube.Works.GroupResource(), name)
			}
			return cached.DeepCopy(), nil
		}
	}
	return works.Get(ctx, name, metav1.GetOptions{})
}

// execute applies or removes one Work and reports whether it was removed. A suspended Work is
// not applied; one being deleted is removed all the same, as what it applied before it was
// suspended is still in the member.
func (a *Activities) execute(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured) (bool, error) {
	if suspended, _, _ := unstructured.NestedBool(work.Object, "spec", "suspendDispatching"); suspended && work.GetDeletionTimestamp() == nil {
		return false, nil
	}
	manifests, err := manifestsOf(work)
	if err != nil {
		_, statusErr := a.writeStatus(ctx, member, works, work, nil, err)
		return false, statusErr
	}
	if work.GetDeletionTimestamp() != nil {
		if !slices.Contains(work.GetFinalizers(), naming.FinalizerExecution) {
			return true, nil
		}
		for _, m := range manifests {
			if err := deleteOwned(ctx, member, work, m); err != nil {
				return false, err
			}
		}
		return true, kube.IgnoreNotFound(setFinalizer(ctx, works, work, false))
	}
	if err := setFinalizer(ctx, works, work, true); apierrors.IsNotFound(err) {
		return true, nil // gone before anything of it was applied
	} else if err != nil {
		return false, err
	}
	return false, a.record(ctx, member, works, work, manifests, applyAll(ctx, member, work, manifests))
}

// ApplyWhileWriting brings an update of a Work into the member while write records that
// update in the control plane, then records Applied on the Work as written: the member does
// not wait for the control plane's write. held is the Work as last read: the update is applied
// as its next generation, and again as written should the write say otherwise. ctx bounds the
// member's side; write carries its own. It is for a Work the member holds objects of already,
// under execution's finalizer: should the write fail, the member is ahead of its Work until the
// writer writes it again, and Work execution, which applies what the Work holds, stays the
// reconciler of last resort.
func (a *Activities) ApplyWhileWriting(ctx context.Context, cluster string, held, work *unstructured.Unstructured, write func() (*unstructured.Unstructured, error)) (written *unstructured.Unstructured, writeErr, applyErr error) {
	manifests, err := manifestsOf(work)
	if err != nil { // nothing to apply ahead of the record: written, then executed as usual
		if written, writeErr = write(); writeErr == nil {
			applyErr = a.ApplyWork(ctx, cluster, written)
		}
		return written, writeErr, applyErr
	}
	next := work.DeepCopy()
	next.SetUID(held.GetUID())
	next.SetGeneration(held.GetGeneration() + 1)
	var member *members.Member
	done := make(chan struct{})
	go func() {
		defer close(done)
		if member, applyErr = a.Members.Get(ctx, cluster); applyErr == nil {
			applyErr = applyAll(ctx, member, next, manifests)
		}
	}()
	written, writeErr = write()
	<-done
	if writeErr != nil || member == nil {
		return written, writeErr, applyErr
	}
	if applyErr == nil && (written.GetUID() != next.GetUID() || written.GetGeneration() != next.GetGeneration()) {
		applyErr = applyAll(ctx, member, written, manifests) // stamped as written
	}
	works := a.ControlPlane.Resource(kube.Works).Namespace(written.GetNamespace())
	return written, nil, a.record(ctx, member, works, written, manifests, applyErr)
}

// applyAll server-side-applies every manifest of the Work to the member.
func applyAll(ctx context.Context, member *members.Member, work *unstructured.Unstructured, manifests []*unstructured.Unstructured) error {
	var applyErr error
	for _, m := range manifests {
		if err := apply(ctx, member, work, m); err != nil {
			applyErr = errors.Join(applyErr, err)
		}
	}
	return applyErr
}

// record writes the Work's Applied condition for the outcome of applying its manifests and
// counts it; it returns the apply's error, or the status write's.
func (a *Activities) record(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured, manifests []*unstructured.Unstructured, applyErr error) error {
	written, err := a.writeStatus(ctx, member, works, work, manifests, applyErr)
	if err != nil {
		return err
	}
	if applyErr != nil {
		a.Metrics.countError(member.Name, applyErr)
	} else if written {
		a.Metrics.observePropagation(member.Name, work.GetAnnotations()[naming.AnnotationDetectedAt])
	}
	return applyErr
}

// applyAttempts bounds the reads and writes of one manifest when the object keeps changing
// between them.
const applyAttempts = 3

// apply server-side-applies one manifest to the member, labelled with its Work so that only
// objects karmadaflow created are ever deleted, and stamped with the Work's uid and generation.
// An object that exists there already and that karmadaflow did not create (a provider's own
// Service, say) is left exactly as it is. Two appliers may bring the same Work into a member
// at once (Work execution, and the writer of the Work): an object that holds a later
// generation of the Work is left as it is, and the write is conditional on the object read, so
// the member never goes back to an older generation.
func apply(ctx context.Context, member *members.Member, work, manifest *unstructured.Unstructured) error {
	client, err := resourceFor(member, manifest)
	if err != nil {
		return err
	}
	// The first read is served from the API server's watch cache, at a fraction of a quorum
	// read's cost: the write is conditional on it, so a read a moment old costs a conflict and
	// a fresh read, never a wrong write.
	read := metav1.GetOptions{ResourceVersion: "0"}
	for attempt := 1; ; attempt++ {
		current, err := client.Get(ctx, manifest.GetName(), read)
		switch {
		case apierrors.IsNotFound(err):
			current = nil
		case err != nil:
			return fmt.Errorf("cluster %s: reading %s %s/%s: %w", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(), err)
		case current.GetLabels()[naming.LabelWorkName] == "":
			return nil // not ours: never modified, never deleted
		case !ownedBy(current, work):
			return fmt.Errorf("cluster %s: %s %s/%s belongs to Work %s/%s", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(),
				current.GetLabels()[naming.LabelWorkNamespace], current.GetLabels()[naming.LabelWorkName])
		case holdsLaterGeneration(current, work):
			return nil
		}
		err = write(ctx, member, client, stamped(manifest, work, current))
		if !apierrors.IsConflict(err) || attempt == applyAttempts {
			return err
		}
		read = metav1.GetOptions{}
	}
}

// stamped is the manifest as applied for work: labelled with the Work, stamped with its uid and
// generation, and, when the object exists (current), conditional on its resourceVersion.
func stamped(manifest, work, current *unstructured.Unstructured) *unstructured.Unstructured {
	obj := manifest.DeepCopy()
	lbls := obj.GetLabels()
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[naming.LabelWorkName] = work.GetName()
	lbls[naming.LabelWorkNamespace] = work.GetNamespace()
	obj.SetLabels(lbls)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[naming.AnnotationWorkUID] = string(work.GetUID())
	annotations[naming.AnnotationWorkGeneration] = strconv.FormatInt(work.GetGeneration(), 10)
	obj.SetAnnotations(annotations)
	version := ""
	if current != nil {
		version = current.GetResourceVersion()
	}
	obj.SetResourceVersion(version)
	return obj
}

// write applies obj; the first object of a namespace the member lacks creates it (Karmada
// propagates namespaces to its members, karmadaflow does not).
func write(ctx context.Context, member *members.Member, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := kube.Apply(ctx, client, obj)
	if apierrors.IsNotFound(err) && obj.GetNamespace() != "" {
		if err = ensureNamespace(ctx, member, obj.GetNamespace()); err == nil {
			_, err = kube.Apply(ctx, client, obj)
		}
	}
	if err != nil {
		return fmt.Errorf("cluster %s: %w", member.Name, err)
	}
	return nil
}

// holdsLaterGeneration tells whether the object in the member was applied from a later
// generation of the same Work (same uid) than work.
func holdsLaterGeneration(obj, work *unstructured.Unstructured) bool {
	uid, generation := appliedFrom(obj)
	return uid != "" && uid == string(work.GetUID()) && generation > work.GetGeneration()
}

// appliedFrom reads the stamp of the Work an object was applied from: empty when it has none.
func appliedFrom(obj *unstructured.Unstructured) (uid string, generation int64) {
	annotations := obj.GetAnnotations()
	generation, _ = strconv.ParseInt(annotations[naming.AnnotationWorkGeneration], 10, 64)
	return annotations[naming.AnnotationWorkUID], generation
}

// ensureNamespace creates namespace in the member if it does not exist.
func ensureNamespace(ctx context.Context, member *members.Member, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{naming.LabelCreatedBy: naming.FieldManager}}}
	_, err := member.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: naming.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return nil
}

// deleteOwned deletes the manifest's object from the member if this Work created it.
func deleteOwned(ctx context.Context, member *members.Member, work, manifest *unstructured.Unstructured) error {
	client, err := resourceFor(member, manifest)
	if err != nil {
		return err
	}
	current, err := client.Get(ctx, manifest.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster %s: reading %s %s/%s: %w", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(), err)
	}
	if !ownedBy(current, work) || appliedByAnother(current, work) {
		return nil
	}
	err = client.Delete(ctx, manifest.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(current.GetUID())}})
	if kube.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("cluster %s: deleting %s %s/%s: %w", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(), err)
	}
	return nil
}

// removeOrphans deletes member objects labelled with a Work of this namespace that no longer
// exists (a Work deleted before its finalizer was set), as the API server says when the
// object is about to be deleted. Only kinds that Works here carry are looked at.
func (a *Activities) removeOrphans(ctx context.Context, member *members.Member, namespace string, works []*unstructured.Unstructured) error {
	existing := map[string]bool{}
	kinds := map[schema.GroupVersionResource]bool{kube.Services: true, kube.EndpointSlices: true}
	for _, w := range works {
		existing[w.GetName()] = true
		manifests, _ := manifestsOf(w)
		for _, m := range manifests {
			if mapping, err := member.Mapper.RESTMapping(m.GroupVersionKind().GroupKind(), m.GroupVersionKind().Version); err == nil {
				kinds[mapping.Resource] = true
			}
		}
	}
	selector := labels.Set{naming.LabelWorkNamespace: namespace}.String()
	for _, gvr := range sortedResources(kinds) {
		list, err := member.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return fmt.Errorf("cluster %s: listing %s: %w", member.Name, gvr.Resource, err)
		}
		for _, obj := range list.Items {
			if existing[obj.GetLabels()[naming.LabelWorkName]] {
				continue
			}
			// A Work written after the list above may have been applied since (a
			// MultiClusterService applies the Works it writes at once): ask before deleting.
			if exists, err := a.workExists(ctx, namespace, obj.GetLabels()[naming.LabelWorkName]); err != nil || exists {
				if err != nil {
					return err
				}
				continue
			}
			err := member.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Delete(ctx, obj.GetName(),
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(obj.GetUID())}})
			if kube.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return fmt.Errorf("cluster %s: deleting orphan %s %s/%s: %w", member.Name, gvr.Resource, obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	return nil
}

// workExists reads the Work from the API server: whether it exists now.
func (a *Activities) workExists(ctx context.Context, namespace, name string) (bool, error) {
	_, err := a.ControlPlane.Resource(kube.Works).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("reading Work %s/%s: %w", namespace, name, err)
}

// writeStatus records the Applied condition and manifest statuses, unless they already say so,
// and reports whether it wrote.
func (a *Activities) writeStatus(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured, manifests []*unstructured.Unstructured, applyErr error) (bool, error) {
	cond := metav1.Condition{
		Type: "Applied", Status: metav1.ConditionTrue, Reason: ReasonAppliedSuccessful,
		Message: "Manifest has been successfully applied", ObservedGeneration: work.GetGeneration(),
	}
	if applyErr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonAppliedFailed, applyErr.Error()
	}
	var status struct {
		Conditions       []metav1.Condition `json:"conditions,omitempty"`
		ManifestStatuses []any              `json:"manifestStatuses,omitempty"`
	}
	if raw, ok, _ := unstructured.NestedMap(work.Object, "status"); ok {
		if err := kube.FromUnstructured(&unstructured.Unstructured{Object: raw}, &status); err != nil {
			return false, err
		}
	}
	if current := meta.FindStatusCondition(status.Conditions, "Applied"); current != nil &&
		current.Status == cond.Status && current.ObservedGeneration == cond.ObservedGeneration && current.Message == cond.Message {
		return false, nil
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	status.ManifestStatuses = status.ManifestStatuses[:0]
	for i, m := range manifests {
		gvk := m.GroupVersionKind()
		plural, _ := meta.UnsafeGuessKindToResource(gvk) // for kinds the member does not serve
		resource := plural.Resource
		if mapping, err := member.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			resource = mapping.Resource.Resource
		}
		status.ManifestStatuses = append(status.ManifestStatuses, map[string]any{"identifier": map[string]any{
			"ordinal": int64(i), "group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind,
			"resource": resource, "namespace": m.GetNamespace(), "name": m.GetName(),
		}})
	}
	statusMap, err := kube.ToUnstructured(&status)
	if err != nil {
		return false, err
	}
	updated := work.DeepCopy()
	updated.Object["status"] = statusMap.Object
	written, err := works.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	if apierrors.IsNotFound(err) {
		return false, nil // gone: it has no status to write
	}
	if err != nil {
		return false, fmt.Errorf("writing status of Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	a.WorkCache.Wrote(written) // a read of the MultiClusterService's Works in this process shows it
	return true, nil
}

// setFinalizer adds or removes execution's finalizer; a Work that is gone is a NotFound error.
func setFinalizer(ctx context.Context, works dynamic.ResourceInterface, work *unstructured.Unstructured, present bool) error {
	finalizers := work.GetFinalizers()
	if slices.Contains(finalizers, naming.FinalizerExecution) == present {
		return nil
	}
	if present {
		finalizers = append(slices.Clone(finalizers), naming.FinalizerExecution)
	} else {
		finalizers = slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == naming.FinalizerExecution })
	}
	work.SetFinalizers(finalizers)
	updated, err := works.Update(ctx, work, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	if err != nil {
		return fmt.Errorf("updating finalizers of Work %s/%s: %w", work.GetNamespace(), work.GetName(), err)
	}
	work.Object = updated.Object
	return nil
}

func manifestsOf(work *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	raw, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
	out := make([]*unstructured.Unstructured, 0, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("work %s/%s: manifest %d is not an object", work.GetNamespace(), work.GetName(), i)
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("work %s/%s: manifest %d needs apiVersion, kind and metadata.name", work.GetNamespace(), work.GetName(), i)
		}
		out = append(out, u)
	}
	return out, nil
}

func resourceFor(member *members.Member, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := member.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		member.Mapper.Reset()
		return nil, fmt.Errorf("cluster %s: no resource for %s: %w", member.Name, gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return member.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
	}
	return member.Dynamic.Resource(mapping.Resource), nil
}

// ownedBy tells whether the object in the member is labelled with work's name.
func ownedBy(obj, work *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	return l[naming.LabelWorkName] == work.GetName() && l[naming.LabelWorkNamespace] == work.GetNamespace()
}

// appliedByAnother tells whether the object in the member, labelled with work's name, was
// applied from another Work of that name (one created since work was deleted).
func appliedByAnother(obj, work *unstructured.Unstructured) bool {
	uid, _ := appliedFrom(obj)
	return uid != "" && work.GetUID() != "" && uid != string(work.GetUID())
}

func sortedResources(set map[schema.GroupVersionResource]bool) []schema.GroupVersionResource {
	out := make([]schema.GroupVersionResource, 0, len(set))
	for gvr := range set {
		out = append(out, gvr)
	}
	slices.SortFunc(out, func(x, y schema.GroupVersionResource) int {
		return cmp.Compare(x.String(), y.String())
	})
	return out
}

func ptr[T any](v T) *T { return &v }
