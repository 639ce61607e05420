package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// An object that the CRD would refuse (one that came in under a looser CRD) is reported
// Invalid, naming the field, and nothing is propagated. Standalone only: beside Karmada the CRD
// is Karmada's, and karmada-webhook refuses such an object even under a looser schema.
func TestMCSInvalidSpec(t *testing.T) {
	standaloneOnly(t)
	ns := testNamespace(t)
	exposeFromMember1(t, ns, 1)
	withoutMCSSchema(t, func() {
		eventually(t, 30*time.Second, func() error {
			return tryCreateMCS(ns, app, map[string]any{
				"types": []any{"CrossCluster"}, "providerClusters": []any{map[string]any{"name": "Not_A_Cluster"}},
			})
		})
	})
	expectRefused(t, ns, networkingv1alpha1.ReasonInvalidSpec, "spec.providerClusters[0].name")
	// The failure is told on the object itself, and in kubectl's READY column.
	expectMCSEvent(t, ns, app, networkingv1alpha1.ReasonInvalidSpec, "spec.providerClusters[0].name")
	expectReadyColumn(t, ns, app, "False")
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-invalid")
}

// A resync that asks for it continues the run as new; the new run carries on.
func TestMCSContinuesAsNewOnRequest(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})

	c, err := testEnv.Temporal.Dial(context.Background())
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	id := mcs.WorkflowID(ns, app)
	first, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	firstRun := first.WorkflowExecutionInfo.Execution.RunId
	require.NoError(t, c.SignalWorkflow(ctx, id, "", mcs.SignalResync, mcs.ResyncRequest{ContinueAsNew: true}))
	eventually(t, 30*time.Second, func() error {
		d, err := c.DescribeWorkflowExecution(ctx, id, firstRun)
		if err == nil && d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			err = fmt.Errorf("the first run is %s", d.WorkflowExecutionInfo.Status)
		}
		return err
	})
	scale(t, testEnv.Member(m1), ns, app, 2)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	recordRun(t, id, firstRun, "mcs-continued-as-new")
	recordHistory(t, id, "mcs-continued-run")
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// withoutMCSSchema runs fn while the MultiClusterService CRD accepts any object, and puts the
// CRD back afterwards.
func withoutMCSSchema(t *testing.T, fn func()) {
	t.Helper()
	ctx := context.Background()
	crds := testEnv.ControlPlane.Dynamic().Resource(crdGVR)
	const name = "multiclusterservices.networking.karmada.io"
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	original, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, err)
	loose, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions") // a copy
	for _, v := range loose {
		v.(map[string]any)["schema"] = map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	}
	setVersions := func(versions []any) error {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.Object["spec"].(map[string]any)["versions"] = versions
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	}
	defer eventually(t, 30*time.Second, func() error { return setVersions(original) })
	eventually(t, 30*time.Second, func() error { return setVersions(loose) })
	fn()
}
