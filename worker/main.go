// Command worker is karmadaflow's Temporal worker: it runs the workflows and activities of the
// capabilities its --enable-* flags turn on (registrations), each on the capability's own task
// queue, and serves /metrics, /healthz and /readyz. With --enable-proxy it also serves
// the global resource proxy (package proxy; as the search API behind karmada-apiserver's
// aggregator with --serve-search-api). It is ready once Temporal answers and the worker polls
// its task queues. SIGINT or SIGTERM stops polling, lets running activities finish (up to
// --shutdown-timeout) and exits. `worker bootstrap` (same flags) registers the namespace and the
// search attributes the worker needs, and exits; `worker versions` (same flags) prints how many
// runs are on each workflow.GetVersion branch, and exits (versions.go). With --cluster <name> it
// is instead the agent of that Pull member cluster, run inside it, which makes no Temporal
// connection at all (agent.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/karmadaflow/karmadaflow/internal/daemon"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/internal/temporalcheck"
	"github.com/karmadaflow/karmadaflow/internal/version"
	"github.com/karmadaflow/karmadaflow/internal/workerdeployment"
)

// deploymentInterval is how often the worker reads its deployment's current version;
// drainSignalsPerSecond bounds the resyncs that wake the runs of a version no longer current.
const (
	deploymentInterval    = 2 * time.Second
	drainSignalsPerSecond = 100
)

// deploymentOptions are the worker's Worker Versioning options: with --worker-versioning, and
// a Temporal server that moves pinned runs at continue-as-new, a version of
// --worker-deployment named by the build, every workflow pinned to it.
func deploymentOptions(ctx context.Context, opts *options.Options, temporal client.Client, logger *zap.Logger) (worker.DeploymentOptions, error) {
	if !opts.WorkerVersioning {
		return worker.DeploymentOptions{}, nil
	}
	supported, server, err := workerdeployment.Supported(ctx, temporal)
	if err != nil {
		return worker.DeploymentOptions{}, err
	}
	if !supported {
		logger.Warn("Worker Versioning is off: the Temporal server does not move pinned runs to a new version when they continue as new",
			zap.String("serverVersion", server), zap.String("needs", workerdeployment.MinServerVersion))
		return worker.DeploymentOptions{}, nil
	}
	return worker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   worker.WorkerDeploymentVersion{DeploymentName: opts.WorkerDeployment, BuildID: version.BuildID()},
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}, nil
}

// versionName is the worker's version for its logs ("" when unversioned).
func versionName(d worker.DeploymentOptions) string {
	if !d.UseVersioning {
		return ""
	}
	return workerdeployment.Name(d.Version)
}

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "bootstrap":
			daemon.MainArgs(options.Worker, "worker bootstrap", os.Args[2:], runBootstrap)
			return
		case "versions":
			daemon.MainArgs(options.Worker, "worker versions", os.Args[2:], runVersions)
			return
		}
	}
	daemon.Main(options.Worker, run)
}

