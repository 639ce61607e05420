package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// eventually retries check until it returns nil or timeout passes, then fails with its last
// error.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// testNamespace creates a namespace of the test's own in the control plane and every member.
// Beside Karmada, it is created in the control plane only, and Karmada's namespace sync brings
// it to the members: one created there too would be a conflict Karmada reports for good.
func testNamespace(t *testing.T) string {
	t.Helper()
	if !besideKarmada() {
		return testNamespaceIn(t, append([]*env.Cluster{testEnv.ControlPlane}, testEnv.Members...)...)
	}
	name := testNamespaceIn(t, testEnv.ControlPlane)
	for _, m := range testEnv.Members {
		eventually(t, 30*time.Second, func() error {
			_, err := m.Client().CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
			return err
		})
	}
	return name
}

// testNamespaceIn creates a namespace of the test's own in the given clusters only.
func testNamespaceIn(t *testing.T, clusters ...*env.Cluster) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	for _, c := range clusters {
		_, err := c.Client().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "namespace %s in %s", name, c.Name)
		}
	}
	return name
}

// deployApp runs replicas pods labelled app=<name> and a Service selecting them in cluster.
func deployApp(t *testing.T, cluster *env.Cluster, namespace, name string, replicas int32) {
	t.Helper()
	createDeployment(t, cluster, namespace, name, replicas)
	createService(t, cluster, namespace, name)
}

// createDeployment runs replicas pods labelled app=<name> in cluster.
func createDeployment(t *testing.T, cluster *env.Cluster, namespace, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	_, err := cluster.Client().AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:test", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func createService(t *testing.T, cluster *env.Cluster, namespace, name string) {
	t.Helper()
	_, err := cluster.Client().CoreV1().Services(namespace).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// scale sets the Deployment's replicas, read afresh when the member's Deployment controller
// wrote it meanwhile.
func scale(t *testing.T, cluster *env.Cluster, namespace, name string, replicas int32) {
	t.Helper()
	deployments := cluster.Client().AppsV1().Deployments(namespace)
	// The Deployment controller writes its status after each change: under a burst of scalings
	// the default 5 quick retries are not enough.
	backoff := wait.Backoff{Steps: 30, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.1, Cap: time.Second}
	require.NoError(t, retry.RetryOnConflict(backoff, func() error {
		s, err := deployments.GetScale(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = deployments.UpdateScale(context.Background(), name, s, metav1.UpdateOptions{})
		return err
	}))
}

// mcsSpec builds a MultiClusterService spec of type CrossCluster.
func mcsSpec(providers, consumers []string) map[string]any {
	spec := map[string]any{"types": []any{"CrossCluster"}}
	selectors := func(names []string) []any {
		var out []any
		for _, n := range names {
			out = append(out, map[string]any{"name": n})
		}
		return out
	}
	if len(providers) > 0 {
		spec["providerClusters"] = selectors(providers)
	}
	if len(consumers) > 0 {
		spec["consumerClusters"] = selectors(consumers)
	}
	return spec
}

func createMCS(t *testing.T, namespace, name string, spec map[string]any) {
	t.Helper()
	require.NoError(t, tryCreateMCS(namespace, name, spec))
}

func tryCreateMCS(namespace, name string, spec map[string]any) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     spec,
	}}
	_, err := testEnv.ControlPlane.Dynamic().Resource(kube.MultiClusterServices).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
	return err
}

func updateMCSSpec(t *testing.T, namespace, name string, spec map[string]any) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		client := testEnv.ControlPlane.Dynamic().Resource(kube.MultiClusterServices).Namespace(namespace)
		obj, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.Object["spec"] = spec
		_, err = client.Update(context.Background(), obj, metav1.UpdateOptions{})
		return err
	})
}

func getMCS(namespace, name string) (*networkingv1alpha1.MultiClusterService, error) {
	var mcs networkingv1alpha1.MultiClusterService
	found, err := kube.Get(context.Background(), testEnv.ControlPlane.Dynamic(), kube.MultiClusterServices, namespace, name, &mcs)
	if err == nil && !found {
		err = fmt.Errorf("MultiClusterService %s/%s not found", namespace, name)
	}
	return &mcs, err
}

// expectCondition waits for the condition to have status (and, if given, a message containing
// each of contains).
func expectCondition(t *testing.T, namespace, name, condType, status string, contains ...string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		mcs, err := getMCS(namespace, name)
		if err != nil {
			return err
		}
		for _, c := range mcs.Status.Conditions {
			if c.Type != condType {
				continue
			}
			if string(c.Status) != status {
				return fmt.Errorf("%s is %s (%s: %s), want %s", condType, c.Status, c.Reason, c.Message, status)
			}
			for _, s := range contains {
				if !strings.Contains(c.Message, s) {
					return fmt.Errorf("%s message %q does not mention %q", condType, c.Message, s)
				}
			}
			return nil
		}
		return fmt.Errorf("no %s condition yet (have %v)", condType, mcs.Status.Conditions)
	})
}

