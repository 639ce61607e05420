package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/version"
	"github.com/karmadaflow/karmadaflow/internal/workerdeployment"
	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// upgradeFrom is the release the rolling upgrade starts from: the last commit before the
// workers registered deployment versions. Its workers are unversioned.
const upgradeFrom = "6b02805"

// Sizes of the rolling upgrade: MultiClusterServices running, slice changes made during each
// switch, and how long the outgoing workers run beside the incoming ones.
const (
	upgradeServices = 50
	upgradeChanges  = 100
	upgradeOverlap  = 30 * time.Second
)

// nondeterminism is how the SDK reports a replay that does not match its history.
var nondeterminism = regexp.MustCompile(`(?i)TMPRL1100|nondetermin`)

// TestRollingUpgradeAndRollback: the previous release (built from git) runs 50
// MultiClusterServices, the health probing and Work execution of the members and one Karmada.
// The new release's workers and starter start beside it (the starter as a standby for the
// Lease) and its own stop 30 s later, while 100 slice changes are made; then the same back, to
// the previous release. No change is lost, every run
// ends on the version that is current, and no workflow task fails for non-determinism, in
// any log or metric. It needs a Temporal server that moves pinned runs at continue-as-new
// (workerdeployment.MinServerVersion): the Temporal server backend (make e2e-temporal-server).
func TestRollingUpgradeAndRollback(t *testing.T) {
	needsWorkerVersioning(t)
	ctx := context.Background()
	c := dialTemporal(t)
	m1, m2, _ := members(t)
	deployments := c.WorkerDeploymentClient().GetHandle("karmadaflow")

	src := t.TempDir()
	require.NoError(t, service.Checkout(ctx, upgradeFrom, src))
	// The starters elect a leader with the chart's timings, so that the incoming one waits as a
	// standby, its stores synced, until the outgoing one releases the Lease, as in a rolling
	// deploy of the chart.
	starterArgs := []string{"--leader-elect", "--leader-elect-resource-namespace=karmadaflow-system"}
	options := func(name, source, stamp string) service.Options {
		return service.Options{Name: name, Source: source, Version: stamp, Workers: 2, UnhealthyGrace: testUnhealthyGrace,
			ProbeInterval: testProbeInterval, FailureThreshold: testFailureThreshold, StarterArgs: starterArgs}
	}
	previous, err := service.Build(ctx, testEnv, options("previous", src, ""))
	require.NoError(t, err)
	next, err := service.Build(ctx, testEnv, options("next", "", "e2e-next"))
	require.NoError(t, err)
	pkgBuild, err := version.UnstampedBuildID(svc.Binary("worker"))
	require.NoError(t, err)
	pkgVersion := worker.WorkerDeploymentVersion{DeploymentName: "karmadaflow", BuildID: pkgBuild}
	nextVersion := worker.WorkerDeploymentVersion{DeploymentName: "karmadaflow", BuildID: "e2e-next"}
	t.Cleanup(func() {
		backToPackageWorkers(t, c, pkgBuild, nextVersion)
		previous.Stop()
		next.Stop()
		require.NoError(t, svc.StartComponent(context.Background(), "starter"))
	})

	// The previous release takes over from the package's service: its workers start, the
	// unversioned workers become current, and the package's workers stop once no run is
	// pinned to their version any more.
	require.NoError(t, previous.StartWorkers(ctx))
	eventually(t, time.Minute, func() error { return setCurrent(deployments, "") })
	waitDrained(t, c, pkgVersion)
	svc.Stop()
	require.NoError(t, previous.StartComponent(ctx, "starter"))

	// The previous release runs the MultiClusterServices, the members' workflows and a Karmada.
	ns := testNamespace(t)
	apps := make([]string, upgradeServices)
	for i := range apps {
		apps[i] = fmt.Sprintf("app-%02d", i)
		deployApp(t, testEnv.Member(m1), ns, apps[i], 1)
		createService(t, testEnv.ControlPlane, ns, apps[i])
		createMCS(t, ns, apps[i], mcsSpec([]string{m1}, []string{m2}))
	}
	karmada := createKarmada(t, c)
	// busy are the workflows the changes (or the health probes) give a task during each switch;
	// idle may have none, and an unversioned run of those stays so until its next task, which
	// then goes to the current version.
	busy := []string{execution.WorkflowID(m2)}
	idle := []string{provisioning.WorkflowID(karmada.ns, karmada.name)}
	for _, m := range testEnv.Members {
		busy = append(busy, clusterhealth.WorkflowID(m.Name))
		if m.Name != m2 {
			idle = append(idle, execution.WorkflowID(m.Name))
		}
	}
	for _, a := range apps {
		busy = append(busy, mcs.WorkflowID(ns, a))
	}
	observer := newEndpointObserver(testEnv.Member(m2), ns)
	go observer.run(t.Context())
	eventually(t, 2*time.Minute, func() error { return observer.all(apps, 1) })

	// Upgrade: the new release's workers and standby starter start (the workers' version is the
	// newest, so they make it current), the previous ones stop 30 s later; 100 changes are made
	// meanwhile.
	replicas := int32(1)
	switchOver(t, observer, apps, &replicas, func() {
		require.NoError(t, next.StartWorkers(ctx))
		require.NoError(t, next.StartComponent(ctx, "starter"))
	}, func() {
		stopWorkers(t, previous)
		previous.StopInstance("starter")
	}, "upgrade")
	expectOnVersion(t, c, busy, nextVersion.BuildID)
	expectOnVersion(t, c, idle, nextVersion.BuildID, "")

	// Rollback: the previous release's workers start and are made current (a rollback is
	// explicit), the new release's stop 30 s later.
	switchOver(t, observer, apps, &replicas, func() {
		require.NoError(t, previous.StartWorkers(ctx))
		require.NoError(t, previous.StartComponent(ctx, "starter"))
		eventually(t, time.Minute, func() error { return setCurrent(deployments, "") })
	}, func() {
		stopWorkers(t, next)
		next.StopInstance("starter")
	}, "rollback")
	// Every run pinned to the new release was woken to move, idle or not.
	expectOnVersion(t, c, append(busy, idle...), "")

	for _, w := range previous.Workers() {
		expectNoNondeterminism(t, previous, w)
	}
	for _, s := range []*service.Service{previous, next} {
		for _, instance := range append(s.Workers(), "starter") {
			log, err := os.ReadFile(s.LogFile(instance))
			require.NoError(t, err)
			require.False(t, nondeterminism.Match(log), "%s reports a non-determinism failure: %s", s.LogFile(instance),
				nondeterminismLines(s.LogFile(instance)))
		}
	}
}

