package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// expectMCSEvent waits for an Event of reason on the MultiClusterService whose note contains
// contains, and returns its note.
func expectMCSEvent(t *testing.T, namespace, name, reason, contains string) string {
	t.Helper()
	var note string
	eventually(t, 60*time.Second, func() error {
		list, err := testEnv.ControlPlane.Client().EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{
			FieldSelector: "regarding.kind=MultiClusterService,regarding.name=" + name + ",reason=" + reason,
		})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if strings.Contains(e.Note, contains) {
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("no %s Event on MultiClusterService %s/%s mentions %q (have %d of that reason)", reason, namespace, name, contains, len(list.Items))
	})
	return note
}

// expectReadyColumn waits until `kubectl get mcs` prints ready in the READY column of the
// MultiClusterService. Beside Karmada the CRD is Karmada's, which has no such column: there it
// waits for the Ready condition the column would print.
func expectReadyColumn(t *testing.T, namespace, name, ready string) {
	t.Helper()
	if besideKarmada() {
		expectCondition(t, namespace, name, networkingv1alpha1.ConditionReady, ready)
		return
	}
	kubectl, err := filepath.Abs(filepath.Join("..", "..", "bin", "kubectl"))
	require.NoError(t, err)
	eventually(t, 60*time.Second, func() error {
		out, err := exec.Command(kubectl, "--kubeconfig", testEnv.ControlPlane.Kubeconfig,
			"get", "mcs", name, "-n", namespace).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubectl get mcs: %v: %s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 {
			return fmt.Errorf("kubectl get mcs printed %q", out)
		}
		header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
		for i, column := range header {
			if column == "READY" && i < len(row) {
				if row[i] != ready {
					return fmt.Errorf("READY is %s, want %s:\n%s", row[i], ready, out)
				}
				return nil
			}
		}
		return fmt.Errorf("no READY column in:\n%s", out)
	})
}
