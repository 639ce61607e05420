package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

const app = "foo"

func members(t *testing.T) (m1, m2, m3 string) {
	t.Helper()
	require.GreaterOrEqual(t, len(testEnv.Members), 3)
	return testEnv.Members[0].Name, testEnv.Members[1].Name, testEnv.Members[2].Name
}

// exposeFromMember1 deploys the app on member1 and its Service in the control plane.
func exposeFromMember1(t *testing.T, ns string, replicas int32) {
	m1, _, _ := members(t)
	deployApp(t, testEnv.Member(m1), ns, app, replicas)
	createService(t, testEnv.ControlPlane, ns, app)
}

func TestMCSProviderToConsumer(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	exposeFromMember1(t, ns, 2)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))

	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	for _, c := range []string{networkingv1alpha1.ConditionServiceApplied, networkingv1alpha1.ConditionEndpointSliceCollected,
		networkingv1alpha1.ConditionEndpointSliceDispatched, networkingv1alpha1.ConditionEndpointSliceApplied} {
		expectCondition(t, ns, app, c, "True")
	}
	// The Service reaches the consumer under its own name; member3 takes no part.
	_, err := testEnv.Member(m2).Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
	require.NoError(t, err)
	_, err = testEnv.Member(m3).Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "member3 must not receive the Service: %v", err)
	got, err := dispatched(testEnv.Member(m1), ns, app)
	require.NoError(t, err)
	require.Empty(t, got, "the provider must not receive its own slices")
}

// A consumer without the Service's namespace gets it, as Karmada's namespace propagation
// would give it.
func TestMCSConsumerWithoutNamespace(t *testing.T) {
	m1, m2, _ := members(t)
	ns := testNamespaceIn(t, testEnv.ControlPlane, testEnv.Member(m1))
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
}

func TestMCSProviderThatAlsoConsumes(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 2)
	deployApp(t, testEnv.Member(m2), ns, app, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1, m2}, []string{m2}))

	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	// member2's own slice is still its own, never dispatched back to it.
	eventually(t, 30*time.Second, func() error {
		n, err := ownEndpoints(testEnv.Member(m2), ns, app)
		if err == nil && n != 1 {
			err = fmt.Errorf("member2 has %d own endpoints, want 1", n)
		}
		return err
	})
}

func TestMCSProvidersAndConsumersSwap(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 2)
	deployApp(t, testEnv.Member(m2), ns, app, 3)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})

	updateMCSSpec(t, ns, app, mcsSpec([]string{m2}, []string{m1}))
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m2: 3})
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{})
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-swap")
}

func TestMCSAllClusters(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	deployApp(t, testEnv.Member(m1), ns, app, 1)
	deployApp(t, testEnv.Member(m2), ns, app, 2)
	deployApp(t, testEnv.Member(m3), ns, app, 3)
	createService(t, testEnv.ControlPlane, ns, app)
	createMCS(t, ns, app, mcsSpec(nil, nil))

	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m2: 2, m3: 3})
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1, m3: 3})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 1, m2: 2})
}

func TestMCSDeprecatedClusterFields(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, map[string]any{
		"types":                      []any{"CrossCluster"},
		"serviceProvisionClusters":   []any{m1},
		"serviceConsumptionClusters": []any{m2},
	})
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
}

func TestMCSUnknownProvider(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1, "ghost"}, []string{m2}))

	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceCollected, "False", "ghost")
	expectCondition(t, ns, app, networkingv1alpha1.ConditionServiceApplied, "True")
}

func TestMCSCreatedBeforeService(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	deployApp(t, testEnv.Member(m1), ns, app, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectCondition(t, ns, app, networkingv1alpha1.ConditionServiceApplied, "False", ns+"/"+app, "not found")

	createService(t, testEnv.ControlPlane, ns, app)
	expectCondition(t, ns, app, networkingv1alpha1.ConditionServiceApplied, "True")
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-waiting-for-service")
}

func TestMCSScaleProvider(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	exposeFromMember1(t, ns, 3)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2, m3}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 3})

	scale(t, testEnv.Member(m1), ns, app, 5)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 5})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 5})
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-scaled")
}