// switchOver makes upgradeChanges slice changes, starting the incoming release with start and,
// upgradeOverlap later, stopping the outgoing one with stop. Every change reaches the consumer;
// it reports the p99 and the longest time a change took.
func switchOver(t *testing.T, observer *endpointObserver, apps []string, replicas *int32, start, stop func(), name string) {
	t.Helper()
	m1, _, _ := members(t)
	interval := upgradeOverlap * 4 / 3 / upgradeChanges
	started := time.Now()
	start()
	stopped := false
	var latencies []time.Duration
	slowest := map[time.Duration]time.Duration{} // latency -> when the change was made, after start
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range upgradeChanges {
		app := apps[i%len(apps)]
		if i%len(apps) == 0 {
			*replicas = 3 - *replicas // 1, 2, 1, ...
		}
		want := int(*replicas)
		time.Sleep(time.Until(started.Add(time.Duration(i) * interval)))
		if !stopped && time.Since(started) >= upgradeOverlap {
			stop()
			stopped = true
		}
		scale(t, testEnv.Member(m1), observer.namespace, app, *replicas)
		changed := time.Now()
		wg.Go(func() {
			took, err := observer.wait(app, want, changed, 3*time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: change %d lost: %v", name, i, err)
				return
			}
			latencies = append(latencies, took)
			slowest[took] = changed.Sub(started)
		})
	}
	if !stopped {
		time.Sleep(time.Until(started.Add(upgradeOverlap)))
		stop()
	}
	wg.Wait()
	require.Len(t, latencies, upgradeChanges, "%s: every change reaches the consumer", name)
	slices.Sort(latencies)
	t.Logf("%s: %d slice changes, p50 %v, p99 %v, longest %v", name, len(latencies),
		latencies[len(latencies)/2], latencies[len(latencies)*99/100-1], latencies[len(latencies)-1])
	for _, l := range latencies[len(latencies)-3:] {
		t.Logf("%s: a change made %.1fs after the incoming workers started took %v (the outgoing stopped at %.0fs)",
			name, slowest[l].Seconds(), l, upgradeOverlap.Seconds())
	}
}

