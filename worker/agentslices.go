package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/keymutex"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// agentSliceCollector collects the member's EndpointSlices of the Services the collect-request
// Works of its execution namespace name, into Works of that namespace, as karmada-agent's
// endpointsliceCollect controller does (mcsactivities.AgentCollectedWork): one per slice, kept
// as the slice changes, removed once the slice or the request is gone. The control plane reads
// them (ReadAgentCollection), released from their finalizer once it has seen them go. One key
// is a Service, "<namespace>/<name>", the key of its MultiClusterService.
type agentSliceCollector struct {
	cluster string
	works   dynamic.ResourceInterface // of the execution namespace
	// The informers' stores: Works of the execution namespace (by Service), member slices.
	workStore  cache.Indexer
	sliceStore cache.Indexer
	// synced tells whether both stores hold their initial lists: a sync before that could
	// take a slice for gone.
	synced func() bool
	// locks serializes the syncs of one Service: its slices' trigger and its Works' trigger
	// may hand it over at the same time.
	locks  keymutex.KeyMutex
	kick   chan struct{}
	logger *zap.Logger
}

// byService indexes the Works of the execution namespace that concern a Service, the
// requests and what was collected, by collectKey.
const byService = "byService"

func newAgentSliceCollector(cluster string, controlPlane dynamic.Interface, works, slices cache.SharedIndexInformer, logger *zap.Logger) (*agentSliceCollector, error) {
	if err := works.AddIndexers(cache.Indexers{byService: func(obj any) ([]string, error) {
		key, err := collectKey(obj)
		if key == "" {
			return nil, err
		}
		return []string{key}, err
	}}); err != nil {
		return nil, fmt.Errorf("indexing the Works of cluster %s by Service: %w", cluster, err)
	}
	return &agentSliceCollector{
		cluster:    cluster,
		works:      controlPlane.Resource(kube.Works).Namespace(naming.ExecutionNamespace(cluster)),
		workStore:  works.GetIndexer(),
		sliceStore: slices.GetIndexer(),
		synced:     func() bool { return works.HasSynced() && slices.HasSynced() },
		locks:      keymutex.NewHashed(0),
		kick:       make(chan struct{}, 1),
		logger:     logger,
	}, nil
}

// collectKey maps a collect-request Work, or a Work an agent collected, to the key of its
// Service; other Works have none.
func collectKey(obj any) (string, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	w, ok := obj.(*unstructured.Unstructured)
	if !ok || !(mcsactivities.IsCollectRequest(w) || mcsactivities.IsCollected(w)) {
		return "", nil
	}
	labels := w.GetLabels()
	if labels[networkingv1alpha1.LabelMCSNamespace] == "" || labels[networkingv1alpha1.LabelMCSName] == "" {
		return "", nil
	}
	return labels[networkingv1alpha1.LabelMCSNamespace] + "/" + labels[networkingv1alpha1.LabelMCSName], nil
}

// sync makes the Works collected for a Service hold exactly its collectable slices in the
// member while a request for it is held, and none otherwise.
func (c *agentSliceCollector) sync(ctx context.Context, key string) error {
	if !c.synced() {
		return errors.New("the informers of Works and EndpointSlices have not synced yet")
	}
	c.locks.LockKey(key)
	defer func() { _ = c.locks.UnlockKey(key) }()
	namespace, service, err := trigger.SplitKey(key)
	if err != nil {
		return err
	}
	held, err := c.workStore.ByIndex(byService, key)
	if err != nil {
		return err
	}
	requested := false
	collected := map[string]*unstructured.Unstructured{}
	for _, obj := range held {
		w := obj.(*unstructured.Unstructured)
		switch {
		case mcsactivities.IsCollectRequest(w):
			requested = requested || w.GetDeletionTimestamp() == nil
		case mcsactivities.IsCollected(w):
			collected[w.GetName()] = w
		}
	}
	desired := map[string]*unstructured.Unstructured{}
	if requested {
		slices, err := c.sliceStore.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil {
			return err
		}
		for _, obj := range slices {
			slice := obj.(*discoveryv1.EndpointSlice)
			if slice.Labels[discoveryv1.LabelServiceName] == service && mcsactivities.Collectable(slice) {
				w := mcsactivities.AgentCollectedWork(c.cluster, slice)
				desired[w.GetName()] = w
			}
		}
	}
	var errs []error
	for name, w := range desired {
		errs = append(errs, c.write(ctx, w, collected[name]))
	}
	for name, w := range collected {
		if _, keep := desired[name]; !keep && w.GetDeletionTimestamp() == nil {
			err := c.works.Delete(ctx, name, metav1.DeleteOptions{})
			if kube.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("deleting Work %s/%s (a slice of %s gone from cluster %s): %w", w.GetNamespace(), name, key, c.cluster, err))
			}
		}
	}
	return errors.Join(errs...)
}

// write creates the Work, or updates the one held (as the informer last saw it) when it
// differs. One still being deleted is written again once gone: until then it is an error, and
// the Service is synced again.
func (c *agentSliceCollector) write(ctx context.Context, w, held *unstructured.Unstructured) error {
	if held != nil && held.GetDeletionTimestamp() != nil {
		return fmt.Errorf("the Work %s/%s is still being deleted; it is written again once gone", held.GetNamespace(), held.GetName())
	}
	if held != nil && mcsactivities.SameAgentWork(held, w) {
		return nil
	}
	var err error
	if held == nil {
		_, err = c.works.Create(ctx, w, metav1.CreateOptions{FieldManager: naming.FieldManager})
		if apierrors.IsAlreadyExists(err) { // written since the informer last saw it: read it, and update
			if held, err = c.works.Get(ctx, w.GetName(), metav1.GetOptions{}); err == nil {
				return c.write(ctx, w, held)
			}
		}
	} else {
		w.SetResourceVersion(held.GetResourceVersion())
		_, err = c.works.Update(ctx, w, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	}
	if err != nil {
		return fmt.Errorf("writing Work %s/%s (collected from cluster %s): %w", w.GetNamespace(), w.GetName(), c.cluster, err)
	}
	return nil
}

// fullPassNow asks for a sync of every Service at once.
func (c *agentSliceCollector) fullPassNow() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// runFullPasses syncs every Service a Work names, every period and when asked, until ctx is
// done: what a missed event or a writer other than the agent changed is made right.
func (c *agentSliceCollector) runFullPasses(ctx context.Context, period time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-time.After(period):
		}
		for _, key := range c.workStore.ListIndexFuncValues(byService) {
			if err := c.sync(ctx, key); err != nil && ctx.Err() == nil {
				c.logger.Warn("collecting EndpointSlices failed; the next event or pass retries", zap.String("service", key), zap.Error(err))
			}
		}
	}
}
