package trigger

import (
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// RelevantFunc reports whether an update from oldObj to newObj should reach the workflow.
// The arguments are the informer's objects (typed or unstructured), so a predicate may assert
// their concrete type to compare content.
type RelevantFunc func(oldObj, newObj metav1.Object) bool

// GenerationOrMetadata is relevant when the generation changes (the spec of a resource that
// keeps one), deletion starts, or one of the named labels or annotations is added, removed or
// changed. Status-only updates and other metadata changes (finalizers, managed fields, other
// labels) are not.
func GenerationOrMetadata(labels, annotations []string) RelevantFunc {
	return func(oldObj, newObj metav1.Object) bool {
		return oldObj.GetGeneration() != newObj.GetGeneration() ||
			(oldObj.GetDeletionTimestamp() == nil) != (newObj.GetDeletionTimestamp() == nil) ||
			anyValueChanged(oldObj.GetLabels(), newObj.GetLabels(), labels) ||
			anyValueChanged(oldObj.GetAnnotations(), newObj.GetAnnotations(), annotations)
	}
}

func anyValueChanged(oldValues, newValues map[string]string, keys []string) bool {
	for _, key := range keys {
		oldValue, oldOK := oldValues[key]
		newValue, newOK := newValues[key]
		if oldOK != newOK || oldValue != newValue {
			return true
		}
	}
	return false
}

// ObjectKey is "<namespace>/<name>" for namespaced objects and "<name>" for cluster-scoped
// ones, also for the tombstones of deletions the informer missed.
func ObjectKey(obj any) (string, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", fmt.Errorf("key of %T: %w", obj, err)
	}
	return key, nil
}

// SplitKey splits an ObjectKey into namespace (empty for cluster-scoped objects) and name.
func SplitKey(key string) (namespace, name string, err error) {
	return cache.SplitMetaNamespaceKey(key)
}

// IsResourceExhausted tells whether err is Temporal asking callers to back off (rate limits,
// busy workflow, too many concurrent requests); the SDK turns the gRPC status into
// serviceerror.ResourceExhausted.
func IsResourceExhausted(err error) bool {
	var exhausted *serviceerror.ResourceExhausted
	return errors.As(err, &exhausted)
}

// EndpointSliceServiceKey maps an EndpointSlice (or its tombstone) to "<namespace>/<service>",
// the key of the MultiClusterService of its Service; a slice of no Service has none.
func EndpointSliceServiceKey(obj any) (string, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || slice.Labels[discoveryv1.LabelServiceName] == "" {
		return "", nil
	}
	return slice.Namespace + "/" + slice.Labels[discoveryv1.LabelServiceName], nil
}
