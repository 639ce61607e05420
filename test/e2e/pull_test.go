package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// TestPullClusterProvidesAndConsumes turns member3 into a Pull cluster whose API server the
// control plane cannot reach: its Cluster names an endpoint that refuses every connection and
// counts it, with credentials bound to it, so that only the Pull rule keeps the control plane
// from dialling. The agent (worker --cluster member3, with the chart's agent identities) runs
// "inside" it. member3 then provides to and consumes from member1; the agent is killed, the
// cluster turns not Ready and its slices are withdrawn; the agent comes back, and everything,
// a change made meanwhile included, converges. No connection ever reached the endpoint.
func TestPullClusterProvidesAndConsumes(t *testing.T) {
	standaloneOnly(t)
	m1, _, m3 := members(t)
	refused := refuseConnections(t)
	makePull(t, m3, "https://"+refused.addr)
	require.NoError(t, svc.StartAgent(context.Background(), testEnv.Member(m3)))
	agent := service.AgentInstance(m3)
	t.Cleanup(func() { svc.StopInstance(agent) })
	expectClusterReadyWith(t, m3, "True", "")

	ns := testNamespace(t)
	exposeFromMember1(t, ns, 2)
	deployApp(t, testEnv.Member(m3), ns, app, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1, m3}, []string{m1, m3}))
	logStateOnFailure(t, "mcs/"+ns+"/"+app, "execution/"+m3, "cluster/"+m3)

	// Applied by the agent (member3 consumes), collected by the agent (member3 provides).
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 2})
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 1})
	for _, c := range []string{networkingv1alpha1.ConditionServiceApplied, networkingv1alpha1.ConditionEndpointSliceCollected,
		networkingv1alpha1.ConditionEndpointSliceDispatched, networkingv1alpha1.ConditionEndpointSliceApplied} {
		expectCondition(t, ns, app, c, "True")
	}
	// A change in the Pull member reaches the consumer: the agent's watch signals it.
	scale(t, testEnv.Member(m3), ns, app, 2)
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 2})

	// The agent dies: no probe is answered, the cluster turns not Ready, and after the
	// unhealthy grace its slices are withdrawn from member1.
	svc.Kill(agent)
	expectClusterReadyWith(t, m3, "False", "agent")
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{})

	// Meanwhile member1 scales: member3 gets it once its agent is back.
	scale(t, testEnv.Member(m1), ns, app, 3)
	require.NoError(t, svc.StartAgent(context.Background(), testEnv.Member(m3)))
	expectClusterReadyWith(t, m3, "True", "")
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 2})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 3})

	require.Zero(t, refused.count.Load(), "the control plane dialled the Pull member's endpoint")
}

// refusingEndpoint accepts connections only to count and close them.
type refusingEndpoint struct {
	addr  string
	count atomic.Int64
}

// refuseConnections listens on loopback until the test ends.
func refuseConnections(t *testing.T) *refusingEndpoint {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	r := &refusingEndpoint{addr: l.Addr().String()}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			r.count.Add(1)
			_ = conn.Close()
		}
	}()
	return r
}

// makePull turns a member's Cluster into a Pull cluster at endpoint, until the test ends,
// when it becomes the Push cluster it was.
func makePull(t *testing.T, cluster, endpoint string) {
	t.Helper()
	clusters := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters)
	obj, err := clusters.Get(context.Background(), cluster, metav1.GetOptions{})
	require.NoError(t, err)
	was, _, _ := unstructured.NestedString(obj.Object, "spec", "apiEndpoint")
	patch := func(mode, endpoint string) error {
		body := fmt.Sprintf(`{"spec":{"syncMode":%q,"apiEndpoint":%q}}`, mode, endpoint)
		_, err := clusters.Patch(context.Background(), cluster, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	require.NoError(t, patch("Pull", endpoint))
	t.Cleanup(func() {
		require.NoError(t, patch("Push", was))
		expectClusterReadyWith(t, cluster, "True", "")
	})
}

// expectClusterReadyWith waits until the Cluster's Ready condition has status, and a message
// holding contains.
func expectClusterReadyWith(t *testing.T, cluster, status, contains string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		obj, err := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters).Get(context.Background(), cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			cond, _ := c.(map[string]any)
			if cond["type"] != "Ready" {
				continue
			}
			if message, _ := cond["message"].(string); cond["status"] == status && strings.Contains(message, contains) {
				return nil
			}
			return fmt.Errorf("cluster %s is Ready=%v (%v), want %s with %q", cluster, cond["status"], cond["message"], status, contains)
		}
		return fmt.Errorf("cluster %s has no Ready condition", cluster)
	})
}
