// Package workcache keeps Works as a watch on the control plane sees them, indexed by
// MultiClusterService, so that activities read them without asking the API server. A read of
// a MultiClusterService's Works shows the writes this process made to them at once: until
// the watch shows a write, the object the API server returned for it stands in (a deletion
// hides the Work). A list of a MultiClusterService's Works read from the API server stands in
// the same way (Listed): after a workflow moved to this process, its first reconcile lists
// the Works, unless the cache started watching after the other worker's writes
// (StartedAfter), so that those writes show here at once. A read of one Work waits until the
// cache holds the version a change announced. When the cache cannot answer (not synced yet,
// the watch lags too long, or a Work is too heavy to hold: transform.go), the caller is told
// to read the API server instead.
package workcache

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// MaxWait is how long a read waits for this process's own writes to show in the cache.
const MaxWait = 2 * time.Second

// WriteDelay bounds how long after the moment a workflow gives for another worker's writes
// (StartedAfter) those writes may still land: a workflow task's time is when the task
// started, its local activities write after, and clocks differ between machines.
const WriteDelay = time.Minute

const byMCS = "mcs"

// Cache holds the Works of its Scope.
type Cache struct {
	informer cache.SharedIndexInformer
	// instance names this cache among the caches of every worker process (see Instance).
	instance string
	// started is when Run began: the watch's first list came after it.
	started atomic.Pointer[time.Time]

	mu sync.Mutex
	// awaiting are this process's writes not yet seen, by MultiClusterService key and Work key.
	awaiting map[string]map[string]expectation
	// changed is closed (and replaced) on every event.
	changed chan struct{}
	// gone are the Works seen deleted lately, with the resourceVersion of their deletion.
	gone map[string]deletion
	// opaque is set when a resourceVersion is not a number: writes cannot be ordered against
	// the cache, so it answers nothing.
	opaque bool
	// listedFor are the lists of Listed made for a moment of other workers' writes (see
	// ListedFor), by MultiClusterService key and role ("" for every role).
	listedFor map[string]map[string]listing
	// listedPruned is when listedFor was last rid of the lists older than listedForKept.
	listedPruned time.Time
}

// listing is a list recorded by Listed: made for the moment othersWroteBefore, at time at.
type listing struct {
	othersWroteBefore time.Time
	at                time.Time
}

// listedForKept is how long a list made for a moment of other workers' writes is remembered:
// well beyond the longest wait between two reconciles of a workflow that failed.
const listedForKept = 10 * time.Minute

// expectation is a write waiting to be seen: the object at resourceVersion rv or later, or,
// for a delete, its disappearance (or any later version of it). written is the object the
// API server returned for a write (nil for a delete), shown in its place until then; at is
// when the write was made.
type expectation struct {
	rv      uint64
	deleted bool
	written *unstructured.Unstructured
	at      time.Time
}

type deletion struct {
	rv   uint64
	seen time.Time
}

// goneFor is how long a deletion is remembered for Get.
const goneFor = time.Minute

// Scope says which Works the cache holds.
type Scope int

const (
	// MultiClusterServiceWorks are the Works that carry the MultiClusterService labels.
	MultiClusterServiceWorks Scope = iota
	// AllWorks are every Work, for Work execution.
	AllWorks
)

// New prepares a cache of the control plane's Works in scope; Run fills it.
func New(client dynamic.Interface, scope Scope) *Cache {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		if scope == MultiClusterServiceWorks {
			o.LabelSelector = networkingv1alpha1.LabelMCSName
		}
	})
	return newCache(factory.ForResource(kube.Works).Informer())
}

// newCache is the cache filled by informer, which must not have started.
func newCache(informer cache.SharedIndexInformer) *Cache {
	c := &Cache{
		informer:  informer,
		instance:  utilrand.String(instanceLength),
		awaiting:  map[string]map[string]expectation{},
		changed:   make(chan struct{}),
		gone:      map[string]deletion{},
		listedFor: map[string]map[string]listing{},
	}
	_ = c.informer.SetTransform(held) // see transform.go
	_ = c.informer.AddIndexers(cache.Indexers{byMCS: indexByMCS})
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.seen(obj, false) },
		UpdateFunc: func(_, obj any) { c.seen(obj, false) },
		DeleteFunc: func(obj any) { c.seen(obj, true) },
	})
	return c
}

