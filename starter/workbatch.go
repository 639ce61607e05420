package main

import (
	"slices"
	"sync"
	"time"

	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// workBatches gathers the names of changed Works per member cluster, so that one signal to
// the cluster's execution workflow carries every Work that changed since the last one: a
// burst of a thousand new Works is a few hundred signals, not a thousand.
type workBatches struct {
	mu      sync.Mutex
	pending map[string]map[string]bool // cluster -> Work names
	burst   map[string]bool            // cluster -> the last batch taken had several Works
}

// burstHold is how long, after a batch of several Works, the next signal to the same cluster
// waits, so that a burst (a cold start, a Service in many MultiClusterServices) is batched.
// A single Work changing, however often, is signalled at once: a change to one slice reaches
// its consumers without waiting.
const burstHold = 500 * time.Millisecond

func newWorkBatches() *workBatches {
	return &workBatches{pending: map[string]map[string]bool{}, burst: map[string]bool{}}
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
	b.burst[cluster] = len(names) > 1
	slices.Sort(names)
	return names
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
