package main

import (
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// dependencies are what triggers are built from. Ask the factories for informers in
// newTriggers: they are started after it returns.
type dependencies struct {
	Options  *options.Options
	Logger   *zap.Logger
	Temporal client.Client

	ControlPlane *options.Clients // the Karmada API server
	Host         *options.Clients // the cluster karmadaflow runs in

	ControlPlaneKube    informers.SharedInformerFactory              // Services, EndpointSlices, ...
	ControlPlaneDynamic dynamicinformer.DynamicSharedInformerFactory // MultiClusterServices, Works, Clusters
	HostDynamic         dynamicinformer.DynamicSharedInformerFactory // Karmadas

	queueMetrics workqueue.MetricsProvider
}

// triggerConfig is a trigger.Config with the process-wide settings filled in: workers per
// trigger, work-queue metrics and logger.
func (d dependencies) triggerConfig(name string, informer cache.SharedInformer, handle trigger.HandlerFunc) trigger.Config {
	return trigger.Config{
		Name:            name,
		Informer:        informer,
		Handle:          handle,
		Workers:         d.Options.TriggerWorkers,
		MetricsProvider: d.queueMetrics,
		Logger:          d.Logger,
	}
}

// newTriggers returns the trigger of every watched resource, capability by capability.
func newTriggers(deps dependencies) ([]*trigger.Trigger, error) {
	// MultiClusterService: MultiClusterServices, Services, Clusters and Works of the control
	// plane, and EndpointSlices of every member.
	triggers, err := newMCSTriggers(deps)
	if err != nil || !deps.Options.EnableProvisioning {
		return triggers, err
	}
	// Karmada provisioning: Karmadas of the host cluster.
	karmadas, err := newKarmadaTrigger(deps)
	if err != nil {
		return nil, err
	}
	return append(triggers, karmadas), nil
}
