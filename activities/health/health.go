// Package health probes member clusters and keeps each Cluster's Ready condition in the
// control plane (standalone mode, in place of Karmada's cluster status controller).
package health

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Activities holds the clients the health activities use.
type Activities struct {
	ControlPlane dynamic.Interface
	Members      *members.Registry
	// ProbeTimeout bounds one /readyz request.
	ProbeTimeout time.Duration
	// Events, when set, records a Warning Event on a Cluster whose credentials are refused.
	Events EventRecorder
	// Agent is set when these activities run inside a Pull member, as its agent: the probe
	// is of the member it runs in.
	Agent bool
	// AgentLeaseGrace is how long a Pull cluster's agent may leave its Lease unrenewed before
	// the control plane records the cluster as not reachable (zero: DefaultAgentLeaseGrace).
	AgentLeaseGrace time.Duration
}

// EventRecorder writes Kubernetes Events; client-go's events.EventRecorder satisfies it.
type EventRecorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// ProbeInput names the cluster to probe.
type ProbeInput struct {
	Cluster string
	// HoldReady keeps a Ready condition that is True when this probe fails: the probes have
	// not failed for the failure threshold yet, and one lost probe must not flip Ready.
	HoldReady bool `json:",omitempty"`
	// Unanswered, for a Pull cluster, says that its agent took no probe: the control plane
	// records the cluster as not reachable with this message, without dialling it. Only runs
	// from before agents renewed leases send it.
	Unanswered string `json:",omitempty"`
}

// ProbeResult is what one probe found.
type ProbeResult struct {
	Exists  bool
	Ready   bool // the Ready condition, as written or kept
	Message string
	Changed bool // the Ready condition was written
	// Reachable: the probe itself succeeded (Ready may differ while a failure is held).
	Reachable bool `json:",omitempty"`
	// Pull: the cluster is in Pull mode. Outside its agent nothing was dialled: the result is
	// its agent's Lease and the Ready condition the agent wrote (see agentlease.go).
	Pull bool `json:",omitempty"`
}

// Reasons of a Cluster's Ready condition (Karmada's).
const (
	ReasonClusterReady        = "ClusterReady"
	ReasonClusterNotReachable = "ClusterNotReachable"
	// ReasonCredentialsNotBound: the Cluster names a credentials Secret not bound to it, and
	// is not dialled (members.UnboundSecretError). Also the reason of its Warning Event.
	ReasonCredentialsNotBound = "ClusterCredentialsNotBound"
)

// ProbeCluster asks the member's API server for /readyz and records the answer in the
// Cluster's Ready condition when it changed. A failed probe leaves a True condition alone
// while the input holds it, as Karmada's --cluster-failure-threshold does; a successful probe
// is recorded at once. A Pull cluster is not dialled from the control plane: while its agent
// renews its Lease, the Ready condition the agent wrote stands; once the Lease is older than
// the grace, the cluster is recorded as not reachable.
func (a *Activities) ProbeCluster(ctx context.Context, in ProbeInput) (ProbeResult, error) {
	var res ProbeResult
	clusters := a.ControlPlane.Resource(kube.Clusters)
	obj, err := clusters.Get(ctx, in.Cluster, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("reading Cluster %s: %w", in.Cluster, err)
	}
	res.Exists = true
	res.Pull = members.IsPullCluster(obj)
	conds, err := kube.Conditions(obj)
	if err != nil {
		return res, err
	}
	current := meta.FindStatusCondition(conds, "Ready")

	observed := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonClusterReady,
		Message: "cluster is healthy and ready to accept workloads", ObservedGeneration: obj.GetGeneration()}
	hold := in.HoldReady
	var refused *members.UnboundSecretError
	if res.Pull && !a.Agent && in.Unanswered == "" {
		lease, err := a.readAgentLease(ctx, in.Cluster)
		if err != nil {
			return res, err
		}
		fresh, message := agentLeaseVerdict(in.Cluster, lease, time.Now(), a.leaseGrace())
		if fresh { // the agent is there: what it wrote stands
			res.Reachable = true
			res.Ready, res.Message = current != nil && current.Status == metav1.ConditionTrue, agentReport(in.Cluster, current)
			return res, nil
		}
		// The grace is the agent's failure threshold already.
		observed.Status, observed.Reason, observed.Message, hold = metav1.ConditionFalse, ReasonClusterNotReachable, message, false
	} else if res.Pull && !a.Agent {
		observed.Status, observed.Reason, observed.Message = metav1.ConditionFalse, ReasonClusterNotReachable, in.Unanswered
	} else if err := a.probe(ctx, in.Cluster); errors.As(err, &refused) {
		observed.Status, observed.Reason, observed.Message = metav1.ConditionFalse, ReasonCredentialsNotBound, err.Error()
	} else if err != nil {
		observed.Status, observed.Reason, observed.Message = metav1.ConditionFalse, ReasonClusterNotReachable, err.Error()
	}
	res.Reachable = observed.Status == metav1.ConditionTrue

	cond := ReadyCondition(current, observed, hold)
	res.Ready, res.Message = cond.Status == metav1.ConditionTrue, observed.Message
	if current != nil && current.Status == cond.Status && current.Reason == cond.Reason {
		return res, nil
	}
	meta.SetStatusCondition(&conds, cond)
	if err := kube.SetConditions(obj, conds); err != nil {
		return res, err
	}
	_, err = clusters.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	if apierrors.IsNotFound(err) {
		res.Exists = false // deleted while it was probed
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("writing status of Cluster %s: %w", in.Cluster, err)
	}
	res.Changed = true
	if cond.Reason == ReasonCredentialsNotBound && a.Events != nil {
		a.Events.Eventf(obj, nil, corev1.EventTypeWarning, ReasonCredentialsNotBound, "Probe", "%s", cond.Message)
	}
	return res, nil
}

// agentReport is what a Pull cluster's Ready condition, written by its agent, says.
func agentReport(cluster string, current *metav1.Condition) string {
	if current == nil {
		return fmt.Sprintf("the agent of Pull cluster %s renews its lease but has not reported the cluster's health yet", cluster)
	}
	return current.Message
}

// ReadyCondition is the Ready condition to record after a probe observed observed: the
// current one when it is True, the probe failed and hold is set, else the observed one.
func ReadyCondition(current *metav1.Condition, observed metav1.Condition, hold bool) metav1.Condition {
	if hold && observed.Status != metav1.ConditionTrue && current != nil && current.Status == metav1.ConditionTrue {
		return *current
	}
	return observed
}

func (a *Activities) probe(ctx context.Context, cluster string) error {
	member, err := a.Members.Get(ctx, cluster)
	if err != nil {
		return err
	}
	timeout := a.ProbeTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := member.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s /readyz: %w", cluster, err)
	}
	if string(body) != "ok" {
		return fmt.Errorf("cluster %s /readyz answered %q", cluster, body)
	}
	return nil
}
