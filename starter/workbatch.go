package main

import (
	"slices"
	"sync"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// workBatches gathers the names of changed Works per member cluster, so that one signal to
// the cluster's execution workflow carries every Work that changed since the last one: a
// burst of a thousand new Works is a handful of signals, not a thousand.
type workBatches struct {
	mu      sync.Mutex
	pending map[string]map[string]bool // cluster -> Work names
}

func newWorkBatches() *workBatches {
	return &workBatches{pending: map[string]map[string]bool{}}
}

// key records a changed Work of an execution namespace and returns its cluster, the key of
// the trigger; a Work outside execution namespaces concerns no cluster.
func (b *workBatches) key(obj any) (string, error) {
	u := unstructuredOf(obj)
	if u == nil {
		return "", nil
	}
	cluster, ok := naming.ClusterOfExecutionNamespace(u.GetNamespace())
	if !ok {
		return "", nil
	}
	b.add(cluster, u.GetName())
	return cluster, nil
}

func (b *workBatches) add(cluster string, names ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[cluster] == nil {
		b.pending[cluster] = map[string]bool{}
	}
	for _, n := range names {
		b.pending[cluster][n] = true
	}
}

// take removes and returns the cluster's gathered names, sorted.
func (b *workBatches) take(cluster string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.pending[cluster]))
	for n := range b.pending[cluster] {
		names = append(names, n)
	}
	delete(b.pending, cluster)
	slices.Sort(names)
	return names
}
