package main

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"

	executionactivities "github.com/karmadaflow/karmadaflow/activities/execution"
	"github.com/karmadaflow/karmadaflow/activities/health"
	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// The agent of a Pull cluster (worker --cluster): run inside the member, it polls the
// cluster's own task queue for the activities the control plane must not do itself, since it
// cannot dial the member, and tells the MultiClusterServices when the member's EndpointSlices
// change. Every connection it makes is outbound: to Temporal and to the control plane.

// registerAgent adds the activities a Pull cluster's agent runs, under the names the workflows
// schedule them by, each with clients of the member the agent runs in.
func registerAgent(w worker.ActivityRegistry, deps dependencies) {
	cluster := deps.Options.Cluster
	execution := &executionactivities.Activities{ControlPlane: deps.ControlPlane.Dynamic, Members: deps.Members, Parallelism: 16,
		Metrics: executionactivities.NewMetrics(deps.Metrics), Agent: true,
		Written: executionactivities.NewWrittenVersions(executionactivities.WrittenVersionsKept)}
	probe := &health.Activities{ControlPlane: deps.ControlPlane.Dynamic, Members: deps.Members, Agent: true}
	collect := &mcsactivities.Activities{ControlPlane: deps.ControlPlane.Dynamic, Core: deps.ControlPlane.Kube, Members: deps.Members,
		Metrics: mcsactivities.NewMetrics(deps.Metrics), WorkNamespace: naming.ExecutionNamespace(cluster)}
	w.RegisterActivityWithOptions(execution.ApplyWorks, activity.RegisterOptions{Name: "ApplyWorks"})
	w.RegisterActivityWithOptions(probe.ProbeCluster, activity.RegisterOptions{Name: "ProbeCluster"})
	w.RegisterActivityWithOptions(collect.CollectEndpointSlices, activity.RegisterOptions{Name: "CollectEndpointSlices"})
}

// watchMemberSlices signals the workflow of each MultiClusterService whose Service's slices
// change in the member, until ctx is done. Only MultiClusterServices that exist are told: the
// starter starts the workflows, and a new one collects everything at its first reconcile.
func watchMemberSlices(ctx context.Context, deps dependencies, temporal client.Client, logger *zap.Logger) error {
	cluster := deps.Options.Cluster
	member, err := deps.Members.Get(ctx, cluster)
	if err != nil {
		return err
	}
	sliceInformers := informers.NewSharedInformerFactoryWithOptions(member.Watching, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = mcsactivities.CollectableSelector }))
	slices := sliceInformers.Discovery().V1().EndpointSlices().Informer()
	mcsInformers := dynamicinformer.NewDynamicSharedInformerFactory(deps.ControlPlane.Dynamic, 0)
	services := mcsInformers.ForResource(kube.MultiClusterServices).Informer()

	t, err := trigger.New(trigger.Config{
		Name:     "agent-endpointslices",
		Informer: slices,
		Key:      trigger.EndpointSliceServiceKey,
		Relevant: trigger.GenerationOrMetadata(nil, nil),
		Logger:   logger,
		Handle: func(ctx context.Context, key string) error {
			if _, exists, _ := services.GetStore().GetByKey(key); !exists {
				return nil
			}
			namespace, name, err := trigger.SplitKey(key)
			if err != nil {
				return err
			}
			change := mcs.Change{Kind: mcs.ChangeEndpointSlices, Cluster: cluster, DetectedAt: time.Now()}
			return trigger.SignalIfRunning(ctx, temporal, deps.Options.WorkflowIDPrefix+mcs.WorkflowID(namespace, name), mcs.SignalChange, change)
		},
	})
	if err != nil {
		return err
	}
	mcsInformers.Start(ctx.Done())
	sliceInformers.Start(ctx.Done())
	logger.Info("watching the member's EndpointSlices", zap.String("cluster", cluster))
	t.Run(ctx)
	sliceInformers.Shutdown()
	mcsInformers.Shutdown()
	return nil
}
