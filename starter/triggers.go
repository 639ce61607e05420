package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/karmadaflow/karmadaflow/internal/capabilities"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/starter/ensure"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// Kinds of workflow, as named in the KarmadaKind search attribute and the started metric.
const (
	kindMCS           = "MultiClusterService"
	kindClusterHealth = "Cluster"
	kindWorkExecution = "WorkExecution"
	kindKarmada       = "Karmada"
)

// dependencies are what triggers are built from. Ask the factories for informers in
// newTriggers: they are started after it returns.
type dependencies struct {
	Options  *options.Options
	Logger   *zap.Logger
	Temporal client.Client

	ControlPlane *options.Clients // the Karmada API server
	Host         *options.Clients // the cluster karmadaflow runs in

	ControlPlaneKube    informers.SharedInformerFactory              // Services
	ControlPlaneDynamic dynamicinformer.DynamicSharedInformerFactory // MultiClusterServices, Clusters
	ControlPlaneWorks   dynamicinformer.DynamicSharedInformerFactory // Works (worksListOptions)
	AgentCollectedWorks dynamicinformer.DynamicSharedInformerFactory // Works karmada-agent collected (agentCollectedSelector)
	HostDynamic         dynamicinformer.DynamicSharedInformerFactory // Karmadas

	queueMetrics          workqueue.MetricsProvider
	started               *prometheus.CounterVec // workflows started because none was running
	pollers               *capabilities.Pollers  // whether a capability's task queue has workers
	memberInformersSynced prometheus.Gauge       // member clusters whose EndpointSlice informer synced
	// leadership tells what runs on every replica when it may signal.
	leadership *leadership
}

// newInformerFactories sets the informer factories from d's options and clients.
func (d *dependencies) newInformerFactories() {
	opts := d.Options
	d.ControlPlaneKube = informers.NewSharedInformerFactory(d.ControlPlane.Kube, opts.ResyncPeriod)
	d.ControlPlaneDynamic = dynamicinformer.NewDynamicSharedInformerFactory(d.ControlPlane.Dynamic, opts.ResyncPeriod)
	d.ControlPlaneWorks = dynamicinformer.NewFilteredDynamicSharedInformerFactory(d.ControlPlane.Dynamic, opts.ResyncPeriod,
		metav1.NamespaceAll, worksListOptions(opts.EnableWorkExecution))
	d.AgentCollectedWorks = dynamicinformer.NewFilteredDynamicSharedInformerFactory(d.ControlPlane.Dynamic, opts.ResyncPeriod,
		metav1.NamespaceAll, func(list *metav1.ListOptions) { list.LabelSelector = agentCollectedSelector })
	// Only the Karmadas --provisioning-selector matches: the others are karmada-operator's,
	// so neither the trigger nor the ensure loop sees them.
	d.HostDynamic = dynamicinformer.NewFilteredDynamicSharedInformerFactory(d.Host.Dynamic, opts.ResyncPeriod, metav1.NamespaceAll,
		func(list *metav1.ListOptions) { list.LabelSelector = opts.ProvisioningSelector })
}

// informerFactory is what the starter does with each of its informer factories.
type informerFactory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// informerFactories are the factories of newInformerFactories, to start and shut down.
func (d dependencies) informerFactories() []informerFactory {
	return []informerFactory{d.ControlPlaneKube, d.ControlPlaneDynamic, d.ControlPlaneWorks, d.AgentCollectedWorks, d.HostDynamic}
}

// workflowID is the ID of the workflow with the readable ID id in this installation: id
// after the --workflow-id-prefix.
func (d dependencies) workflowID(id string) string { return d.Options.WorkflowIDPrefix + id }

// taskQueue is the task queue of capability's workflows.
func (d dependencies) taskQueue(capability string) string {
	return naming.CapabilityTaskQueue(d.Options.TaskQueue, capability)
}

// signalWithStart signals the running workflow of s or starts it with the signal; while no
// worker polls its task queue it only signals a running one, and the ensure loop starts it
// once a worker does.
func (d dependencies) signalWithStart(ctx context.Context, s trigger.Start) error {
	if unpolled, err := d.signalIfUnpolled(ctx, s); unpolled {
		return err
	}
	return trigger.SignalWithStart(ctx, d.Temporal, s)
}

// signalOrStart signals the workflow of an object that exists and starts it if none is
// running, counting such a start; while no worker polls its task queue it only signals, as
// signalWithStart.
func (d dependencies) signalOrStart(ctx context.Context, kind string, s trigger.Start) error {
	if unpolled, err := d.signalIfUnpolled(ctx, s); unpolled {
		return err
	}
	started, err := trigger.SignalOrStart(ctx, d.Temporal, s)
	if started && err == nil {
		ensure.Record(d.started, d.Logger, kind, ensure.ReasonSignal, s.WorkflowID)
	}
	return err
}

// signalIfUnpolled handles s when no worker polls its task queue, or when asking fails
// (unpolled true): it signals a running workflow and starts none.
func (d dependencies) signalIfUnpolled(ctx context.Context, s trigger.Start) (unpolled bool, err error) {
	polled, err := d.pollers.Polled(ctx, s.TaskQueue)
	if err != nil {
		return true, err
	}
	if polled {
		return false, nil
	}
	return true, trigger.SignalIfRunning(ctx, d.Temporal, s.WorkflowID, s.Signal, s.SignalArg)
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

// triggerSet is what newTriggers returns.
type triggerSet struct {
	// leading signal and start workflows: they run on the leader only, a standby's queue keys.
	leading []*trigger.Trigger
	// everyReplica keep the members' EndpointSlice watches (whose own triggers signal only on
	// the leader): they run on every replica and signal nothing.
	everyReplica []*trigger.Trigger
	// kinds are the workflow kinds the leader's ensure loop keeps running.
	kinds []ensure.Kind
}

// newTriggers returns the trigger of every watched resource and the workflow kinds the starter
// keeps running, capability by capability.
func newTriggers(deps dependencies) (triggerSet, error) {
	// MultiClusterService: MultiClusterServices, Services, Clusters and Works of the control
	// plane, and EndpointSlices of every member.
	m, triggers, err := newMCSTriggers(deps)
	if err != nil {
		return triggerSet{}, err
	}
	set := triggerSet{leading: triggers, everyReplica: []*trigger.Trigger{m.memberWatches}, kinds: m.ensureKinds()}
	if !deps.Options.EnableProvisioning {
		return set, nil
	}
	// Karmada provisioning: Karmadas of the host cluster.
	karmadas, err := newKarmadaTrigger(deps)
	if err != nil {
		return triggerSet{}, err
	}
	set.leading = append(set.leading, karmadas)
	set.kinds = append(set.kinds, karmadaKind(deps))
	return set, nil
}
