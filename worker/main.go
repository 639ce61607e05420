// Command worker is karmadaflow's Temporal worker: it runs the workflows and activities that
// register adds, and serves /metrics, /healthz and /readyz. With --enable-proxy it also serves
// the global resource proxy (package proxy; as the search API behind karmada-apiserver's
// aggregator with --serve-search-api). It is ready once Temporal answers and the worker polls
// its task queue. SIGINT or SIGTERM stops polling, lets running activities finish (up to
// --shutdown-timeout) and exits. `worker bootstrap` (same flags) registers the namespace and the
// search attributes the worker needs, and exits; `worker versions` (same flags) prints how many
// runs are on each workflow.GetVersion branch, and exits (versions.go). With --cluster <name> it
// is instead the agent of that Pull member cluster, run inside it (agent.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/karmadaflow/karmadaflow/internal/capabilities"
	"github.com/karmadaflow/karmadaflow/internal/daemon"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/internal/temporalcheck"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "bootstrap":
			daemon.MainArgs(options.Worker, os.Args[2:], runBootstrap)
			return
		case "versions":
			daemon.MainArgs(options.Worker, os.Args[2:], runVersions)
			return
		}
	}
	daemon.Main(options.Worker, run)
}

// capabilityCheckPeriod is how often the worker looks for workflows started on its task queue
// that it does not register.
const capabilityCheckPeriod = 10 * time.Second

func run(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	startedAt := time.Now()
	metrics, err := observability.NewMetrics()
	if err != nil {
		return err
	}
	defer func() { _ = metrics.Shutdown(context.Background()) }()

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
	capabilitySet := capabilities.Of(opts)
	clientOptions.Identity = capabilities.Identity(options.Worker, capabilitySet)
	temporal, err := client.NewLazyClient(clientOptions)
	if err != nil {
		return fmt.Errorf("creating Temporal client for %s: %w", opts.TemporalAddress, err)
	}
	defer temporal.Close()

	var polling atomic.Bool
	server := observability.NewServer(opts.MetricsBindAddress, metrics.Registry, logger)
	target := temporalcheck.Target{Client: temporal, Address: opts.TemporalAddress, Namespace: opts.TemporalNamespace,
		TLS: clientOptions.ConnectionOptions.TLS}
	server.AddReadinessCheck("temporal", target.Ready)
	server.AddReadinessCheck("worker", func(context.Context) error {
		if !polling.Load() {
			return errors.New("not polling the task queue")
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
		taskQueue := opts.TaskQueue
		if opts.Cluster != "" {
			taskQueue = naming.PullTaskQueue(opts.TaskQueue, opts.Cluster)
		}
		fatal := make(chan error, 1)
		w := worker.New(temporal, taskQueue, worker.Options{
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
		mismatch := make(chan error, 1)
		if opts.Cluster != "" {
			registerAgent(w, deps)
			go func() {
				if err := watchMemberSlices(ctx, deps, temporal, logger); err != nil {
					mismatch <- fmt.Errorf("watching the EndpointSlices of cluster %s: %w", opts.Cluster, err)
				}
			}()
		} else if err := register(ctx, w, deps); err != nil {
			return fmt.Errorf("registering workflows and activities: %w", err)
		}
		if err := w.Start(); err != nil {
			return fmt.Errorf("starting worker on task queue %s: %w", taskQueue, err)
		}
		polling.Store(true)
		logger.Info("worker polling", zap.String("taskQueue", taskQueue),
			zap.String("namespace", opts.TemporalNamespace), zap.String("temporal", opts.TemporalAddress),
			zap.Stringer("capabilities", capabilitySet), zap.String("agentOf", opts.Cluster))
		// Workflows this worker does not register, started after it started: a starter with
		// other capabilities shares its task queue. An agent's queue has no workflows.
		go func() {
			if opts.Cluster != "" {
				return
			}
			err := capabilities.Watch(ctx, capabilityCheckPeriod, logger, func(ctx context.Context) error {
				return capabilities.CheckStarted(ctx, temporal, opts.TemporalNamespace, opts.TaskQueue, startedAt, capabilitySet,
					capabilityWorkflows)
			})
			if err != nil {
				mismatch <- err
			}
		}()

		select {
		case <-ctx.Done():
			logger.Info("stopping worker, waiting for running activities", zap.Duration("timeout", opts.ShutdownTimeout))
			polling.Store(false)
			w.Stop()
			return nil
		case err := <-fatal:
			polling.Store(false)
			w.Stop()
			return fmt.Errorf("worker on task queue %s: %w", opts.TaskQueue, err)
		case err := <-mismatch:
			polling.Store(false)
			w.Stop()
			return err
		}
	})
	return group.Wait()
}
