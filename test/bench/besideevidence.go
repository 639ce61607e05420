package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// besideEvidence reports what there is of a stream whose first dispatch did not complete
// beside Karmada: the MultiClusterService, the Works carrying it, the slices in every member,
// and the lines of karmada-controller-manager's log that name the namespace.
func (b *Bench) besideEvidence(ctx context.Context, r *Report, st stream) {
	r.Heading(3, "Evidence")
	mcs, err := b.controlPlane().Resource(networkingv1alpha1.MultiClusterServiceGVR).Namespace(st.namespace).Get(ctx, st.service, metav1.GetOptions{})
	if err != nil {
		r.Printf("MultiClusterService: %v\n", err)
	} else {
		r.Printf("MultiClusterService (metadata.finalizers, metadata.labels, status):\n")
		r.Code(indented(map[string]any{"finalizers": mcs.GetFinalizers(), "labels": mcs.GetLabels(), "status": mcs.Object["status"]}))
	}
	works, err := b.controlPlane().Resource(kube.Works).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{
		networkingv1alpha1.LabelMCSName: st.service, networkingv1alpha1.LabelMCSNamespace: st.namespace}.String()})
	if err != nil {
		r.Printf("Works: %v\n", err)
	} else {
		var lines []string
		for _, w := range works.Items {
			lines = append(lines, fmt.Sprintf("%s/%s kinds=%v addresses=%v applied=%s", w.GetNamespace(), w.GetName(),
				manifestKinds(&w), manifestAddresses(&w), conditionStatus(&w, "Applied")))
		}
		r.Printf("Works labelled with the MultiClusterService (%d):\n", len(lines))
		r.Code(strings.Join(lines, "\n"))
	}
	for _, m := range b.Env.Members {
		list, err := b.kube(m.Name).DiscoveryV1().EndpointSlices(st.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			r.Printf("Slices in %s: %v\n\n", m.Name, err)
			continue
		}
		var names []string
		for _, s := range list.Items {
			names = append(names, s.Name+" "+fmt.Sprint(s.Labels))
		}
		r.Printf("Slices in %s/%s: %s\n\n", m.Name, st.namespace, strings.Join(names, "; "))
	}
	path := filepath.Join(b.Env.Dir, "logs", "karmada-controller-manager.log")
	r.Printf("Lines of %s naming %s (last 40):\n", path, st.namespace)
	r.Code(grepTail(path, st.namespace, 40))
}

// manifestKinds are the kinds of a Work's manifests.
func manifestKinds(w *unstructured.Unstructured) []string {
	manifests, _, _ := unstructured.NestedSlice(w.Object, "spec", "workload", "manifests")
	var out []string
	for _, m := range manifests {
		if obj, ok := m.(map[string]any); ok {
			out = append(out, fmt.Sprint(obj["kind"]))
		}
	}
	return out
}

// conditionStatus is the status of a condition of obj, "-" without it.
func conditionStatus(obj *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return fmt.Sprint(m["status"])
		}
	}
	return "-"
}

// grepTail is the last n lines of the file at path that contain s.
func grepTail(path, s string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var hits []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, s) {
			hits = append(hits, line)
		}
	}
	return strings.Join(hits[max(0, len(hits)-n):], "\n")
}

func indented(v any) string {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(out)
}