func run(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	if opts.Cluster != "" {
		return runAgent(ctx, opts, logger)
	}
	metrics, err := observability.NewMetrics()
	if err != nil {
		return err
	}
	defer func() { _ = metrics.Shutdown(context.Background()) }()

	// The control plane's workers rescue the runs stranded on a version whose workers are gone.
	var rescuer *workerdeployment.Rescuer
	if opts.StrandedAfter > 0 {
		if rescuer, err = workerdeployment.NewRescuer(opts.StrandedAfter, metrics.Registry, logger); err != nil {
			return err
		}
	}

	deps, err := newDependencies(opts, logger, metrics)
	if err != nil {
		return err
	}

	// A lazy client connects on first use, so the process serves /healthz and reports
	// Temporal as not ready while the frontend is unreachable, instead of exiting.
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

	var polling atomic.Bool
	var keeper atomic.Pointer[workerdeployment.Keeper] // set when the worker is versioned
	server := observability.NewServer(opts.MetricsBindAddress, metrics.Registry, logger)
	target := temporalcheck.Target{Client: temporal, Address: opts.TemporalAddress, Namespace: opts.TemporalNamespace,
		TLS: clientOptions.ConnectionOptions.TLS}
	server.AddReadinessCheck("temporal", target.Ready)
	server.AddReadinessCheck("worker", func(context.Context) error {
		if !polling.Load() {
			return errors.New("not polling the task queues")
		}
		if k := keeper.Load(); k != nil && !k.Settled() {
			return fmt.Errorf("version %s not registered in its worker deployment yet", workerdeployment.Name(k.Version))
		}
		return nil
	})

	group, ctx := errgroup.WithContext(ctx)
	group.Go(func() error { return server.Run(ctx) })
	if opts.EnableProxy {
		group.Go(func() error { return serveProxy(ctx, deps) })
	}
	group.Go(func() error {
		if err := observability.WaitFor(ctx, "Temporal", target.Usable, logger); err != nil {
			if ctx.Err() != nil {
				return nil // shutting down before Temporal was reachable
			}
			return err
		}
		deployment, err := deploymentOptions(ctx, opts, temporal, logger)
		if err != nil {
			return err
		}
		fatal := make(chan error, 1)
		newWorker := func(taskQueue string) worker.Worker {
			return worker.New(temporal, taskQueue, worker.Options{
				DeploymentOptions:                       deployment,
				MaxConcurrentActivityExecutionSize:      opts.MaxConcurrentActivities,
				MaxConcurrentLocalActivityExecutionSize: opts.MaxConcurrentLocalActivities,
				MaxConcurrentWorkflowTaskExecutionSize:  opts.MaxConcurrentWorkflowTasks,
				TaskQueueActivitiesPerSecond:            opts.ActivitiesPerSecond,
				WorkerStopTimeout:                       opts.ShutdownTimeout,
				StickyScheduleToStartTimeout:            opts.StickyScheduleToStartTimeout,
				// Pollers follow the backlog: few while idle, more while tasks wait.
				WorkflowTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
				ActivityTaskPollerBehavior: worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{}),
				OnFatalError: func(err error) {
					select {
					case fatal <- err:
					default: // the first fatal error is enough
					}
				},
			})
		}
		// One SDK worker per task queue: each capability's queue and the base one, where runs
		// started before the capabilities had queues of their own still run until they
		// continue as new (docs/temporal-in-production.md says when it may go). Every worker
		// registers the capability's workflows and activities.
		workers := map[string]worker.Worker{}
		regs, err := registrations(ctx, deps)
		if err != nil {
			return fmt.Errorf("registering workflows and activities: %w", err)
		}
		base := newWorker(opts.TaskQueue)
		workers[opts.TaskQueue] = base
		for capability, register := range regs {
			queue := naming.CapabilityTaskQueue(opts.TaskQueue, capability)
			workers[queue] = newWorker(queue)
			register(workers[queue])
			register(base)
		}
		// Together: each waits up to --shutdown-timeout for its running activities.
		stop := func() {
			polling.Store(false)
			var wg sync.WaitGroup
			for _, w := range workers {
				wg.Go(w.Stop)
			}
			wg.Wait()
		}
		for queue, w := range workers {
			if err := w.Start(); err != nil {
				stop()
				return fmt.Errorf("starting worker on task queue %s: %w", queue, err)
			}
		}
		polling.Store(true)
		logger.Info("worker polling", zap.Strings("taskQueues", slices.Sorted(maps.Keys(workers))),
			zap.String("namespace", opts.TemporalNamespace), zap.String("temporal", opts.TemporalAddress),
			zap.String("version", versionName(deployment)))
		if deployment.UseVersioning {
			k := &workerdeployment.Keeper{Client: temporal, Version: deployment.Version, Promote: opts.PromoteVersion,
				Interval: deploymentInterval, SignalsPerSecond: drainSignalsPerSecond, Logger: logger, Rescuer: rescuer}
			keeper.Store(k)
			go k.Run(ctx)
		}

		select {
		case <-ctx.Done():
			if k := keeper.Load(); k != nil {
				// A version that is no longer current keeps its workers until its runs moved.
				drainCtx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
				err := k.Drained(drainCtx)
				cancel()
				logger.Info("the worker's version is current or drained", zap.String("version", workerdeployment.Name(k.Version)),
					zap.Bool("timedOut", err != nil))
			}
			logger.Info("stopping worker, waiting for running activities", zap.Duration("timeout", opts.ShutdownTimeout))
			stop()
			return nil
		case err := <-fatal:
			stop()
			return fmt.Errorf("worker on task queues of %s: %w", opts.TaskQueue, err)
		}
	})
	return group.Wait()
}
