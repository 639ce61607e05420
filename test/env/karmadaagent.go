package env

// Beside a real Karmada (Options.BesideKarmada), a member can be made a Pull cluster served by
// Karmada's own karmada-agent (bin/karmada-agent, built from Karmada's source), as
// `karmadactl register` deploys it inside a member: StartKarmadaAgent runs it on this machine
// with the control plane's and the member's kubeconfigs, StopKarmadaAgent kills it as a crash.
//
// Registration. The agent registers its member by updating the Cluster of the same name: it
// accepts an existing Cluster whose spec.id is the UID of the member's kube-system namespace
// (joinCluster sets it so; with another spec.id it would refuse to start, the name being
// taken) and sets spec.syncMode Pull, spec.id and spec.apiEndpoint (--cluster-api-endpoint:
// the member's API server, as `karmadactl register` reports it). It reports no Secrets
// (--report-secrets=None), so the Cluster keeps the Secrets joinCluster bound to it (by
// default the agent would also create ServiceAccounts in the member, then keep those very
// Secrets, as it leaves an existing Secret of the name it wants as it is).
//
// Karmada's controller manager. Its cluster status controller keeps polling a Cluster it has
// seen in Push mode: it asks to be called again every --cluster-status-update-frequency, and
// its Push-only filter applies to watch events, not to those calls. Once the Cluster is Pull
// it goes on probing the member and even renews the member's lease itself, with a duration of
// 0 that the API server refuses, many times a second. The first StartKarmadaAgent of a Push
// member therefore restarts karmada-controller-manager, with the same flags, once the Cluster
// is Pull: the new one leaves the Pull cluster to its agent (cluster status, execution, work
// status) and judges it by the agent's lease, karmada-cluster/<member>, turning it Unknown
// after --cluster-monitor-grace-period without renewal (karmadaClusterHealthFlags).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const binKarmadaAgent = "karmada-agent"

// KarmadaAgentControllers is karmada-agent's --controllers beside karmadaflow: every
// controller the agent knows but certRotation (off by default upstream; the members'
// kubeconfigs hold tokens, not certificates). Unlike karmada-controller-manager, the agent
// has none that karmadaflow replaces: karmadaflow relies on its endpointsliceCollect to
// collect a Pull provider's EndpointSlices into Works of karmada-es-<member>, and
// serviceExport stays Karmada's, as in the controller manager (DefaultKarmadaControllers).
const KarmadaAgentControllers = "clusterStatus,execution,workStatus,serviceExport,endpointsliceCollect"

// karmadaAgentFlags are the agent's side of the cluster health timings
// (karmadaClusterHealthFlags): status every 2s, the same thresholds, and a lease renewed every
// 2s (10s × 0.2) that karmada-controller-manager's 10s grace period watches.
var karmadaAgentFlags = []string{
	"--cluster-status-update-frequency=2s",
	"--cluster-failure-threshold=5s",
	"--cluster-success-threshold=2s",
	"--cluster-lease-duration=10s",
	"--cluster-lease-renew-interval-fraction=0.2",
	// endpointsliceCollect starts only behind this alpha feature gate (off by default); in
	// the agent it gates nothing else.
	"--feature-gates=MultiClusterService=true",
}

// karmadaAgent is the karmada-agent of one member.
type karmadaAgent struct {
	port int      // its health probe port, on 127.0.0.1
	proc *process // the last one started
}

// agentArgs are karmada-agent's flags for member m with extraArgs, its only server (the health
// probe) on 127.0.0.1:port. Metrics are off and profiling is off (--enable-pprof defaults to
// false). One agent per member needs no leader election, whose lease would hold a restarted
// agent back after a SIGKILL.
func (k *karmadaComponents) agentArgs(controlPlaneKubeconfig string, m *Cluster, port int, extraArgs []string) []string {
	args := []string{
		"--karmada-kubeconfig=" + controlPlaneKubeconfig,
		"--kubeconfig=" + m.Kubeconfig,
		"--cluster-name=" + m.Name,
		"--cluster-api-endpoint=" + m.Server,
		"--cluster-namespace=" + ClusterSecretNamespace,
		"--report-secrets=None",
		"--controllers=" + KarmadaAgentControllers,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--v=" + karmadaLogLevel,
	}
	args = append(args, karmadaAgentFlags...)
	return append(args, extraArgs...)
}