func TestMCSSourceSliceDeleted(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 2)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})

	before, err := dispatched(testEnv.Member(m2), ns, app)
	require.NoError(t, err)
	require.Len(t, before, 1)
	// Deleting the Service at the source takes its slices with it.
	require.NoError(t, testEnv.Member(m1).Client().CoreV1().Services(ns).Delete(context.Background(), app, metav1.DeleteOptions{}))
	eventually(t, 60*time.Second, func() error {
		got, err := dispatched(testEnv.Member(m2), ns, app)
		if err == nil && len(got) > 0 && got[0].Name == before[0].Name && len(got[0].Endpoints) > 0 {
			err = fmt.Errorf("slice %s still dispatched to member2", before[0].Name)
		}
		return err
	})
}

func TestMCSDeleted(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	exposeFromMember1(t, ns, 2)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2, m3}))
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 2})
	eventually(t, 10*time.Second, func() error {
		mcs, err := getMCS(ns, app)
		if err == nil && len(mcs.Finalizers) == 0 {
			err = fmt.Errorf("no finalizer yet")
		}
		return err
	})

	require.NoError(t, testEnv.ControlPlane.Dynamic().Resource(kube.MultiClusterServices).Namespace(ns).Delete(context.Background(), app, metav1.DeleteOptions{}))
	waitMCSRemoved(t, ns, app, 60*time.Second)
	// The provider's own Deployment, Service and slices are not ours: they stay.
	n, err := ownEndpoints(testEnv.Member(m1), ns, app)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-deleted")
}

// TestMCSResyncRestoresDeletedSlice: a dispatched slice deleted by hand on a consumer comes
// back with a resync signal (standalone, where karmadaflow executes the Works), or by
// Karmada's execution controller on its own (beside Karmada).
func TestMCSResyncRestoresDeletedSlice(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 2)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})

	got, err := dispatched(testEnv.Member(m2), ns, app)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.NoError(t, testEnv.Member(m2).Client().DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), got[0].Name, metav1.DeleteOptions{}))
	if besideKarmada() {
		// Karmada's execution controller executes the Works here: it sees the delete and
		// applies the slice's Work again by itself, often before the slice could be seen gone.
		expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
		return
	}
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{})

	root, err := env.RepoRoot()
	require.NoError(t, err)
	temporal := filepath.Join(root, "bin", "temporal")
	args := append([]string{"workflow", "signal", "--workflow-id", mcs.WorkflowID(ns, app), "--name", mcs.SignalResync},
		testEnv.Temporal.CLIFlags()...)
	out, err := exec.Command(temporal, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
}

func TestMCSLoadBalancerOnlyIsUnsupported(t *testing.T) {
	ns := testNamespace(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, map[string]any{"types": []any{"LoadBalancer"}})
	expectRefused(t, ns, networkingv1alpha1.ReasonUnsupportedType, "LoadBalancer")
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-unsupported")
}

// expectRefused waits for ServiceApplied to be False for reason, its message containing
// contains, and checks that nothing was propagated.
func expectRefused(t *testing.T, ns, reason, contains string) {
	t.Helper()
	expectCondition(t, ns, app, networkingv1alpha1.ConditionServiceApplied, "False", contains)
	mcsObj, err := getMCS(ns, app)
	require.NoError(t, err)
	for _, c := range mcsObj.Status.Conditions {
		if c.Type == networkingv1alpha1.ConditionServiceApplied {
			require.Equal(t, reason, c.Reason)
		}
	}
	works, err := worksOf(ns, app)
	require.NoError(t, err)
	require.Empty(t, works)
}

