package main

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
)

// workBatches gathers the names of changed Works per member cluster, so that one signal to
// the cluster's execution workflow carries every Work that changed since the last one: a
// burst of a thousand new Works is a few hundred signals, not a thousand. Each name comes with
// the resourceVersion the change was seen at, so that the worker can read the Work from its
// cache once the cache is that fresh.
type workBatches struct {
	mu      sync.Mutex
	pending map[string]map[string]string // cluster -> Work name -> resourceVersion
	burst   map[string]bool              // cluster -> the last batch taken had several Works
}

// burstHold is how long, after a batch of several Works, the next signal to the same cluster
// waits, so that a burst (a cold start, a Service in many MultiClusterServices) is batched.
// A single Work changing, however often, is signalled at once: a change to one slice reaches
// its consumers without waiting.
const burstHold = 500 * time.Millisecond

func newWorkBatches() *workBatches {
	return &workBatches{pending: map[string]map[string]string{}, burst: map[string]bool{}}
}

// key records a changed Work of an execution namespace and returns its cluster, the key of
// the trigger; a Work outside execution namespaces, one that is only a record, or one that the
// worker applies as it writes it (see executedGrace) concerns no cluster here.
func (b *workBatches) key(obj any) (string, error) {
	u := unstructuredOf(obj)
	if u == nil {
		return "", nil
	}
	cluster, ok := naming.ClusterOfExecutionNamespace(u.GetNamespace())
	if !ok || recordOnly(u) || appliedByWriter(u) {
		return "", nil
	}
	b.add(cluster, u)
	return cluster, nil
}

// add records a changed Work of cluster, at the version it was seen at.
func (b *workBatches) add(cluster string, u *unstructured.Unstructured) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[cluster] == nil {
		b.pending[cluster] = map[string]string{}
	}
	b.pending[cluster][u.GetName()] = u.GetResourceVersion() // events come in order: the latest wins
}

// restore puts back the Works of a signal that could not be sent, unless they changed again.
func (b *workBatches) restore(cluster string, versions map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[cluster] == nil {
		b.pending[cluster] = map[string]string{}
	}
	for name, version := range versions {
		if _, newer := b.pending[cluster][name]; !newer {
			b.pending[cluster][name] = version
		}
	}
}

// take removes and returns up to execution.MaxSignalWorks of the cluster's gathered Works:
// their names, sorted, and versions. The rest stay gathered for the next take: a signal
// naming every Work of a large burst would exceed Temporal's payload limit and be refused on
// every retry.
func (b *workBatches) take(cluster string) ([]string, map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pending := b.pending[cluster]
	names := make([]string, 0, min(len(pending), execution.MaxSignalWorks))
	versions := make(map[string]string, cap(names))
	for name, version := range pending {
		if len(names) == execution.MaxSignalWorks {
			break
		}
		names = append(names, name)
		versions[name] = version
	}
	for _, name := range names {
		delete(pending, name)
	}
	if len(pending) == 0 {
		delete(b.pending, cluster)
	}
	b.burst[cluster] = len(names) > 1
	slices.Sort(names)
	return names, versions
}

// send hands the cluster's gathered Works to signal, a bounded batch at a time, until none is
// left; a batch that signal fails is put back (restore) and its error returned, for the
// trigger's retry. A batch smaller than the bound was the last one gathered.
func (b *workBatches) send(cluster string, signal func(names []string, versions map[string]string) error) error {
	for {
		names, versions := b.take(cluster)
		if len(names) == 0 {
			return nil
		}
		if err := signal(names, versions); err != nil {
			b.restore(cluster, versions)
			return err
		}
		if len(names) < execution.MaxSignalWorks {
			return nil
		}
	}
}

// holdAfter is the trigger's hold after a signal to cluster: burstHold after a batch of
// several Works, none after a single one.
func (b *workBatches) holdAfter(cluster string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.burst[cluster] {
		return burstHold
	}
	return 0
}

// recordOnly tells a Work that Work execution has nothing to do with: suspended (the Works a
// MultiClusterService collects from its providers are) and without the execution finalizer,
// so nothing of it was ever applied. A suspended Work that carries the finalizer was applied
// before it was suspended; its deletion is execution's to finish.
func recordOnly(work *unstructured.Unstructured) bool {
	suspended, _, _ := unstructured.NestedBool(work.Object, "spec", "suspendDispatching")
	return suspended && !slices.Contains(work.GetFinalizers(), naming.FinalizerExecution)
}
