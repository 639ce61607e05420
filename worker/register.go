package main

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	executionactivities "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/activities/health"
	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	provisioningactivities "github.com/karmadaflow/karmadaflow/activities/provisioning"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/internal/workcache"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
	"github.com/karmadaflow/karmadaflow/workflows/workflowtask"
)

// dependencies are what activities receive at construction: clients, logger, metrics.
type dependencies struct {
	Options *options.Options
	Logger  *zap.Logger
	// Metrics is where capabilities register their own Prometheus metrics.
	Metrics prometheus.Registerer
	// ControlPlane is the Karmada API server (MultiClusterServices, Works, Clusters, ...).
	ControlPlane *options.Clients
	// Host is the cluster karmadaflow and the Karmada instances it provisions run in.
	Host *options.Clients
	// Members hands out the clients of member clusters, shared by every capability.
	Members *members.Registry
}

func newDependencies(opts *options.Options, logger *zap.Logger, metrics *observability.Metrics) (dependencies, error) {
	controlPlane, err := opts.KarmadaClients()
	if err != nil {
		return dependencies{}, fmt.Errorf("clients of the Karmada control plane: %w", err)
	}
	host, err := opts.HostClients()
	if err != nil {
		return dependencies{}, fmt.Errorf("clients of the host cluster: %w", err)
	}
	registry := members.NewRegistry(controlPlane.Dynamic, controlPlane.Kube)
	if opts.Cluster != "" { // the agent of a Pull cluster: the host cluster is the member
		if registry, err = members.NewOwnRegistry(opts.Cluster, host.Config); err != nil {
			return dependencies{}, fmt.Errorf("clients of member cluster %s: %w", opts.Cluster, err)
		}
	}
	return dependencies{Options: opts, Logger: logger, Metrics: metrics.Registry, ControlPlane: controlPlane, Host: host,
		Members: registry}, nil
}

// workflowCapabilities is the capability of each workflow type: the task queue it runs on.
var workflowCapabilities = map[string]string{
	mcs.WorkflowName:           naming.CapabilityMCS,
	execution.WorkflowName:     naming.CapabilityCluster,
	clusterhealth.WorkflowName: naming.CapabilityCluster,
	provisioning.WorkflowName:  naming.CapabilityProvisioning,
}

// registrations returns what the worker registers for each capability it runs (on that
// capability's task queue, and on the base one); the caches they read are kept until ctx is
// done. Runs of every type continue as new on their capability's queue.
func registrations(ctx context.Context, deps dependencies) (map[string]func(worker.Registry), error) {
	opts := deps.Options
	registry := deps.Members
	workflowtask.SetContinuedRunTimeout(opts.WorkflowTaskTimeout)
	queues := map[string]string{}
	for workflowType, capability := range workflowCapabilities {
		queues[workflowType] = naming.CapabilityTaskQueue(opts.TaskQueue, capability)
	}
	workflowtask.SetContinuedRunQueues(queues)

	// MultiClusterService: workflows/mcs + activities/mcs, reading Works from a cache that
	// holds every Work when Work execution reads it too.
	scope := workcache.MultiClusterServiceWorks
	if opts.EnableWorkExecution {
		scope = workcache.AllWorks
	}
	works := workcache.New(deps.ControlPlane.Dynamic, scope)
	go works.Run(ctx)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: deps.ControlPlane.Kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("recording Events to the control plane: %w", err)
	}
	context.AfterFunc(ctx, broadcaster.Shutdown)
	mcsActivities := &mcsactivities.Activities{
		WorkCache:      works,
		ControlPlane:   deps.ControlPlane.Dynamic,
		Core:           deps.ControlPlane.Kube,
		Members:        registry,
		UnhealthyGrace: opts.ClusterUnhealthyGrace,
		Metrics:        mcsactivities.NewMetrics(deps.Metrics),
		Events:         broadcaster.NewRecorder(scheme.Scheme, "karmadaflow-worker"),
	}
	regs := map[string]func(worker.Registry){}
	// Standalone mode: Work execution and cluster health, each switchable off, on the
	// per-cluster task queue. The Works a MultiClusterService writes are applied by the same
	// applier, at once.
	var cluster []func(worker.Registry)
	if opts.EnableWorkExecution {
		executionActivities := &executionactivities.Activities{
			ControlPlane: deps.ControlPlane.Dynamic, Members: registry, Parallelism: 16, Metrics: executionactivities.NewMetrics(deps.Metrics),
			WorkCache: works, Written: executionactivities.NewWrittenVersions(executionactivities.WrittenVersionsKept),
		}
		cluster = append(cluster, func(w worker.Registry) { execution.Register(w, executionActivities) })
		mcsActivities.Execution = executionActivities
	}
	regs[naming.CapabilityMCS] = func(w worker.Registry) { mcs.Register(w, mcsActivities) }
	if opts.EnableClusterHealth {
		healthActivities := &health.Activities{ControlPlane: deps.ControlPlane.Dynamic, Members: registry, Events: mcsActivities.Events,
			AgentLeaseGrace: opts.PullClusterLeaseGrace}
		cluster = append(cluster, func(w worker.Registry) { clusterhealth.Register(w, healthActivities) })
	}
	if len(cluster) > 0 {
		regs[naming.CapabilityCluster] = func(w worker.Registry) {
			for _, register := range cluster {
				register(w)
			}
		}
	}
	// Karmada provisioning: workflows/provisioning + activities/provisioning, in the host cluster.
	if opts.EnableProvisioning {
		provisioningActivities := &provisioningactivities.Activities{Host: deps.Host.Kube, HostDynamic: deps.Host.Dynamic, Namespaces: opts.ProvisioningNamespaces,
			CRDSource: provisioningactivities.CRDSource{URL: opts.CRDTarballURL, CAFile: opts.CRDTarballCAFile, TokenSecret: opts.CRDTarballTokenSecret,
				AllowedURLPrefixes: opts.CRDTarballAllowedURLPrefixes, AllowedProxyURLs: opts.CRDTarballAllowedProxyURLs},
			HostAccess: provisioningactivities.HostAccess{Namespaces: opts.HostAccessNamespaces}}
		regs[naming.CapabilityProvisioning] = func(w worker.Registry) { provisioning.Register(w, provisioningActivities) }
	}
	return regs, nil
}
