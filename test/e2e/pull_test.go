package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// TestMCSWithPullCluster turns member3 into a Pull cluster whose API server the control plane
// cannot reach: its Cluster names an endpoint that accepts connections only to count them,
// with credentials still bound to it, so that only the Pull rule keeps anyone from dialling.
// Its agent runs "inside" it: standalone, karmadaflow's (worker --cluster member3, with the
// chart's agent identities); beside Karmada, Karmada's own karmada-agent. member3 then provides
// to and consumes from member1; the agent is killed, the cluster leaves Ready and its slices
// are withdrawn; the agent comes back, and everything, a change made meanwhile included,
// converges. No connection ever reached the endpoint.
func TestMCSWithPullCluster(t *testing.T) {
	m1, _, m3 := members(t)
	refused, err := env.NewCountingEndpoint()
	require.NoError(t, err)
	t.Cleanup(func() { _ = refused.Close() })
	agent := pullAgentOf(t, m3, "https://"+refused.Addr)
	agent.start()
	expectClusterReadyWith(t, m3, "True", "")
	// Beside Karmada, karmada-controller-manager dials the member until StartKarmadaAgent has
	// restarted it (test/env/karmadaagent.go): from then on, nobody may.
	dialledBefore := refused.Connections()
	if !besideKarmada() {
		require.Zero(t, dialledBefore, "the control plane dialled the Pull member's endpoint")
	}

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
	// A change in the Pull member reaches the consumer: the agent collects it.
	scale(t, testEnv.Member(m3), ns, app, 2)
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 2})

	// The agent dies: the cluster leaves Ready, and after the unhealthy grace its slices are
	// withdrawn from member1.
	agent.kill()
	expectClusterReadyWith(t, m3, agent.notReady, agent.notReadyMessage)
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{})

	// Meanwhile member1 scales: member3 gets it once its agent is back.
	scale(t, testEnv.Member(m1), ns, app, 3)
	agent.start()
	expectClusterReadyWith(t, m3, "True", "")
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 2})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 3})

	t.Logf("connections to the Pull member's endpoint: %d before its agent took over, %d in all", dialledBefore, refused.Connections())
	require.Equal(t, dialledBefore, refused.Connections(), "the control plane dialled the Pull member's endpoint")

	if besideKarmada() {
		recordHistory(t, mcs.WorkflowID(ns, app), "mcs-pull-provider-beside-karmada")
		return
	}
	recordHistory(t, mcs.WorkflowID(ns, app), "mcs-pull-provider")
	recordHistory(t, execution.WorkflowID(m3), "execution-pull-member3")
	recordHistory(t, clusterhealth.WorkflowID(m3), "clusterhealth-pull-member3")
}

// pullAgent runs the agent of a Pull member, and tells how its Cluster looks once the agent is
// gone.
type pullAgent struct {
	start, kill     func()
	notReady        string // the Ready condition's status without the agent
	notReadyMessage string // a part of its message
}

// pullAgentOf makes cluster a Pull cluster at endpoint until the test ends, when it becomes
// the Push cluster it was again, and returns its agent: karmadaflow's standalone, Karmada's
// karmada-agent beside Karmada (which registers the Cluster as Pull itself when it starts).
func pullAgentOf(t *testing.T, cluster, endpoint string) pullAgent {
	t.Helper()
	ctx := context.Background()
	restorePush(t, cluster)
	if besideKarmada() {
		t.Cleanup(func() { _ = testEnv.StopKarmadaAgent(cluster) })
		return pullAgent{
			start: func() {
				require.NoError(t, testEnv.StartKarmadaAgent(ctx, cluster, "--cluster-api-endpoint="+endpoint))
			},
			kill:     func() { require.NoError(t, testEnv.StopKarmadaAgent(cluster)) },
			notReady: "Unknown", // Karmada's cluster controller, once the agent's lease expires
		}
	}
	patchCluster(t, cluster, "Pull", endpoint)
	instance := service.AgentInstance(cluster)
	t.Cleanup(func() { svc.StopInstance(instance) })
	return pullAgent{
		start:    func() { require.NoError(t, svc.StartAgent(ctx, testEnv.Member(cluster))) },
		kill:     func() { svc.Kill(instance) },
		notReady: "False", notReadyMessage: "agent",
	}
}

// restorePush has the Cluster be the Push cluster it is now again when the test ends (the
// agent stopped first: cleanups run last-registered first).
func restorePush(t *testing.T, cluster string) {
	t.Helper()
	obj, err := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters).Get(context.Background(), cluster, metav1.GetOptions{})
	require.NoError(t, err)
	was, _, _ := unstructured.NestedString(obj.Object, "spec", "apiEndpoint")
	t.Cleanup(func() {
		patchCluster(t, cluster, "Push", was)
		expectClusterReadyWith(t, cluster, "True", "")
	})
}

// patchCluster sets a Cluster's sync mode and endpoint.
func patchCluster(t *testing.T, cluster, mode, endpoint string) {
	t.Helper()
	patchClusterSpec(t, cluster, fmt.Sprintf(`{"syncMode":%q,"apiEndpoint":%q}`, mode, endpoint))
}

// patchClusterSpec merges spec (JSON) into a Cluster's spec.
func patchClusterSpec(t *testing.T, cluster, spec string) {
	t.Helper()
	body := []byte(`{"spec":` + spec + `}`)
	_, err := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters).Patch(context.Background(), cluster, types.MergePatchType, body, metav1.PatchOptions{})
	require.NoError(t, err)
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
