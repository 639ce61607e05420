package proxy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Placement is one cluster serving a registered resource, and the namespaces it serves it
// in (nil: all of them).
type Placement struct {
	Cluster    string
	Namespaces []string
}

// serves tells whether the placement covers namespace ("" asks for all namespaces).
func (p Placement) serves(namespace string) bool {
	return p.Namespaces == nil || namespace == "" || slices.Contains(p.Namespaces, namespace)
}

// Cluster is what routing needs to know of a Cluster.
type Cluster struct {
	Name   string
	Labels map[string]string
	Fields map[string]string // provider, region, zone
	Ready  bool
}

// ClusterFromObject reads a Cluster object.
func ClusterFromObject(obj *unstructured.Unstructured) Cluster {
	c := Cluster{Name: obj.GetName(), Labels: obj.GetLabels(), Fields: map[string]string{}}
	for _, field := range []string{"provider", "region", "zone"} {
		if v, _, _ := unstructured.NestedString(obj.Object, "spec", field); v != "" {
			c.Fields[field] = v
		}
	}
	if conds, err := kube.Conditions(obj); err == nil {
		c.Ready = meta.IsStatusConditionTrue(conds, "Ready")
	}
	return c
}

// RegistryFromObject reads a ResourceRegistry object.
func RegistryFromObject(obj *unstructured.Unstructured) (searchv1alpha1.ResourceRegistry, error) {
	var r searchv1alpha1.ResourceRegistry
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &r)
	return r, err
}

// Placements returns the Ready clusters that registries select for apiVersion/kind, in
// cluster-name order, each with the namespaces its registries select. Nothing means the
// resource is not registered.
func Placements(registries []searchv1alpha1.ResourceRegistry, clusters []Cluster, apiVersion, kind string) []Placement {
	all := map[string]bool{}
	namespaces := map[string][]string{}
	for _, r := range registries {
		var selected []string // "" = every namespace
		for _, s := range r.Spec.ResourceSelectors {
			if s.APIVersion == apiVersion && s.Kind == kind {
				selected = append(selected, s.Namespace)
			}
		}
		if len(selected) == 0 {
			continue
		}
		for _, c := range clusters {
			if !c.Ready || !affine(r.Spec.TargetCluster, c) {
				continue
			}
			if slices.Contains(selected, "") {
				all[c.Name] = true
			}
			namespaces[c.Name] = append(namespaces[c.Name], selected...)
		}
	}
	var out []Placement
	for name, ns := range namespaces {
		p := Placement{Cluster: name}
		if !all[name] {
			slices.Sort(ns)
			p.Namespaces = slices.Compact(ns)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Placement) int {
		switch {
		case a.Cluster < b.Cluster:
			return -1
		case a.Cluster > b.Cluster:
			return 1
		}
		return 0
	})
	return out
}

// affine tells whether a registry's cluster affinity selects c.
func affine(a searchv1alpha1.ClusterAffinity, c Cluster) bool {
	if slices.Contains(a.Exclude, c.Name) {
		return false
	}
	if len(a.ClusterNames) > 0 && !slices.Contains(a.ClusterNames, c.Name) {
		return false
	}
	if a.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(c.Labels)) {
			return false
		}
	}
	if a.FieldSelector != nil {
		for _, req := range a.FieldSelector.MatchExpressions {
			if !fieldMatches(req, c.Fields) {
				return false
			}
		}
	}
	return true
}

func fieldMatches(req corev1.NodeSelectorRequirement, fields map[string]string) bool {
	v, ok := fields[req.Key]
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(req.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(req.Values, v)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	}
	return false // unknown operators select nothing
}
