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
	"github.com/karmadaflow/karmadaflow/internal/capabilities"
	"github.com/karmadaflow/karmadaflow/internal/members"
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

// capabilityWorkflows is the workflow type each capability runs: register registers it when
// the capability is on, and capabilities.CheckStarted looks for the others.
var capabilityWorkflows = map[string]string{
	capabilities.MCS:           mcs.WorkflowName,
	capabilities.WorkExecution: execution.WorkflowName,
	capabilities.ClusterHealth: clusterhealth.WorkflowName,
	capabilities.Provisioning:  provisioning.WorkflowName,
}

// register adds every workflow and activity the worker runs, capability by capability; the
// caches they read are kept until ctx is done.
func register(ctx context.Context, w worker.Registry, deps dependencies) error {
	opts := deps.Options
	registry := deps.Members
	workflowtask.SetContinuedRunTimeout(opts.WorkflowTaskTimeout)

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
		return fmt.Errorf("recording Events to the control plane: %w", err)
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
	// Standalone mode: Work execution and cluster health, each switchable off. The Works a
	// MultiClusterService writes are applied by the same applier, at once.
	if opts.EnableWorkExecution {
		executionActivities := &executionactivities.Activities{
			ControlPlane: deps.ControlPlane.Dynamic, Members: registry, Parallelism: 16, Metrics: executionactivities.NewMetrics(deps.Metrics),
			WorkCache: works,
		}
		execution.Register(w, executionActivities)
		mcsActivities.Execution = executionActivities
	}
	mcs.Register(w, mcsActivities)
	if opts.EnableClusterHealth {
		clusterhealth.Register(w, &health.Activities{ControlPlane: deps.ControlPlane.Dynamic, Members: registry, Events: mcsActivities.Events})
	}
	// Karmada provisioning: workflows/provisioning + activities/provisioning, in the host cluster.
	if opts.EnableProvisioning {
		provisioning.Register(w, &provisioningactivities.Activities{Host: deps.Host.Kube, HostDynamic: deps.Host.Dynamic,
			CRDSource: provisioningactivities.CRDSource{URL: opts.CRDTarballURL, CAFile: opts.CRDTarballCAFile, TokenSecret: opts.CRDTarballTokenSecret,
				AllowedURLPrefixes: opts.CRDTarballAllowedURLPrefixes, AllowedProxyURLs: opts.CRDTarballAllowedProxyURLs}})
	}
	return nil
}
