package execution

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
)

// The batch entry: ApplyWorks executes a cluster's named Works, or all of them, in its member;
// each is applied, or removed when it is being deleted.

// Activities holds the clients the execution activities use.
type Activities struct {
	ControlPlane dynamic.Interface
	Members      *members.Registry
	// Parallelism bounds the Works applied at once in one call.
	Parallelism int
	Metrics     *Metrics
	// WorkCache, when set, answers reads of Works whose changed version is known.
	WorkCache *workcache.Cache
	// Agent is set when these functions run inside a Pull member, as its agent's controller
	// (called directly, not as activities): the control plane's side of a full pass makes the
	// execution namespace, which the agent may not.
	Agent bool
	// Written, when set, remembers what this process wrote to members, so that applying a
	// Work again leaves the objects it still holds as written alone.
	Written *WrittenVersions
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
	// Pull: the cluster is in Pull mode, so nothing was applied here: its agent, which
	// watches the Works of its execution namespace, applies them.
	Pull bool `json:",omitempty"`
}

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
		if !a.Agent {
			spaceErr = a.ensureExecutionSpace(ctx, in.Cluster)
		}
	}
	member, err := a.Members.Get(ctx, in.Cluster)
	if members.IsPull(err) {
		return ApplyResult{Pull: true}, nil
	}
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

	// A full pass reads the member's objects by one list of each kind, not one read each; the
	// orphan sweep after the applies looks at the same lists.
	var listed listedObjects
	if in.All {
		if listed, err = listWorkObjects(ctx, member, namespace, items); err != nil {
			return res, err
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
				deleted, err := a.execute(ctx, member, works, w, listed)
				record(name, deleted, err)
			}
			if activity.IsActivity(ctx) { // a Pull cluster's agent calls it as a plain function
				activity.RecordHeartbeat(ctx, name)
			}
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
		if err := a.removeOrphans(ctx, member, namespace, items, listed); err != nil {
			return res, err
		}
	}
	if spaceErr != nil {
		res.Failed, res.Error = append(res.Failed, "*"), spaceErr.Error()
	}
	return res, nil
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
// suspended is still in the member. listed holds the member objects a full pass read (nil
// otherwise).
func (a *Activities) execute(ctx context.Context, member *members.Member, works dynamic.ResourceInterface, work *unstructured.Unstructured, listed listedObjects) (bool, error) {
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
	return false, a.record(ctx, member, works, work, manifests, applyAll(ctx, member, works, work, manifests, listed, a.Written))
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
