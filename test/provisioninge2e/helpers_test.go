package provisioninge2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// eventually retries check until it returns nil or timeout passes, then fails with its last
// error.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// hostNamespace creates a namespace of the test's own in the host cluster.
func hostNamespace(t *testing.T, name string) string {
	t.Helper()
	_, err := testEnv.Host.Client().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	return name
}

func karmadas(namespace string) interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
} {
	return testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(namespace)
}

// createKarmada creates a Karmada object in the host cluster.
func createKarmada(t *testing.T, k *operatorv1alpha1.Karmada) {
	t.Helper()
	k.TypeMeta = metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"}
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	_, err = karmadas(k.Namespace).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	logStateOnFailure(t, wf.WorkflowID(k.Namespace, k.Name))
}

// getKarmada reads a Karmada object; found is false once it is gone.
func getKarmada(namespace, name string) (*operatorv1alpha1.Karmada, bool, error) {
	var k operatorv1alpha1.Karmada
	found, err := kube.Get(context.Background(), testEnv.Host.Dynamic(), kube.Karmadas, namespace, name, &k)
	return &k, found, err
}

// updateKarmada applies mutate to the current object and writes it, retrying conflicts.
func updateKarmada(t *testing.T, namespace, name string, mutate func(*operatorv1alpha1.Karmada)) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		k, _, err := getKarmada(namespace, name)
		if err != nil {
			return err
		}
		mutate(k)
		k.TypeMeta = metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"}
		u, err := kube.ToUnstructured(k)
		if err != nil {
			return err
		}
		delete(u.Object, "status")
		_, err = karmadas(namespace).Update(context.Background(), u, metav1.UpdateOptions{})
		return err
	})
}

// waitReady waits until the Ready condition of the object has status and reason, and returns
// the object.
func waitReady(t *testing.T, namespace, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *operatorv1alpha1.Karmada {
	t.Helper()
	var k *operatorv1alpha1.Karmada
	eventually(t, timeout, func() error {
		var err error
		k, _, err = getKarmada(namespace, name)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Karmada %s/%s: Ready condition is %+v, want %s/%s", namespace, name, c, status, reason)
		}
		return nil
	})
	return k
}

// deleteKarmada deletes the object and waits until it is gone (the finalizer released).
func deleteKarmada(t *testing.T, namespace, name string) {
	t.Helper()
	err := karmadas(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	eventually(t, 60*time.Second, func() error {
		_, found, err := getKarmada(namespace, name)
		if err != nil || found {
			return fmt.Errorf("Karmada %s/%s still there (err %v)", namespace, name, err)
		}
		return nil
	})
}

// Resources an instance creates in the host cluster.
var instanceResources = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Version: "v1", Resource: "services"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Version: "v1", Resource: "secrets"},
}

// instanceObjects lists "<resource>/<name>" of every object of the instance in the host.
func instanceObjects(t *testing.T, namespace, name string) []string {
	t.Helper()
	var out []string
	for _, gvr := range instanceResources {
		list, err := testEnv.Host.Dynamic().Resource(gvr).Namespace(namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: prov.InstanceSelector(name)})
		require.NoError(t, err)
		for _, item := range list.Items {
			out = append(out, gvr.Resource+"/"+item.GetName())
		}
	}
	return out
}

// history returns the events of the current run of workflowID.
func history(t *testing.T, workflowID string) *historypb.History {
	t.Helper()
	h, err := tryHistory(workflowID)
	require.NoError(t, err)
	return h
}

func tryHistory(workflowID string) (*historypb.History, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := &historypb.History{}
	iter := temporal.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		if err != nil {
			return nil, err
		}
		h.Events = append(h.Events, event)
	}
	return h, nil
}

// historyJSON is the history as `temporal workflow show -o json` exports it.
func historyJSON(t *testing.T, h *historypb.History) string {
	t.Helper()
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	return string(data)
}

// scheduled counts the ActivityTaskScheduled events per activity type; completed the
// ActivityTaskCompleted events per activity type.
func scheduled(h *historypb.History) (scheduled, completed map[string]int) {
	scheduled, completed = map[string]int{}, map[string]int{}
	types := map[int64]string{}
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			types[e.GetEventId()] = a.GetActivityType().GetName()
			scheduled[a.GetActivityType().GetName()]++
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
			completed[types[a.GetScheduledEventId()]]++
		}
	}
	return scheduled, completed
}

// state queries what the workflow of a Karmada believes.
func state(namespace, name string) (wf.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s wf.State
	value, err := temporal.QueryWorkflow(ctx, wf.WorkflowID(namespace, name), "", wf.QueryState)
	if err != nil {
		return s, err
	}
	return s, value.Get(&s)
}

// logStateOnFailure logs the workflow's state when the test fails.
func logStateOnFailure(t *testing.T, workflowID string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		parts := strings.SplitN(workflowID, "/", 3)
		s, err := state(parts[1], parts[2])
		t.Logf("state of %s: %+v (err %v)", workflowID, s, err)
		// What the waits look at: the pods of the namespace and the host's node.
		if pods, err := testEnv.Host.Client().CoreV1().Pods(parts[1]).List(context.Background(), metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				t.Logf("pod %s: phase %s, conditions %v", p.Name, p.Status.Phase, p.Status.Conditions)
			}
		}
		if node, err := testEnv.Host.Client().CoreV1().Nodes().Get(context.Background(), testEnv.Host.NodeName, metav1.GetOptions{}); err == nil {
			t.Logf("node %s: taints %v, conditions %v", node.Name, node.Spec.Taints, node.Status.Conditions)
		}
	})
}

// certIPs are the IP addresses a PEM certificate names.
func certIPs(t *testing.T, certPEM []byte) []string {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	var out []string
	for _, ip := range cert.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}