func TestMCSPortsFilter(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	deployApp(t, testEnv.Member(m1), ns, app, 2)
	// The Service exposes two ports; the MultiClusterService only http.
	for _, c := range []*env.Cluster{testEnv.ControlPlane, testEnv.Member(m1)} {
		_, err := c.Client().CoreV1().Services(ns).Update(context.Background(), twoPortService(t, c, ns), metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			_, err = c.Client().CoreV1().Services(ns).Create(context.Background(), twoPortService(t, c, ns), metav1.CreateOptions{})
		}
		require.NoError(t, err)
	}
	spec := mcsSpec([]string{m1}, []string{m2})
	spec["ports"] = []any{map[string]any{"name": "http", "port": int64(80)}}
	createMCS(t, ns, app, spec)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	onlyHTTP := func() error {
		svc, err := testEnv.Member(m2).Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" {
			return fmt.Errorf("consumer Service ports %v, want only http", svc.Spec.Ports)
		}
		got, err := dispatched(testEnv.Member(m2), ns, app)
		if err != nil {
			return err
		}
		for _, s := range got {
			for _, p := range s.Ports {
				if p.Name == nil || *p.Name != "http" {
					return fmt.Errorf("dispatched slice %s exposes port %v", s.Name, p.Name)
				}
			}
		}
		return nil
	}
	eventually(t, 30*time.Second, onlyHTTP)

	// A slice change of the provider alone (the hot path) keeps the filter.
	scale(t, testEnv.Member(m1), ns, app, 3)
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 3})
	require.NoError(t, onlyHTTP())
}

// twoPortService is the app's Service with an http and a metrics port.
func twoPortService(t *testing.T, c *env.Cluster, ns string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": app},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090)},
			},
		},
	}
	if current, err := c.Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{}); err == nil {
		current.Spec.Ports = svc.Spec.Ports
		return current
	}
	return svc
}

// statusWrites is the client-go request metric of the worker's successful status writes.
var statusWrites = regexp.MustCompile(`rest_client_requests_total\{code="200",host="[^"]+",method="PUT"\} [1-9]`)

func TestMCSMetrics(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	scale(t, testEnv.Member(m1), ns, app, 2) // a slice change, detected by the starter
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 2})
	expectReadyColumn(t, ns, app, "True")

	eventually(t, 10*time.Second, func() error {
		// Either worker may have run each activity: their metrics are read together.
		var body string
		for _, worker := range svc.Workers() {
			_, metrics := httpGet(t, "http://"+svc.MetricsAddress(worker)+"/metrics")
			body += metrics
		}
		want := []string{
			`mcs_sync_svc_duration_seconds_count `,
			`mcs_sync_eps_duration_seconds_count{cluster="` + m2 + `"}`,
		}
		if !besideKarmada() { // measured by karmadaflow's own Work execution, off beside Karmada
			want = append(want, `mcs_propagation_duration_seconds_count{cluster="`+m2+`"}`)
		}
		for _, series := range want {
			if !strings.Contains(body, series) {
				return fmt.Errorf("worker metrics lack %s", series)
			}
		}
		if !statusWrites.MatchString(body) {
			return fmt.Errorf("worker metrics lack %s", statusWrites)
		}
		return nil
	})
}

// waitMCSRemoved waits until the MultiClusterService ns/name is gone with its Works (within
// timeout) and no member holds a slice dispatched for it.
func waitMCSRemoved(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		if _, err := getMCS(ns, name); err == nil {
			return fmt.Errorf("MultiClusterService still exists")
		}
		works, err := worksOf(ns, name)
		if err == nil && len(works) > 0 {
			err = fmt.Errorf("works remain: %v", works)
		}
		return err
	})
	for _, c := range testEnv.Members {
		eventually(t, 30*time.Second, func() error {
			got, err := dispatched(c, ns, name)
			if err == nil && len(got) > 0 {
				err = fmt.Errorf("%s still holds %d dispatched slices", c.Name, len(got))
			}
			return err
		})
	}
}