// StartKarmadaAgent runs Karmada's karmada-agent for member (Options.BesideKarmada), which is a
// Pull cluster from then on: the agent registers it (spec.syncMode Pull), posts its status,
// renews its lease and applies the Works of karmada-es-<member> into it. extraArgs are added
// to the agent's flags (a single-valued flag given again wins; list and map flags such as
// --controllers and --feature-gates add to ours), e.g. "--cluster-api-endpoint=<URL>" for an
// endpoint the control plane must never dial. Its log is logs/karmada-agent-<member>.log; the
// environment stops it with the other components.
//
// The first start of a member still in Push mode restarts karmada-controller-manager once the
// Cluster is Pull (see the top of this file). StartKarmadaAgent returns once the agent
// answers /healthz and has judged the Cluster Ready itself (Ready and its lease renewed since
// this call). It fails if the member's agent is running.
func (e *Env) StartKarmadaAgent(ctx context.Context, member string, extraArgs ...string) error {
	k := e.karmada
	if k == nil {
		return errors.New("no Karmada components: the environment does not run BesideKarmada")
	}
	m := e.Member(member)
	if m == nil {
		return fmt.Errorf("no member cluster %q", member)
	}
	if err := checkBinaries(e.opts.BinDir, []string{binKarmadaAgent}); err != nil {
		return err
	}
	a, err := e.karmadaAgent(m)
	if err != nil {
		return err
	}
	begin := time.Now()
	cluster, err := e.ControlPlane.Dynamic().Resource(ClusterGVR).Get(ctx, member, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Cluster %s: %w", member, err)
	}
	wasPush := syncMode(cluster) == "Push"

	name := binKarmadaAgent + "-" + member
	p, err := e.startProcess(name, binKarmadaAgent, k.agentArgs(e.ControlPlane.Kubeconfig, m, a.port, extraArgs), k.dir, tierComponent, a.port)
	if err != nil {
		return err
	}
	e.mu.Lock()
	a.proc = p
	e.mu.Unlock()
	// The agent registers the Cluster before it starts its controllers and health probe.
	if err := k.waitHealthy(ctx, name, a.port, p); err != nil {
		return err
	}
	e.phase(name+" registered", begin)
	if wasPush {
		if err := e.restartKarmadaControllerManager(ctx, nil); err != nil {
			return fmt.Errorf("leave Pull cluster %s to its agent: %w", member, err)
		}
	}
	if err := waitFor(ctx, karmadaReadyTimeout, "Cluster "+member+" Pull and Ready (by "+name+")", func(ctx context.Context) error {
		return e.pullClusterServed(ctx, member, begin)
	}, p); err != nil {
		return err
	}
	e.phase(name+" ready", begin)
	return nil
}

// karmadaAgent returns member m's agent, reserving its port on the first call, or fails if
// the agent is running or the environment stopping.
func (e *Env) karmadaAgent(m *Cluster) (*karmadaAgent, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return nil, errors.New("the environment is stopping")
	}
	a := e.karmada.agents[m.Name]
	if a != nil {
		if a.proc != nil && !a.proc.exited() {
			return nil, fmt.Errorf("the karmada-agent of %s is running", m.Name)
		}
		return a, nil
	}
	ports, err := e.ports.reserve(1)
	if err != nil {
		return nil, err
	}
	a = &karmadaAgent{port: ports[0]}
	if e.karmada.agents == nil {
		e.karmada.agents = map[string]*karmadaAgent{}
	}
	e.karmada.agents[m.Name] = a
	return a, nil
}

// pullClusterServed answers nil once Cluster name is Pull and Ready and its lease
// (karmada-cluster/<name>, which the agent starts renewing once it finds the member Ready) was
// renewed after since.
func (e *Env) pullClusterServed(ctx context.Context, name string, since time.Time) error {
	cluster, err := e.ControlPlane.Dynamic().Resource(ClusterGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if mode := syncMode(cluster); mode != "Pull" {
		return fmt.Errorf("Cluster %s is in %s mode", name, mode)
	}
	if err := conditionTrue(cluster, "Ready"); err != nil {
		return err
	}
	lease, err := e.ControlPlane.Client().CoordinationV1().Leases(ClusterSecretNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("lease of Cluster %s: %w", name, err)
	}
	if renew := lease.Spec.RenewTime; renew == nil || renew.Time.Before(since) {
		return fmt.Errorf("lease of Cluster %s not renewed since %s", name, since.Format(time.RFC3339))
	}
	return nil
}

// StopKarmadaAgent kills member's karmada-agent with SIGKILL, as a crash: it neither updates
// the Cluster nor releases anything. Karmada's controller manager then finds the lease no
// longer renewed and turns the Cluster's Ready condition Unknown after its
// --cluster-monitor-grace-period. StartKarmadaAgent starts it again.
func (e *Env) StopKarmadaAgent(member string) error {
	if e.karmada == nil {
		return errors.New("no Karmada components: the environment does not run BesideKarmada")
	}
	var p *process
	e.mu.Lock()
	if a := e.karmada.agents[member]; a != nil {
		p = a.proc
	}
	e.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no karmada-agent was started for %q", member)
	}
	if err := p.stop(0); err != nil {
		return err
	}
	e.logf("env: killed %s-%s", binKarmadaAgent, member)
	return nil
}

// syncMode is a Cluster's spec.syncMode.
func syncMode(cluster *unstructured.Unstructured) string {
	mode, _, _ := unstructured.NestedString(cluster.Object, "spec", "syncMode")
	return mode
}
