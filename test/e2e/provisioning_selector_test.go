package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// TestProvisioningSelectorLeavesOtherKarmadas runs the starter with --provisioning-selector, as
// beside a karmada-operator: the Karmada it matches gets its provisioning workflow, the other
// none, neither from the trigger nor from the ensure loop passing over it several times.
func TestProvisioningSelectorLeavesOtherKarmadas(t *testing.T) {
	standaloneOnly(t)
	restartStarter(t, "--provisioning-selector=karmadaflow.io/provision=true", "--ensure-period="+testEnsurePeriod.String())
	c := dialTemporal(t)
	ns := testNamespaceIn(t, testEnv.Host)
	karmadas := testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(ns)
	for name, labels := range map[string]map[string]string{"selected": {"karmadaflow.io/provision": "true"}, "left": nil} {
		k := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada", "spec": map[string]any{}}}
		k.SetName(name)
		k.SetLabels(labels)
		_, err := karmadas.Create(context.Background(), k, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = c.TerminateWorkflow(context.Background(), provisioning.WorkflowID(ns, name), "", "test over")
			_, err := karmadas.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if !apierrors.IsNotFound(err) {
				require.NoError(t, err)
			}
			_ = karmadas.Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}

	eventually(t, 30*time.Second, func() error {
		run, err := runningRun(c, provisioning.WorkflowID(ns, "selected"))
		if err == nil && run == "" {
			err = errors.New("no provisioning workflow runs for the selected Karmada")
		}
		return err
	})
	time.Sleep(3 * testEnsurePeriod)
	_, err := c.DescribeWorkflowExecution(context.Background(), provisioning.WorkflowID(ns, "left"), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "a provisioning workflow was started for the Karmada outside the selector")
}
