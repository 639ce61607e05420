package workcache

import (
	"math/bits"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// What the cache holds of a Work. Its readers hand the Works they read back to the API server:
// Work execution updates a Work's finalizers from its cached copy, and the MultiClusterService
// activities update the Works they hold (their labels, annotations and finalizers, or the
// spec of a Service's Work), so every field of metadata and spec is kept: a field left out
// here would be erased by the next such update. Two parts go, which no reader reads and no
// update carries: metadata.managedFields (half of a Work's size; an update without them keeps
// the API server's), and status.manifestStatuses (Work execution's status write makes them
// anew from the manifests, and status is written through its own subresource, which takes
// nothing else). status.conditions stay: the status write keeps the conditions of others.
//
// Works of an execution namespace are written by that member's agent too, and a Work may
// decode into far more memory than its size in the API server (a map entry costs tens of
// bytes of the worker's heap for a few bytes of JSON). A Work that, trimmed, would weigh more
// than MaxHeldWeight is held as its outline only: its identity and the labels the cache's
// index and the readers' roles look at. The cache does not answer for it, and its readers
// read it from the API server, as when the cache lags.
//
// The transform returns a new object and never writes to the one it is given; what it keeps
// is shared with that object, which client-go decoded for the cache alone.

// MaxHeldWeight bounds what the cache holds of one Work, as weigh estimates its heap: more
// than twice a Work carrying an EndpointSlice of 100 endpoints (the EndpointSlice controller's
// default), with zone hints and IPv6 addresses (220 KiB; 150 KiB without), so that the Works of
// MultiClusterServices stay in the cache; a slice of more than about 340 endpoints, or a Work
// of a large ConfigMap, is read from the API server. A Work of 1.25 MB of JSON made of small
// map entries (etcd takes 1.5 MiB) decodes into 10 MiB of heap.
const MaxHeldWeight = 512 << 10

// outlineLabels are the labels an outline keeps: the index's (mcsKey) and those the readers
// pick roles by (naming.RoleOf), which a Work read again by name needs (Known).
var outlineLabels = []string{
	networkingv1alpha1.LabelMCSName, networkingv1alpha1.LabelMCSNamespace,
	naming.LabelWorkRole, networkingv1alpha1.LabelEndpointSliceWorkManagedBy,
}

// outlineFields are the metadata an outline keeps besides its labels.
var outlineFields = []string{"name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp"}

// outline is a Work the cache holds the identity of only (see MaxHeldWeight). It is a type of
// its own so that no reader takes it for a whole Work: workOf tells the two apart.
type outline struct{ *unstructured.Unstructured }

// DeepCopyObject keeps a copy an outline (client-go's cache mutation detector compares them).
func (o outline) DeepCopyObject() runtime.Object {
	return outline{o.DeepCopy()}
}

// workOf is the Work an object of the store stands for, and whether the cache holds it whole;
// nil when it is no Work.
func workOf(obj any) (work *unstructured.Unstructured, whole bool) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o, true
	case outline:
		return o.Unstructured, false
	}
	return nil, false
}

// held is the cache's transform: the Work trimmed of what no reader reads, or its outline when
// that still weighs more than MaxHeldWeight. Other objects (client-go's tombstones) pass.
func held(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	trimmed := trim(u)
	if !weighsAtMost(trimmed.Object, MaxHeldWeight) {
		return outlineOf(u), nil
	}
	return trimmed, nil
}

// trim is the Work without metadata.managedFields and status.manifestStatuses.
func trim(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		out[k] = v
	}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		out["metadata"] = without(md, "managedFields")
	}
	if status, ok := u.Object["status"].(map[string]any); ok {
		out["status"] = without(status, "manifestStatuses")
	}
	return &unstructured.Unstructured{Object: out}
}

// without is m without key, m itself when it has no such key.
func without(m map[string]any, key string) map[string]any {
	if _, ok := m[key]; !ok {
		return m
	}
	out := make(map[string]any, len(m)-1)
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// outlineOf is the outline of a Work: apiVersion, kind, outlineFields and outlineLabels.
func outlineOf(u *unstructured.Unstructured) outline {
	out := map[string]any{}
	for _, field := range []string{"apiVersion", "kind"} {
		if v, ok := u.Object[field].(string); ok {
			out[field] = v
		}
	}
	md, _ := u.Object["metadata"].(map[string]any)
	kept := make(map[string]any, len(outlineFields)+1)
	for _, field := range outlineFields {
		if v, ok := md[field]; ok {
			kept[field] = v
		}
	}
	if all, ok := md["labels"].(map[string]any); ok {
		labels := map[string]any{}
		for _, key := range outlineLabels {
			if v, ok := all[key]; ok {
				labels[key] = v
			}
		}
		if len(labels) > 0 {
			kept["labels"] = labels
		}
	}
	out["metadata"] = kept
	return outline{&unstructured.Unstructured{Object: out}}
}

// Weights of weigh: about what each part of a decoded object costs the Go heap. A map is a
// header and, once it holds an entry, a table of slots, each a key's string header and a
// value's interface (16 bytes each) and a control byte: one group of 8 slots, or, beyond 8
// entries, a power of two of slots filled to 7/8 at most. A list holds a 16-byte interface per
// element, with room to grow. Strings and numbers are boxed behind the interface that holds
// them, and a string's bytes (a key's too) are rounded up to the allocator's size classes.
const (
	weightMap       = 48
	weightMapSlot   = 33
	weightMapGroup  = 8
	weightList      = 24
	weightListItem  = 20
	weightString    = 16
	weightRounding  = 8
	weightScalar    = 8
	weightUnmatched = 16
)

// mapSlots is the number of slots of a map of n entries.
func mapSlots(n int) int {
	switch {
	case n == 0:
		return 0
	case n <= weightMapGroup:
		return weightMapGroup
	}
	return 1 << bits.Len(uint(n*8/7))
}

// weighsAtMost tells whether v (a decoded JSON value) weighs at most budget, as weigh counts;
// it stops as soon as it is known to weigh more, so that an oversized Work costs no more to
// weigh than a held one.
func weighsAtMost(v any, budget int) bool {
	return weigh(v, budget) <= budget
}

// weigh is v's weight, or some weight above budget once it exceeds it.
func weigh(v any, budget int) int {
	switch x := v.(type) {
	case map[string]any:
		total := weightMap + weightMapSlot*mapSlots(len(x))
		for k, item := range x {
			if total > budget {
				return total
			}
			total += len(k) + weightRounding + weigh(item, budget-total)
		}
		return total
	case []any:
		total := weightList + weightListItem*len(x)
		for _, item := range x {
			if total > budget {
				return total
			}
			total += weigh(item, budget-total)
		}
		return total
	case string:
		return weightString + len(x) + weightRounding
	case int64, float64, bool, nil:
		return weightScalar
	}
	return weightUnmatched
}
