package health

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// A Pull cluster, judged from the control plane: it is never dialled. Its agent probes the
// member, writes the Cluster's Ready condition and renews a Lease (naming.AgentLease) in the
// cluster's execution namespace; the control plane reads that Lease, as Karmada's cluster
// controller reads karmada-agent's.

// DefaultAgentLeaseGrace is how long a Pull cluster's agent may leave its Lease unrenewed
// before the control plane records the cluster as not reachable: Karmada's default
// --cluster-monitor-grace-period (40s), four of the agent's renewals at the default probe
// interval (10s), so that one or two lost renewals (an API server restart, a slow network) do
// not flip Ready.
const DefaultAgentLeaseGrace = 40 * time.Second

// agentLeaseVerdict is what the agent's Lease says of a Pull cluster at now: fresh, or not
// with the message to record.
func agentLeaseVerdict(cluster string, lease *coordinationv1.Lease, now time.Time, grace time.Duration) (fresh bool, message string) {
	namespace := naming.ExecutionNamespace(cluster)
	if lease == nil {
		return false, fmt.Sprintf("the agent of Pull cluster %s has never renewed its lease %s/%s: is it installed (chart target member)?",
			cluster, namespace, naming.AgentLease)
	}
	if lease.Spec.RenewTime == nil {
		return false, fmt.Sprintf("the agent of Pull cluster %s has not renewed its lease %s/%s yet", cluster, namespace, naming.AgentLease)
	}
	renewed := lease.Spec.RenewTime.Time
	if age := now.Sub(renewed); age > grace {
		return false, fmt.Sprintf("the agent of Pull cluster %s last renewed its lease at %s, %s ago (grace %s): it is down or cannot reach the control plane",
			cluster, renewed.UTC().Format(time.RFC3339), age.Round(time.Second), grace)
	}
	return true, ""
}

// readAgentLease reads the Lease of a Pull cluster's agent (nil when there is none).
func (a *Activities) readAgentLease(ctx context.Context, cluster string) (*coordinationv1.Lease, error) {
	namespace := naming.ExecutionNamespace(cluster)
	obj, err := a.ControlPlane.Resource(kube.Leases).Namespace(namespace).Get(ctx, naming.AgentLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the lease %s/%s of the agent of Pull cluster %s: %w", namespace, naming.AgentLease, cluster, err)
	}
	var lease coordinationv1.Lease
	if err := kube.FromUnstructured(obj, &lease); err != nil {
		return nil, err
	}
	return &lease, nil
}

// leaseGrace is the configured grace, or the default.
func (a *Activities) leaseGrace() time.Duration {
	if a.AgentLeaseGrace > 0 {
		return a.AgentLeaseGrace
	}
	return DefaultAgentLeaseGrace
}
