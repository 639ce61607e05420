package execution

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The member objects of a full pass, read by one list per kind instead of one read per
// manifest.

// listedObjects are the member objects that Works of one execution namespace applied, as one
// list of each kind read them, by kind, namespace and name. A manifest whose object is not
// among them is read by name: it may be absent, or someone else's.
type listedObjects map[listedKey]*unstructured.Unstructured

type listedKey struct {
	kind            schema.GroupKind
	namespace, name string
}

func listedKeyOf(obj *unstructured.Unstructured) listedKey {
	return listedKey{obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName()}
}

// get returns a copy of the listed object of manifest's kind, namespace and name, or nil.
func (l listedObjects) get(manifest *unstructured.Unstructured) *unstructured.Unstructured {
	if obj, ok := l[listedKeyOf(manifest)]; ok {
		return obj.DeepCopy()
	}
	return nil
}

// listWorkObjects lists, in the member, the objects of each kind that works carry, labelled
// with the execution namespace. Like a read from the watch cache, a list may be a moment old:
// writes are conditional on what was read, so a stale object costs a conflict and a fresh
// read, never a wrong write.
func listWorkObjects(ctx context.Context, member *members.Member, namespace string, works []*unstructured.Unstructured) (listedObjects, error) {
	listed := listedObjects{}
	selector := labels.Set{naming.LabelWorkNamespace: namespace}.String()
	for _, gvr := range sortedResources(workResources(member, works)) {
		list, err := member.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: listing %s: %w", member.Name, gvr.Resource, err)
		}
		for i := range list.Items {
			listed[listedKeyOf(&list.Items[i])] = &list.Items[i]
		}
	}
	return listed, nil
}

// workResources are the member's resources of the manifests of works, and Services and
// EndpointSlices, the kinds of a MultiClusterService's Works.
func workResources(member *members.Member, works []*unstructured.Unstructured) map[schema.GroupVersionResource]bool {
	kinds := map[schema.GroupVersionResource]bool{kube.Services: true, kube.EndpointSlices: true}
	for _, w := range works {
		manifests, _ := manifestsOf(w)
		for _, m := range manifests {
			if mapping, err := member.Mapper.RESTMapping(m.GroupVersionKind().GroupKind(), m.GroupVersionKind().Version); err == nil {
				kinds[mapping.Resource] = true
			}
		}
	}
	return kinds
}

// sortedResources are the resources of set, in a fixed order.
func sortedResources(set map[schema.GroupVersionResource]bool) []schema.GroupVersionResource {
	return slices.SortedFunc(maps.Keys(set), func(x, y schema.GroupVersionResource) int {
		return cmp.Compare(x.String(), y.String())
	})
}
