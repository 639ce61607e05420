package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"

	executionactivities "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/activities/health"
	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
)

// The agent of a Pull cluster (worker --cluster), run inside the member, as karmada-agent is:
// it speaks Kubernetes only, to its member (in-cluster) and to the control plane's API server
// as the ServiceAccount karmadaflow-agent-<cluster>, and holds no Temporal credential. Its
// jobs are local controllers (informer → work queue → handler, plus a periodic full pass,
// level-triggered) that call the activities' code as plain functions:
//
//   - Work execution (agentworks.go): the Works of karmada-es-<cluster> into the member, their
//     status back;
//   - health (agenthealth.go): the member's /readyz into its Cluster's Ready condition, and a
//     Lease in karmada-es-<cluster> the control plane reads;
//   - EndpointSlice collection (agentslices.go): the member's slices of the Services the
//     collect-request Works name, into Works of karmada-es-<cluster>, as karmada-agent's
//     endpointsliceCollect controller writes them.
//
// The control plane turns what the agent writes into its workflows' decisions.

// agentFullPass is how often the agent applies every Work of its namespace, and collects every
// requested Service again, whatever changed: the drift a missed event or a member user left is
// healed within it, as Work execution's safety resync does on the control plane.
const agentFullPass = execution.SafetyResync

// runAgent runs the agent of the Pull cluster opts.Cluster until ctx is done. It is ready once
// its informers have synced and it has renewed its Lease.
func runAgent(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	metrics, err := observability.NewMetrics()
	if err != nil {
		return err
	}
	defer func() { _ = metrics.Shutdown(context.Background()) }()
	queueMetrics, err := observability.NewWorkqueueMetrics(metrics.Registry)
	if err != nil {
		return err
	}
	deps, err := newDependencies(opts, logger, metrics)
	if err != nil {
		return err
	}
	cluster := opts.Cluster
	namespace := naming.ExecutionNamespace(cluster)
	member, err := deps.Members.Get(ctx, cluster)
	if err != nil {
		return err
	}

	// The control plane, as far as the agent's RBAC reaches: the Works of its execution
	// namespace, and its own Cluster (listed by name: it may read no other).
	works := dynamicinformer.NewFilteredDynamicSharedInformerFactory(deps.ControlPlane.Dynamic, opts.ResyncPeriod, namespace, nil)
	ownCluster := dynamicinformer.NewFilteredDynamicSharedInformerFactory(deps.ControlPlane.Dynamic, opts.ResyncPeriod, metav1.NamespaceAll,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cluster).String()
		})
	// The member: the slices a MultiClusterService may collect.
	memberSlices := informers.NewSharedInformerFactoryWithOptions(member.Watching, opts.ResyncPeriod,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = mcsactivities.CollectableSelector }))
	worksInformer := works.ForResource(kube.Works).Informer()
	clusterInformer := ownCluster.ForResource(kube.Clusters).Informer()
	sliceInformer := memberSlices.Discovery().V1().EndpointSlices().Informer()

	apply := &executionactivities.Activities{ControlPlane: deps.ControlPlane.Dynamic, Members: deps.Members, Parallelism: 16,
		Metrics: executionactivities.NewMetrics(deps.Metrics), Agent: true,
		Written: executionactivities.NewWrittenVersions(executionactivities.WrittenVersionsKept)}
	executor := &agentWorkExecutor{cluster: cluster, apply: apply, period: agentFullPass, kick: make(chan struct{}, 1), logger: logger}
	collector, err := newAgentSliceCollector(cluster, deps.ControlPlane.Dynamic, worksInformer, sliceInformer, logger)
	if err != nil {
		return err
	}
	reporter := &agentHealthReporter{cluster: cluster, leases: deps.ControlPlane.Kube.CoordinationV1().Leases(namespace),
		probe:    &health.Activities{ControlPlane: deps.ControlPlane.Dynamic, Members: deps.Members, Agent: true},
		interval: opts.ClusterProbeInterval, threshold: opts.ClusterFailureThreshold, logger: logger}

	config := func(name string, cfg trigger.Config) trigger.Config {
		cfg.Name, cfg.MetricsProvider, cfg.Logger = name, queueMetrics, logger
		return cfg
	}
	var triggers []*trigger.Trigger
	for _, cfg := range []trigger.Config{
		config("agent-works", trigger.Config{Informer: worksInformer, Key: executor.key, Handle: executor.handle}),
		config("agent-collect-requests", trigger.Config{Informer: worksInformer, Key: collectKey, Handle: collector.sync}),
		config("agent-endpointslices", trigger.Config{Informer: sliceInformer, Key: trigger.EndpointSliceServiceKey, Handle: collector.sync}),
		// A change of its Cluster (made Pull again, its endpoint changed) has a full pass.
		config("agent-cluster", trigger.Config{Informer: clusterInformer, Handle: func(context.Context, string) error {
			executor.fullPassNow()
			collector.fullPassNow()
			return nil
		}}),
	} {
		t, err := trigger.New(cfg)
		if err != nil {
			return err
		}
		triggers = append(triggers, t)
	}

	server := observability.NewServer(opts.MetricsBindAddress, metrics.Registry, logger)
	synced := map[string]func() bool{}
	for _, t := range triggers {
		synced[t.Name()] = t.HasSynced
	}
	server.AddReadinessCheck("informers", observability.SyncedCheck(synced))
	server.AddReadinessCheck("lease", reporter.renewedRecently)

	group, ctx := errgroup.WithContext(ctx)
	group.Go(func() error { return server.Run(ctx) })
	for _, f := range []interface{ Start(<-chan struct{}) }{works, ownCluster, memberSlices} {
		f.Start(ctx.Done())
	}
	for _, t := range triggers {
		group.Go(func() error { t.Run(ctx); return nil })
	}
	group.Go(func() error { executor.run(ctx); return nil })
	group.Go(func() error { collector.runFullPasses(ctx, agentFullPass); return nil })
	group.Go(func() error { reporter.run(ctx); return nil })
	logger.Info("agent running", zap.String("cluster", cluster), zap.String("executionNamespace", namespace),
		zap.Duration("probeInterval", opts.ClusterProbeInterval))
	err = group.Wait()
	for _, f := range []interface{ Shutdown() }{works, ownCluster, memberSlices} {
		f.Shutdown()
	}
	if err != nil {
		return fmt.Errorf("agent of cluster %s: %w", cluster, err)
	}
	return nil
}

// retryDelay is the wait before the failures-th retry of a periodic pass: doubling from one
// second up to a minute.
func retryDelay(failures int) time.Duration {
	d := time.Second << min(failures-1, 6)
	return min(d, time.Minute)
}