// indexByMCS indexes a Work by its MultiClusterService (namespace/name), if it has one.
func indexByMCS(obj any) ([]string, error) {
	u, _ := workOf(obj)
	if u == nil || u.GetLabels()[networkingv1alpha1.LabelMCSName] == "" {
		return nil, nil
	}
	return []string{mcsKey(u.GetLabels())}, nil
}

// instanceLength is the length of an Instance: random letters and digits, enough that two
// worker processes never draw the same.
const instanceLength = 12

// Instance names this cache, and so the process, among every worker's: a workflow whose
// activities read and wrote its Works through this cache until now may say so (by this name)
// to the next activity, which, if it runs here, knows the cache shows every one of those
// writes. Empty for a nil cache.
func (c *Cache) Instance() string {
	if c == nil {
		return ""
	}
	return c.instance
}

// Run watches until ctx is done.
func (c *Cache) Run(ctx context.Context) {
	now := time.Now()
	c.started.Store(&now)
	c.informer.Run(ctx.Done())
}

// StartedAfter tells whether the cache started watching more than WriteDelay after t, so that
// its first list, and so what it holds, shows every write made until t.
func (c *Cache) StartedAfter(t time.Time) bool {
	if c == nil {
		return false
	}
	started := c.started.Load()
	return started != nil && started.After(t.Add(WriteDelay))
}

// Works returns the Works of the MultiClusterService namespace/name with every write this
// process made to them; ok is false when the caller must read the API server. The objects
// are shared: callers must not modify them.
func (c *Cache) Works(_ context.Context, namespace, name string) (works []*unstructured.Unstructured, ok bool) {
	return c.works(namespace, name, false)
}

// Known returns what Works does, also while the watch lags behind this process's writes, or
// while it holds one of the Works as its outline only (transform.go): the Works the cache
// knows of, to be read again by name (see Reread); an outline has its identity and role
// labels only. ok is false when the cache cannot answer at all (not synced, or
// resourceVersions it cannot order).
func (c *Cache) Known(namespace, name string) (works []*unstructured.Unstructured, ok bool) {
	return c.works(namespace, name, true)
}

func (c *Cache) works(namespace, name string, evenLagging bool) (works []*unstructured.Unstructured, ok bool) {
	if c == nil || !c.informer.HasSynced() {
		return nil, false
	}
	key := namespace + "/" + name
	// Under the lock, so that no event clears an expectation between the index read and
	// the overlay: the handlers take it too.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opaque || !evenLagging && lagging(c.awaiting[key], time.Now()) {
		return nil, false
	}
	objs, err := c.informer.GetIndexer().ByIndex(byMCS, key)
	if err != nil {
		return nil, false
	}
	works = make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, whole := workOf(obj)
		if u == nil {
			continue
		}
		// A Work held as its outline is read from the API server, unless a write of this
		// process stands in for it.
		if _, pending := c.awaiting[key][u.GetNamespace()+"/"+u.GetName()]; !whole && !evenLagging && !pending {
			return nil, false
		}
		works = append(works, u)
	}
	return withWrites(works, c.awaiting[key]), true
}

// lagging tells whether the watch has not shown one of the writes for MaxWait: the cache is
// then too far behind to answer.
func lagging(awaiting map[string]expectation, now time.Time) bool {
	for _, want := range awaiting {
		if now.Sub(want.at) > MaxWait {
			return true
		}
	}
	return false
}

// withWrites is the cached Works with the writes not seen yet in their place: a written
// object replaces or adds to what the cache holds, a deletion removes it.
func withWrites(cached []*unstructured.Unstructured, awaiting map[string]expectation) []*unstructured.Unstructured {
	if len(awaiting) == 0 {
		return cached
	}
	out := make([]*unstructured.Unstructured, 0, len(cached)+len(awaiting))
	for _, u := range cached {
		if _, pending := awaiting[u.GetNamespace()+"/"+u.GetName()]; !pending {
			out = append(out, u)
		}
	}
	for _, want := range awaiting {
		if want.written != nil {
			out = append(out, want.written)
		}
	}
	return out
}

