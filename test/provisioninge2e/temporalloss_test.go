package provisioninge2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/test/apiserverpod"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// testEnsurePeriod is the starter's --ensure-period in TestInstallResumesAfterTemporalLoss.
const testEnsurePeriod = 5 * time.Second

// TestInstallResumesAfterTemporalLoss loses the install's workflow in the middle of the install
// (the in-memory Temporal dev server restarts while the worker and the starter keep running):
// the starter starts it again, and the install completes.
func TestInstallResumesAfterTemporalLoss(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, svc.StartInstance(ctx, "starter", []string{"--ensure-period=" + testEnsurePeriod.String()}))
	t.Cleanup(func() { require.NoError(t, svc.StartInstance(ctx, "starter", nil)) })
	ns := hostNamespace(t, "tenant-loss")
	const name = "loss"
	id := wf.WorkflowID(ns, name)
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{
			KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort},
		}},
	})
	t.Cleanup(func() { deleteKarmada(t, ns, name) })

	// Mid-install: the API server pod is Ready, the control plane is not reachable yet.
	eventually(t, 2*time.Minute, func() error {
		h, err := tryHistory(id)
		if err != nil {
			return err
		}
		if _, completed := scheduled(h); completed[prov.StepWaitAggregatedAPIServerReady] == 0 {
			return fmt.Errorf("completed so far: %v", completed)
		}
		return nil
	})
	require.NoError(t, testEnv.RestartTemporal(ctx))
	up := time.Now()
	eventually(t, testEnsurePeriod+30*time.Second, func() error {
		_, err := tryHistory(id)
		return err
	})
	t.Logf("the install's workflow ran again %.1fs after Temporal served again (--ensure-period %s)", time.Since(up).Seconds(), testEnsurePeriod)

	service, err := testEnv.Host.Client().CoreV1().Services(ns).Get(ctx, prov.NamesFor(name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
	require.NoError(t, err)
	server, err := apiserverpod.Start(ctx, testEnv, ns, name, service.Spec.Ports[0].NodePort)
	require.NoError(t, err)
	defer server.Stop()
	waitReady(t, ns, name, metav1.ConditionTrue, operatorv1alpha1.ReasonCompleted, 3*time.Minute)
	t.Logf("Ready %.1fs after Temporal served again", time.Since(up).Seconds())
}