// stopWorkers stops the workers of s, once their metrics show no workflow task failed for
// non-determinism.
func stopWorkers(t *testing.T, s *service.Service) {
	t.Helper()
	for _, w := range s.Workers() {
		expectNoNondeterminism(t, s, w)
	}
	var wg sync.WaitGroup
	for _, w := range s.Workers() {
		wg.Go(func() { s.StopInstance(w) })
	}
	wg.Wait()
}

// expectNoNondeterminism checks the SDK's count of failed workflow tasks on instance of s: none
// failed for non-determinism.
func expectNoNondeterminism(t *testing.T, s *service.Service, instance string) {
	t.Helper()
	_, body := httpGet(t, "http://"+s.MetricsAddress(instance)+"/metrics")
	for line := range strings.Lines(body) {
		if strings.Contains(line, "workflow_task_execution_failed") && strings.Contains(line, `"NonDeterminismError"`) {
			fields := strings.Fields(line)
			require.Equal(t, "0", fields[len(fields)-1], "%s: %s\n%s", s.LogFile(instance), line, nondeterminismLines(s.LogFile(instance)))
		}
	}
}

// nondeterminismLines are the first lines of a log that report a non-determinism failure.
func nondeterminismLines(path string) string {
	log, _ := os.ReadFile(path)
	var out []string
	for line := range strings.Lines(string(log)) {
		if nondeterminism.MatchString(line) && len(out) < 5 {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// needsWorkerVersioning skips a test unless it runs standalone on a Temporal server that moves
// pinned runs at continue-as-new (the PostgreSQL backend; the dev server is older).
func needsWorkerVersioning(t *testing.T) {
	t.Helper()
	standaloneOnly(t)
	if testEnv.Temporal.Backend != env.TemporalPostgres {
		t.Skipf("needs Temporal server %s or later: %s=%s", workerdeployment.MinServerVersion, env.TemporalBackendVariable, env.TemporalPostgres)
	}
}

// backToPackageWorkers starts the package's service's workers again and makes their version
// current: it is older than the last change, so explicitly, as a rollback is. It returns once
// no run is pinned to the newest version any more, whose workers may then stop.
func backToPackageWorkers(t *testing.T, c client.Client, pkgBuild string, newest worker.WorkerDeploymentVersion) {
	t.Helper()
	require.NoError(t, svc.StartWorkers(context.Background()))
	eventually(t, time.Minute, func() error { return setCurrent(c.WorkerDeploymentClient().GetHandle("karmadaflow"), pkgBuild) })
	waitDrained(t, c, newest)
}

// setCurrent makes a version of the deployment current ("" the unversioned workers).
func setCurrent(deployment client.WorkerDeploymentHandle, buildID string) error {
	_, err := deployment.SetCurrentVersion(context.Background(), client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID})
	return err
}

// waitDrained waits until no running run is pinned to v.
func waitDrained(t *testing.T, c client.Client, v worker.WorkerDeploymentVersion) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		n, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: workerdeployment.PinnedQuery(v)})
		if err == nil && n.GetCount() > 0 {
			err = fmt.Errorf("%d runs still pinned to %s", n.GetCount(), workerdeployment.Name(v))
		}
		return err
	})
}

