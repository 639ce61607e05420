// Command starter is karmadaflow's starter: it watches Kubernetes resources with informers
// and, through one trigger per resource (starter/trigger), signals or starts the workflow of
// every object that changed; at start and every --ensure-period it starts the workflow of every
// object that has none running (starter/ensure). With --leader-elect only the replica holding
// the Lease does either; the others keep their informers synced, the members' EndpointSlice
// informers too, and stand by, so that a takeover starts warm. It serves
// /metrics, /healthz and /readyz; it is ready once Temporal answers and every informer has
// synced. SIGINT or SIGTERM stops it gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/karmadaflow/karmadaflow/internal/capabilities"
	"github.com/karmadaflow/karmadaflow/internal/daemon"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/internal/temporalcheck"
	"github.com/karmadaflow/karmadaflow/starter/certexpiry"
	"github.com/karmadaflow/karmadaflow/starter/ensure"
)

func main() { daemon.Main(options.Starter, run) }

func run(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	metrics, err := observability.NewMetrics()
	if err != nil {
		return err
	}
	defer func() { _ = metrics.Shutdown(context.Background()) }()
	queueMetrics, err := observability.NewWorkqueueMetrics(metrics.Registry)
	if err != nil {
		return fmt.Errorf("registering work-queue metrics: %w", err)
	}
	started, err := ensure.NewStartedCounter(metrics.Registry)
	if err != nil {
		return fmt.Errorf("registering the started-workflows metric: %w", err)
	}
	leader, err := newLeaderGauge(metrics.Registry)
	if err != nil {
		return fmt.Errorf("registering the leader metric: %w", err)
	}
	memberInformersSynced, err := newMemberInformersSynced(metrics.Registry)
	if err != nil {
		return fmt.Errorf("registering the member informers metric: %w", err)
	}

	controlPlane, err := opts.KarmadaClients()
	if err != nil {
		return fmt.Errorf("clients of the Karmada control plane: %w", err)
	}
	host, err := opts.HostClients()
	if err != nil {
		return fmt.Errorf("clients of the host cluster: %w", err)
	}
	clientOptions, err := opts.TemporalClientOptions(
		observability.TemporalLogger(logger),
		metrics.TemporalHandler(func(err error) { logger.Error("Temporal SDK metric", zap.Error(err)) }),
	)
	if err != nil {
		return err
	}
	temporal, err := client.NewLazyClient(clientOptions)
	if err != nil {
		return fmt.Errorf("creating Temporal client for %s: %w", opts.TemporalAddress, err)
	}
	defer temporal.Close()
	pollers, err := capabilities.NewPollers(temporal, metrics.Registry, logger.Named("pollers"))
	if err != nil {
		return fmt.Errorf("registering the task queue pollers metric: %w", err)
	}

	deps := dependencies{
		Options:      opts,
		Logger:       logger,
		Temporal:     temporal,
		ControlPlane: controlPlane,
		Host:         host,
		queueMetrics: queueMetrics,
		started:      started,
		pollers:      pollers,

		memberInformersSynced: memberInformersSynced,
		leadership:            newLeadership(),
	}
	deps.newInformerFactories()
	triggers, err := newTriggers(deps)
	if err != nil {
		return fmt.Errorf("creating triggers: %w", err)
	}
	if opts.EnableProvisioning {
		// Every replica serves the certificates' expiry, a standby too: the Karmada informer
		// runs on every replica, and the alert takes the min over the replicas.
		karmadas := deps.HostDynamic.ForResource(kube.Karmadas).Informer().GetStore()
		if err := certexpiry.Register(metrics.Registry, karmadas); err != nil {
			return fmt.Errorf("registering the certificate expiry metric: %w", err)
		}
	}
	ensurer := ensure.New(ensure.Config{
		Temporal: temporal, TaskQueue: opts.TaskQueue, Kinds: triggers.kinds, Period: opts.EnsurePeriod,
		Polled: pollers.Polled, Started: started, Logger: logger.Named("ensure"),
	})

	// Readiness: Temporal answers, every informer the triggers asked the factories for has
	// synced, and every trigger has seen its initial list. The members' informers are not
	// waited for: one unreachable member must not make the starter unready.
	var informersSynced atomic.Bool
	synced := map[string]func() bool{"informers": informersSynced.Load}
	for _, t := range slices.Concat(triggers.leading, triggers.everyReplica) {
		synced["trigger "+t.Name()] = t.HasSynced
	}
	server := observability.NewServer(opts.MetricsBindAddress, metrics.Registry, logger)
	target := temporalcheck.Target{Client: temporal, Address: opts.TemporalAddress, Namespace: opts.TemporalNamespace,
		TLS: clientOptions.ConnectionOptions.TLS}
	server.AddReadinessCheck("temporal", target.Ready)
	server.AddReadinessCheck("informers-synced", observability.SyncedCheck(synced))

	group, ctx := errgroup.WithContext(ctx)
	group.Go(func() error { return server.Run(ctx) })
	group.Go(func() error {
		// Keys handled before Temporal answers would only pile up retries.
		if err := observability.WaitFor(ctx, "Temporal", target.Usable, logger); err != nil {
			if ctx.Err() != nil {
				return nil // shutting down
			}
			return err
		}
		factories := deps.informerFactories()
		for _, f := range factories {
			f.Start(ctx.Done())
		}
		go func() {
			if waitForFactories(ctx, deps) {
				informersSynced.Store(true)
				logger.Info("informers synced")
			}
		}()

		// Every informer runs on every replica: the control plane's and the host's, and the
		// members' EndpointSlice informers, which the member-watches trigger starts and stops
		// as Clusters come and go. A standby's stores are thus synced when it leads, and its
		// triggers have queued every key (without handling any); at takeover each trigger
		// also queues every object its store holds (trigger.Run), so the new leader acts on
		// the current state, whatever it saw. Only the leader's triggers signal and start
		// workflows, and only the leader runs the ensure loop.
		everyReplicaCtx, stopEveryReplica := context.WithCancel(ctx)
		var everyReplica sync.WaitGroup
		for _, t := range triggers.everyReplica {
			everyReplica.Go(func() { t.Run(everyReplicaCtx) })
		}
		lead := func(ctx context.Context) {
			deps.leadership.lead(ctx) // the members' triggers handle keys from now on
			var wg sync.WaitGroup
			for _, t := range triggers.leading {
				wg.Go(func() { t.Run(ctx) })
			}
			wg.Go(func() {
				// The first pass compares with complete stores.
				if cache.WaitForCacheSync(ctx.Done(), informersSynced.Load) {
					ensurer.Run(ctx)
				}
			})
			logger.Info("starter running", zap.Int("triggers", len(triggers.leading)), zap.String("temporal", opts.TemporalAddress),
				zap.Duration("ensurePeriod", opts.EnsurePeriod))
			wg.Wait()
		}
		var err error
		if opts.LeaderElection.Enabled {
			err = runLeading(ctx, opts.LeaderElection, host.Kube, leader, logger.Named("leader"), lead)
		} else {
			leader.Set(1)
			lead(ctx)
		}
		stopEveryReplica() // also when the Lease was lost and ctx goes on
		everyReplica.Wait()
		for _, f := range factories {
			f.Shutdown()
		}
		return err
	})
	if err := group.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// waitForFactories reports whether every informer started by the factories has synced
// before ctx ended.
func waitForFactories(ctx context.Context, deps dependencies) bool {
	for _, synced := range deps.ControlPlaneKube.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return false
		}
	}
	for _, f := range []dynamicinformer.DynamicSharedInformerFactory{deps.ControlPlaneDynamic, deps.ControlPlaneWorks, deps.AgentCollectedWorks, deps.HostDynamic} {
		for _, synced := range f.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return false
			}
		}
	}
	return true
}
