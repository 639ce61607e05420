package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// karmadaLogLines is how many of karmada-controller-manager's last log lines naming the test's
// namespace a failed test prints.
const karmadaLogLines = 40

// logKarmadaOnFailure, beside Karmada, prints what Karmada's side held when the test failed:
// each Cluster's Ready condition, the MultiClusterService's Works (deleting or not, their
// finalizers and Applied condition), and karmada-controller-manager's last log lines about the
// namespace. Standalone it does nothing.
func logKarmadaOnFailure(t *testing.T, namespace, name string) {
	if !besideKarmada() {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		clusters, err := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("Clusters: %v", err)
		} else {
			for _, c := range clusters.Items {
				t.Logf("Cluster %s: deleting=%v Ready=%s", c.GetName(), c.GetDeletionTimestamp() != nil, conditionSummary(&c, "Ready"))
			}
		}
		works, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).List(ctx, metav1.ListOptions{
			LabelSelector: labels.Set{networkingv1alpha1.LabelMCSName: name, networkingv1alpha1.LabelMCSNamespace: namespace}.String(),
		})
		if err != nil {
			t.Logf("Works: %v", err)
		} else {
			for _, w := range works.Items {
				t.Logf("Work %s/%s: deleting=%v finalizers=%v Applied=%s", w.GetNamespace(), w.GetName(),
					w.GetDeletionTimestamp() != nil, w.GetFinalizers(), conditionSummary(&w, "Applied"))
			}
		}
		for _, line := range lastLinesWith(filepath.Join(testEnv.Dir, "logs", "karmada-controller-manager.log"), namespace, karmadaLogLines) {
			t.Logf("karmada-controller-manager: %s", line)
		}
	})
}

// conditionSummary is the status, reason and message of obj's condition of type kind.
func conditionSummary(obj *unstructured.Unstructured, kind string) string {
	conds, err := kube.Conditions(obj)
	if err != nil {
		return err.Error()
	}
	for _, c := range conds {
		if c.Type == kind {
			return string(c.Status) + " " + c.Reason + ": " + c.Message + " (since " + c.LastTransitionTime.String() + ")"
		}
	}
	return "none"
}

// lastLinesWith returns the last n lines of file that contain s.
func lastLinesWith(file, s string, n int) []string {
	f, err := os.Open(file)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for scanner.Scan() {
		if strings.Contains(scanner.Text(), s) {
			lines = append(lines, scanner.Text())
			if len(lines) > n {
				lines = lines[1:]
			}
		}
	}
	return lines
}
