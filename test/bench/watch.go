package bench

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// SliceEvent is one observation of an EndpointSlice by a watch; Deleted marks its removal.
type SliceEvent struct {
	Slice   *discoveryv1.EndpointSlice
	Deleted bool
	At      time.Time
}

// watchSlices runs an informer on the EndpointSlices of namespace in cluster that match
// selector, calling on for every addition, update and deletion (from the informer's single
// goroutine) until ctx ends. It returns once the initial list is delivered.
func (b *Bench) watchSlices(ctx context.Context, cluster, namespace string, selector labels.Set, on func(SliceEvent)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(b.kube(cluster), 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector.String() }))
	informer := factory.Discovery().V1().EndpointSlices().Informer()
	deliver := func(obj any, deleted bool) {
		at := time.Now()
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if slice, ok := obj.(*discoveryv1.EndpointSlice); ok {
			on(SliceEvent{Slice: slice, Deleted: deleted, At: at})
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { deliver(obj, false) },
		UpdateFunc: func(_, obj any) { deliver(obj, false) },
		DeleteFunc: func(obj any) { deliver(obj, true) },
	}); err != nil {
		return fmt.Errorf("watching EndpointSlices in cluster %s: %w", cluster, err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watching EndpointSlices in cluster %s: %w", cluster, context.Cause(ctx))
	}
	return nil
}

// dispatchedSelector selects the slices karmadaflow dispatched for service (all services when
// empty).
func dispatchedSelector(service string) labels.Set {
	set := labels.Set{networkingv1alpha1.LabelEndpointSliceManagedBy: networkingv1alpha1.ManagedByEndpointSliceDispatch}
	if service != "" {
		set[networkingv1alpha1.LabelServiceName] = service
	}
	return set
}

// MCSEvent is one observation of a MultiClusterService: its name and the status of each
// condition type.
type MCSEvent struct {
	Name       string
	Conditions map[string]string
	Deleted    bool
	At         time.Time
}

// watchMCS runs an informer on the MultiClusterServices of namespace in the control plane,
// calling on for every change until ctx ends; it returns once the initial list is delivered.
func (b *Bench) watchMCS(ctx context.Context, namespace string, on func(MCSEvent)) error {
	return b.watchControlPlane(ctx, networkingv1alpha1.MultiClusterServiceGVR, namespace, nil, func(u *unstructured.Unstructured, deleted bool, at time.Time) {
		ev := MCSEvent{Name: u.GetName(), Conditions: map[string]string{}, Deleted: deleted, At: at}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				t, _ := m["type"].(string)
				s, _ := m["status"].(string)
				ev.Conditions[t] = s
			}
		}
		on(ev)
	})
}

// watchControlPlane runs an informer on resource gvr of the control plane (namespace "" for
// all namespaces) matching selector, calling on for every change until ctx ends; it returns
// once the initial list is delivered.
func (b *Bench) watchControlPlane(ctx context.Context, gvr schema.GroupVersionResource, namespace string, selector labels.Set,
	on func(u *unstructured.Unstructured, deleted bool, at time.Time)) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(b.controlPlane(), 0, namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = selector.String()
	})
	informer := factory.ForResource(gvr).Informer()
	deliver := func(obj any, deleted bool) {
		at := time.Now()
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			on(u, deleted, at)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { deliver(obj, false) },
		UpdateFunc: func(_, obj any) { deliver(obj, false) },
		DeleteFunc: func(obj any) { deliver(obj, true) },
	}); err != nil {
		return fmt.Errorf("watching %s in the control plane: %w", gvr.Resource, err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watching %s in the control plane: %w", gvr.Resource, context.Cause(ctx))
	}
	return nil
}

// manifestAddresses returns the endpoint addresses of the EndpointSlices a Work carries.
func manifestAddresses(work *unstructured.Unstructured) []string {
	manifests, _, _ := unstructured.NestedSlice(work.Object, "spec", "workload", "manifests")
	var out []string
	for _, m := range manifests {
		obj, ok := m.(map[string]any)
		if !ok || obj["kind"] != "EndpointSlice" {
			continue
		}
		endpoints, _, _ := unstructured.NestedSlice(obj, "endpoints")
		for _, ep := range endpoints {
			if e, ok := ep.(map[string]any); ok {
				addrs, _, _ := unstructured.NestedStringSlice(e, "addresses")
				out = append(out, addrs...)
			}
		}
	}
	return out
}