// expectOnVersion waits until the running run of each workflow is on one of the worker
// deployment versions builds ("" unversioned).
func expectOnVersion(t *testing.T, c client.Client, ids []string, builds ...string) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		for _, id := range ids {
			d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			info := d.GetWorkflowExecutionInfo()
			if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return fmt.Errorf("%s is %s", id, info.GetStatus())
			}
			if got := info.GetVersioningInfo().GetDeploymentVersion().GetBuildId(); !slices.Contains(builds, got) {
				return fmt.Errorf("%s runs on build %q, want one of %q", id, got, builds)
			}
		}
		return nil
	})
}

// upgradeKarmada is the Karmada the previous release provisions.
type upgradeKarmada struct{ ns, name string }

func createKarmada(t *testing.T, c client.Client) upgradeKarmada {
	t.Helper()
	k := upgradeKarmada{ns: testNamespaceIn(t, testEnv.Host), name: "upgraded"}
	karmadas := testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(k.ns)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "operator.karmada.io/v1alpha1", "kind": "Karmada", "spec": map[string]any{}}}
	obj.SetName(k.name)
	_, err := karmadas.Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.TerminateWorkflow(context.Background(), provisioning.WorkflowID(k.ns, k.name), "", "test over")
		_, err := karmadas.Patch(context.Background(), k.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
		_ = karmadas.Delete(context.Background(), k.name, metav1.DeleteOptions{})
	})
	eventually(t, time.Minute, func() error {
		run, err := runningRun(c, provisioning.WorkflowID(k.ns, k.name))
		if err == nil && run == "" {
			err = errors.New("no provisioning workflow runs for the Karmada")
		}
		return err
	})
	return k
}

// endpointObserver reads, every 200 ms, how many endpoints the consumer holds for each
// Service of a namespace, from the slices dispatched to it.
type endpointObserver struct {
	cluster   *env.Cluster
	namespace string
	mu        sync.Mutex
	counts    map[string]int
	changed   *sync.Cond
}

func newEndpointObserver(cluster *env.Cluster, namespace string) *endpointObserver {
	o := &endpointObserver{cluster: cluster, namespace: namespace, counts: map[string]int{}}
	o.changed = sync.NewCond(&o.mu)
	return o
}

func (o *endpointObserver) run(ctx context.Context) {
	for ctx.Err() == nil {
		list, err := o.cluster.Client().DiscoveryV1().EndpointSlices(o.namespace).List(ctx, metav1.ListOptions{
			LabelSelector: networkingv1alpha1.LabelEndpointSliceManagedBy + "=" + networkingv1alpha1.ManagedByEndpointSliceDispatch,
		})
		o.mu.Lock()
		if err == nil {
			o.counts = map[string]int{}
			for _, s := range list.Items {
				o.counts[s.Labels[networkingv1alpha1.LabelServiceName]] += len(s.Endpoints)
			}
		}
		o.changed.Broadcast() // also on an error: waiters check their timeout
		o.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
}

// wait returns how long after changed the consumer first held want endpoints of service.
func (o *endpointObserver) wait(service string, want int, changed time.Time, timeout time.Duration) (time.Duration, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.counts[service] != want {
		if time.Since(changed) > timeout {
			return 0, fmt.Errorf("%s holds %d endpoints after %v, want %d", service, o.counts[service], timeout, want)
		}
		o.changed.Wait()
	}
	return time.Since(changed), nil
}

// all tells whether the consumer holds want endpoints of every service.
func (o *endpointObserver) all(services []string, want int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range services {
		if o.counts[s] != want {
			return fmt.Errorf("%s holds %d endpoints, want %d", s, o.counts[s], want)
		}
	}
	return nil
}