// dispatched lists the EndpointSlices karmadaflow dispatched into cluster for a Service.
func dispatched(cluster *env.Cluster, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	list, err := cluster.Client().DiscoveryV1().EndpointSlices(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{
			networkingv1alpha1.LabelServiceName:            service,
			networkingv1alpha1.LabelEndpointSliceManagedBy: networkingv1alpha1.ManagedByEndpointSliceDispatch,
		}.String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// remoteAddresses returns, per provider, the endpoint addresses dispatched into cluster.
func remoteAddresses(cluster *env.Cluster, namespace, service string) (map[string][]string, error) {
	slices, err := dispatched(cluster, namespace, service)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, s := range slices {
		provider := s.Annotations[networkingv1alpha1.AnnotationProvisionCluster]
		for _, ep := range s.Endpoints {
			out[provider] = append(out[provider], ep.Addresses...)
		}
	}
	return out, nil
}

// expectRemote waits until cluster holds exactly want endpoints from each provider listed,
// all inside that provider's pod CIDR, and none from any other provider.
func expectRemote(t *testing.T, cluster *env.Cluster, namespace, service string, want map[string]int) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		got, err := remoteAddresses(cluster, namespace, service)
		if err != nil {
			return err
		}
		for provider, addrs := range got {
			if _, ok := want[provider]; !ok {
				return fmt.Errorf("%s holds endpoints of %s: %v", cluster.Name, provider, addrs)
			}
		}
		for provider, n := range want {
			if len(got[provider]) != n {
				return fmt.Errorf("%s holds %d endpoints of %s, want %d", cluster.Name, len(got[provider]), provider, n)
			}
			prefix := netip.MustParsePrefix(testEnv.Member(provider).PodCIDR)
			for _, a := range got[provider] {
				if !prefix.Contains(netip.MustParseAddr(a)) {
					return fmt.Errorf("endpoint %s from %s is outside its pod CIDR %s", a, provider, prefix)
				}
			}
		}
		return nil
	})
}

// worksOf lists the control plane's Works of a MultiClusterService.
func worksOf(namespace, name string) ([]string, error) {
	list, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{networkingv1alpha1.LabelMCSName: name, networkingv1alpha1.LabelMCSNamespace: namespace}.String(),
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, w := range list.Items {
		out = append(out, w.GetNamespace()+"/"+w.GetName())
	}
	slices.Sort(out)
	return out, nil
}

// ownEndpoints counts the endpoints of the cluster's own slices of a Service.
func ownEndpoints(cluster *env.Cluster, namespace, service string) (int, error) {
	own, err := ownSlices(cluster, namespace, service)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range own {
		n += len(s.Endpoints)
	}
	return n, nil
}

// ownSlices are the EndpointSlices of a Service that the cluster made itself (not dispatched
// to it).
func ownSlices(cluster *env.Cluster, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	list, err := cluster.Client().DiscoveryV1().EndpointSlices(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{networkingv1alpha1.LabelServiceName: service}.String() + "," + networkingv1alpha1.LabelEndpointSliceManagedBy + "!=" + networkingv1alpha1.ManagedByEndpointSliceDispatch,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// logStateOnFailure logs what the named workflows believe (their state query) and their
// timelines when the test fails, so a failure says where the flow stopped and why.
func logStateOnFailure(t *testing.T, workflowIDs ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		c, err := testEnv.Temporal.Dial(context.Background())
		if err != nil {
			t.Logf("cannot reach Temporal: %v", err)
			return
		}
		defer c.Close()
		for _, id := range workflowIDs {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			value, err := c.QueryWorkflow(ctx, id, "", "state")
			cancel()
			if err != nil {
				t.Logf("state of %s: %v", id, err)
				continue
			}
			var state any
			_ = value.Get(&state)
			t.Logf("state of %s: %+v", id, state)
			logTimeline(t, c, id)
		}
	})
}

// logTimeline logs, for a failed test, the signals, the activities that failed and the timers
// of a workflow's latest run, oldest first (the last 40), so a failure shows what the workflow
// was told and what went wrong in it.
func logTimeline(t *testing.T, c client.Client, workflowID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lines []string
	iter := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		if err != nil {
			t.Logf("history of %s: %v", workflowID, err)
			return
		}
		if line := timelineLine(event); line != "" {
			lines = append(lines, event.GetEventTime().AsTime().Format("15:04:05.000")+" "+line)
		}
	}
	t.Logf("timeline of %s (%d entries):\n%s", workflowID, len(lines), strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

// timelineLine describes a signal, a failed local activity or a timer that fired; "" for other
// events.
func timelineLine(event *historypb.HistoryEvent) string {
	switch {
	case event.GetWorkflowExecutionSignaledEventAttributes() != nil:
		a := event.GetWorkflowExecutionSignaledEventAttributes()
		return fmt.Sprintf("signal %s %.200s", a.GetSignalName(), payloadsText(a.GetInput()))
	case event.GetMarkerRecordedEventAttributes().GetFailure() != nil:
		a := event.GetMarkerRecordedEventAttributes()
		return fmt.Sprintf("local activity failed: %.200s %.300s", payloadsText(a.GetDetails()["data"]), a.GetFailure().GetMessage())
	case event.GetActivityTaskFailedEventAttributes() != nil:
		return fmt.Sprintf("activity failed: %.300s", event.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage())
	case event.GetTimerFiredEventAttributes() != nil:
		return "timer fired"
	}
	return ""
}

// payloadsText is the data of payloads as text, one after the other.
func payloadsText(p *commonpb.Payloads) string {
	var parts []string
	for _, payload := range p.GetPayloads() {
		parts = append(parts, string(payload.GetData()))
	}
	return strings.Join(parts, " ")
}
