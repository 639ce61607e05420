// Package workcache keeps the Works of MultiClusterServices as a watch on the control plane
// sees them, indexed by MultiClusterService, so that activities read them without listing the
// API server. A read waits until the writes this process made to the MultiClusterService's
// Works are visible in the cache; when it cannot (the cache is not synced yet, or the watch
// lags too long), the caller is told to read the API server instead.
package workcache

import (
	"context"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// MaxWait is how long a read waits for this process's own writes to show in the cache.
const MaxWait = 2 * time.Second

const byMCS = "mcs"

// Cache holds every Work that carries the MultiClusterService labels.
type Cache struct {
	informer cache.SharedIndexInformer

	mu sync.Mutex
	// awaiting are this process's writes not yet seen, by MultiClusterService key and Work key.
	awaiting map[string]map[string]expectation
	// changed is closed (and replaced) whenever awaiting shrinks.
	changed chan struct{}
	// opaque is set when a resourceVersion is not a number: writes cannot be ordered against
	// the cache, so it answers nothing.
	opaque bool
}

// expectation is a write waiting to be seen: the object at resourceVersion rv or later, or,
// for a delete, its disappearance (or any later version of it).
type expectation struct {
	rv      uint64
	deleted bool
}

// New prepares a cache of the control plane's Works; Run fills it.
func New(client dynamic.Interface) *Cache {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = networkingv1alpha1.LabelMCSName
	})
	c := &Cache{
		informer: factory.ForResource(kube.Works).Informer(),
		awaiting: map[string]map[string]expectation{},
		changed:  make(chan struct{}),
	}
	// Managed fields are half of a Work's size and nothing here reads them.
	_ = c.informer.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	_ = c.informer.AddIndexers(cache.Indexers{byMCS: func(obj any) ([]string, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, nil
		}
		return []string{mcsKey(u.GetLabels())}, nil
	}})
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.seen(obj, false) },
		UpdateFunc: func(_, obj any) { c.seen(obj, false) },
		DeleteFunc: func(obj any) { c.seen(obj, true) },
	})
	return c
}

// Run watches until ctx is done.
func (c *Cache) Run(ctx context.Context) { c.informer.Run(ctx.Done()) }

// Works returns the Works of the MultiClusterService namespace/name once every write this
// process made to them is visible; ok is false when the caller must read the API server.
// The objects are shared: callers must not modify them.
func (c *Cache) Works(ctx context.Context, namespace, name string) (works []*unstructured.Unstructured, ok bool) {
	if c == nil || !c.informer.HasSynced() {
		return nil, false
	}
	key := namespace + "/" + name
	deadline := time.NewTimer(MaxWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		opaque, waiting, changed := c.opaque, len(c.awaiting[key]) > 0, c.changed
		c.mu.Unlock()
		if opaque {
			return nil, false
		}
		if !waiting {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	objs, err := c.informer.GetIndexer().ByIndex(byMCS, key)
	if err != nil {
		return nil, false
	}
	works = make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			works = append(works, u)
		}
	}
	return works, true
}

// Wrote records that this process wrote work (as the API server returned it).
func (c *Cache) Wrote(work *unstructured.Unstructured) { c.expect(work, false) }

// Deleted records that this process deleted work (as last read).
func (c *Cache) Deleted(work *unstructured.Unstructured) { c.expect(work, true) }

func (c *Cache) expect(work *unstructured.Unstructured, deleted bool) {
	if c == nil || work.GetLabels()[networkingv1alpha1.LabelMCSName] == "" {
		return
	}
	rv, err := strconv.ParseUint(work.GetResourceVersion(), 10, 64)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.opaque = true
		return
	}
	want := expectation{rv: rv, deleted: deleted}
	workKey := work.GetNamespace() + "/" + work.GetName()
	// The watch may have delivered it already; handlers run after the store is updated, and
	// take the same lock, so either this check sees it or the handler clears the entry.
	current, exists, _ := c.informer.GetIndexer().GetByKey(workKey)
	if u, ok := current.(*unstructured.Unstructured); ok && exists && want.metBy(u, false) {
		return
	}
	if !exists && deleted {
		return
	}
	key := mcsKey(work.GetLabels())
	if c.awaiting[key] == nil {
		c.awaiting[key] = map[string]expectation{}
	}
	c.awaiting[key][workKey] = want
}

// seen clears the expectations an event meets.
func (c *Cache) seen(obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key, workKey := mcsKey(u.GetLabels()), u.GetNamespace()+"/"+u.GetName()
	c.mu.Lock()
	defer c.mu.Unlock()
	want, ok := c.awaiting[key][workKey]
	if !ok || !want.metBy(u, deleted) {
		return
	}
	delete(c.awaiting[key], workKey)
	if len(c.awaiting[key]) == 0 {
		delete(c.awaiting, key)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// metBy tells whether the object seen (or its deletion) shows the expected write. A deletion
// ends any expectation: whatever was written is gone.
func (e expectation) metBy(u *unstructured.Unstructured, deleted bool) bool {
	if deleted {
		return true
	}
	rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return false
	}
	if e.deleted {
		return rv > e.rv // written again after the delete
	}
	return rv >= e.rv
}

func mcsKey(l map[string]string) string {
	return l[networkingv1alpha1.LabelMCSNamespace] + "/" + l[networkingv1alpha1.LabelMCSName]
}