// Get returns the Work namespace/name once the cache holds it at resourceVersion minVersion
// or later, or knows it deleted since; exists is false when it is gone. ok is false when the
// caller must read the API server: also when what the cache holds at that version is the
// Work's outline only (transform.go). The object is shared: callers must not modify it.
func (c *Cache) Get(ctx context.Context, namespace, name, minVersion string) (work *unstructured.Unstructured, exists, ok bool) {
	least, err := strconv.ParseUint(minVersion, 10, 64)
	if c == nil || err != nil {
		return nil, false, false
	}
	key := namespace + "/" + name
	outlined := false
	ok = c.waitFor(ctx, func() bool {
		obj, found, _ := c.informer.GetIndexer().GetByKey(key)
		if u, whole := workOf(obj); found && u != nil {
			rv, known := versionOf(u)
			work, exists, outlined = u, true, !whole
			return known && rv >= least
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		gone, deleted := c.gone[key]
		work, exists, outlined = nil, false, false
		return deleted && gone.rv >= least
	})
	if !ok || outlined {
		return nil, false, false
	}
	return work, exists, true
}

// waitFor waits, at most MaxWait, until ready (evaluated after each event) is true; false
// means the cache cannot answer: not synced, too slow, or ctx done.
func (c *Cache) waitFor(ctx context.Context, ready func() bool) bool {
	if c == nil || !c.informer.HasSynced() {
		return false
	}
	deadline := time.NewTimer(MaxWait)
	defer deadline.Stop()
	for {
		// Take the channel before looking, so an event in between still wakes the wait.
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if ready() {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Listed records a list of the Works of the MultiClusterService namespace/name with one of
// roles (any role when none is given), read from the API server at resourceVersion
// listVersion: until the watch catches up, each listed Work stands in for an older copy or
// none, and a Work the cache holds from before the list and the list does not name is
// hidden. A read then shows what other processes wrote before the list, without waiting
// for the watch. othersWroteBefore, when set, is the moment until which the workflow said
// other workers may have written the Works: ListedFor then answers for it.
func (c *Cache) Listed(namespace, name string, roles []string, listed []unstructured.Unstructured, listVersion string, othersWroteBefore time.Time) {
	if c == nil || !c.informer.HasSynced() {
		return
	}
	names := make(map[string]bool, len(listed))
	for i := range listed {
		names[listed[i].GetNamespace()+"/"+listed[i].GetName()] = true
		c.expect(&listed[i], false)
	}
	at, known := parseVersion(listVersion)
	if !known {
		return
	}
	objs, err := c.informer.GetIndexer().ByIndex(byMCS, namespace+"/"+name)
	if err != nil {
		return
	}
	for _, obj := range objs {
		if u, _ := workOf(obj); u != nil && goneBeforeList(u, names, roles, at) {
			c.expect(u, true)
		}
	}
	if !othersWroteBefore.IsZero() {
		c.recordListing(namespace+"/"+name, roles, othersWroteBefore)
	}
}

// ListedFor tells whether this process listed the Works of the MultiClusterService
// namespace/name with each of roles (every role when none is given) for the same moment of
// other workers' writes, othersWroteBefore. A workflow gives the same moment to every
// reconcile from the one that loaded it here until one ends well, and another moment once
// another worker ran one: a list made for it came after those writes, and the cache has shown
// it since, so the cache can answer again.
func (c *Cache) ListedFor(namespace, name string, roles []string, othersWroteBefore time.Time) bool {
	if c == nil || othersWroteBefore.IsZero() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lists := c.listedFor[namespace+"/"+name]
	if l, ok := lists[""]; ok && l.othersWroteBefore.Equal(othersWroteBefore) {
		return true
	}
	if len(roles) == 0 {
		return false
	}
	for _, role := range roles {
		if l, ok := lists[role]; !ok || !l.othersWroteBefore.Equal(othersWroteBefore) {
			return false
		}
	}
	return true
}

// recordListing remembers a list of the roles (every role when none is given) of the
// MultiClusterService key made for othersWroteBefore, and forgets those older than
// listedForKept.
func (c *Cache) recordListing(key string, roles []string, othersWroteBefore time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.listedPruned) > time.Minute {
		c.listedPruned = now
		for k, lists := range c.listedFor {
			for role, l := range lists {
				if now.Sub(l.at) > listedForKept {
					delete(lists, role)
				}
			}
			if len(lists) == 0 {
				delete(c.listedFor, k)
			}
		}
	}
	if c.listedFor[key] == nil {
		c.listedFor[key] = map[string]listing{}
	}
	if len(roles) == 0 {
		roles = []string{""}
	}
	for _, role := range roles {
		c.listedFor[key][role] = listing{othersWroteBefore: othersWroteBefore, at: now}
	}
}

// goneBeforeList tells whether a cached Work was deleted before a list of the Works with one
// of roles (any when none is given) at resourceVersion listVersion: the list would name it,
// and does not, and the cache's copy is no newer than the list.
func goneBeforeList(u *unstructured.Unstructured, listed map[string]bool, roles []string, listVersion uint64) bool {
	if listed[u.GetNamespace()+"/"+u.GetName()] {
		return false
	}
	if len(roles) > 0 && !slices.Contains(roles, u.GetLabels()[naming.LabelWorkRole]) {
		return false
	}
	rv, known := versionOf(u)
	return known && rv <= listVersion
}

// Reread records Works read again by name from the API server: each of fresh stands in for an
// older copy, and each of gone is hidden, until the watch catches up, as after Listed.
func (c *Cache) Reread(fresh []unstructured.Unstructured, gone []*unstructured.Unstructured) {
	for i := range fresh {
		c.expect(&fresh[i], false)
	}
	for _, w := range gone {
		c.expect(w, true)
	}
}

// Wrote records that this process wrote work (as the API server returned it).
func (c *Cache) Wrote(work *unstructured.Unstructured) { c.expect(work, false) }

// Deleted records that this process deleted work (as last read).
func (c *Cache) Deleted(work *unstructured.Unstructured) { c.expect(work, true) }

func (c *Cache) expect(work *unstructured.Unstructured, deleted bool) {
	if c == nil || work.GetLabels()[networkingv1alpha1.LabelMCSName] == "" {
		return
	}
	rv, known := versionOf(work)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !known {
		c.opaque = true
		return
	}
	want := expectation{rv: rv, deleted: deleted, at: time.Now()}
	if !deleted {
		want.written = work.DeepCopy()
		want.written.SetManagedFields(nil)
	}
	workKey := work.GetNamespace() + "/" + work.GetName()
	// The watch may have shown it deleted since: nothing is left to wait for.
	if gone, ok := c.gone[workKey]; ok && !deleted && gone.rv >= rv {
		return
	}
	// The watch may have delivered it already; handlers run after the store is updated, and
	// take the same lock, so either this check sees it or the handler clears the entry.
	current, exists, _ := c.informer.GetIndexer().GetByKey(workKey)
	if u, _ := workOf(current); u != nil && exists && want.metBy(u, false) {
		return
	}
	key := mcsKey(work.GetLabels())
	// A Work deleted that the cache does not hold is gone for it already, unless a write of it
	// by this process is still awaited: once seen, that write alone would meet its expectation
	// and show the Work until the deletion is seen. The deletion is awaited instead.
	if _, created := c.awaiting[key][workKey]; !exists && deleted && !created {
		return
	}
	if c.awaiting[key] == nil {
		c.awaiting[key] = map[string]expectation{}
	}
	c.awaiting[key][workKey] = want
}

// seen records a deletion, clears the expectations the event meets and wakes the waiting reads.
func (c *Cache) seen(obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, _ := workOf(obj)
	if u == nil {
		return
	}
	key, workKey := mcsKey(u.GetLabels()), u.GetNamespace()+"/"+u.GetName()
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		close(c.changed)
		c.changed = make(chan struct{})
	}()
	c.remember(workKey, u, deleted)
	want, ok := c.awaiting[key][workKey]
	if !ok || !want.metBy(u, deleted) {
		return
	}
	delete(c.awaiting[key], workKey)
	if len(c.awaiting[key]) == 0 {
		delete(c.awaiting, key)
	}
}

// remember keeps a deletion for goneFor, and forgets it when the Work comes back.
func (c *Cache) remember(workKey string, u *unstructured.Unstructured, deleted bool) {
	if !deleted {
		delete(c.gone, workKey)
		return
	}
	rv, _ := versionOf(u)
	now := time.Now()
	c.gone[workKey] = deletion{rv: rv, seen: now}
	if len(c.gone) < 256 {
		return
	}
	for k, d := range c.gone {
		if now.Sub(d.seen) > goneFor {
			delete(c.gone, k)
		}
	}
}

// metBy tells whether the object seen (or its deletion) shows the expected write. A deletion
// ends any expectation: whatever was written is gone.
func (e expectation) metBy(u *unstructured.Unstructured, deleted bool) bool {
	if deleted {
		return true
	}
	rv, known := versionOf(u)
	if !known {
		return false
	}
	if e.deleted {
		return rv > e.rv // written again after the delete
	}
	return rv >= e.rv
}

// versionOf is the object's resourceVersion as a number; false when it is not one.
func versionOf(u *unstructured.Unstructured) (uint64, bool) {
	return parseVersion(u.GetResourceVersion())
}

func parseVersion(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

func mcsKey(l map[string]string) string {
	return l[networkingv1alpha1.LabelMCSNamespace] + "/" + l[networkingv1alpha1.LabelMCSName]
}
