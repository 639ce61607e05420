package main

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// The MultiClusterService triggers: events of the control plane and the members turned into
// signals to the capability's workflows.

// mcsTriggers turns MultiClusterService, Service, Cluster and Work events of the control plane,
// and EndpointSlice events of every member, into signals to the workflows of the
// MultiClusterService capability (and of Work execution and cluster health when enabled).
type mcsTriggers struct {
	deps          dependencies
	mcs           cache.SharedIndexInformer
	clusters      cache.SharedIndexInformer
	worksInformer cache.SharedIndexInformer
	slices        *memberSlices
	works         *workBatches
	// memberWatches keeps the members' EndpointSlice watches, on every replica; it signals
	// nothing.
	memberWatches *trigger.Trigger
	// clusterFanout paces the signals a Cluster change sends to the MultiClusterServices that
	// involve it (--cluster-change-signals-per-second).
	clusterFanout flowcontrol.RateLimiter
}

// appliedCoalesce is how long the Applied changes of one MultiClusterService's Works are
// gathered before they are compared with its condition.
const appliedCoalesce = time.Second

func newMCSTriggers(deps dependencies) (*mcsTriggers, []*trigger.Trigger, error) {
	fanout := deps.Options.ClusterChangeSignalsPerSecond
	m := &mcsTriggers{
		works:         newWorkBatches(),
		deps:          deps,
		clusterFanout: flowcontrol.NewTokenBucketRateLimiter(float32(fanout), max(1, int(fanout))),
		mcs:           deps.ControlPlaneDynamic.ForResource(kube.MultiClusterServices).Informer(),
		clusters:      deps.ControlPlaneDynamic.ForResource(kube.Clusters).Informer(),
	}
	m.slices = newMemberSlices(deps, m.signalSlices)
	services := deps.ControlPlaneKube.Core().V1().Services().Informer()
	works := deps.ControlPlaneWorks.ForResource(kube.Works).Informer()
	if err := works.AddIndexers(cache.Indexers{worksByMCS: indexWorksByMCS}); err != nil {
		return nil, nil, err
	}
	// The stores keep only what the triggers read (transform.go).
	if err := setTransforms(map[cache.SharedIndexInformer]cache.TransformFunc{
		m.mcs: transformMCS, m.clusters: transformCluster, services: transformService, works: transformWork,
	}); err != nil {
		return nil, nil, err
	}
	m.worksInformer = works

	// The dispatched Works of one MultiClusterService turn Applied one after another: they are
	// compared with its EndpointSliceApplied condition once for the lot, and again when the
	// condition changes. Only the condition waits for it, not the slices.
	applied := m.config("works-applied", works, dispatchedWorkKey, appliedChanged, m.onAppliedCheck)
	applied.Coalesce = appliedCoalesce
	appliedCondition := m.config("multiclusterservices-applied", m.mcs, nil, appliedReasonChanged, m.onAppliedCheck)
	appliedCondition.Coalesce = appliedCoalesce
	// Beside Karmada, a Pull provider's karmada-agent collects its slices into Works: each
	// change is the provider's slice change.
	agentCollected := deps.AgentCollectedWorks.ForResource(kube.Works).Informer()
	if err := agentCollected.SetTransform(transformWork); err != nil {
		return nil, nil, err
	}
	configs := []trigger.Config{
		m.config("multiclusterservices", m.mcs, nil, trigger.GenerationOrMetadata(nil, nil), m.onMCS),
		m.config("works-collected-by-karmada-agent", agentCollected, agentCollectedKey, trigger.GenerationOrMetadata(nil, nil), m.onAgentCollected),
		m.config("services", services, nil, serviceChanged, m.onService),
		m.config("clusters", m.clusters, nil, clusterChanged, m.onCluster),
		applied, appliedCondition,
	}
	if deps.Options.EnableWorkExecution {
		execution := m.config("works-execution", works, m.works.key, trigger.GenerationOrMetadata(nil, nil), m.onWork)
		execution.HoldAfter = m.works.holdAfter
		// The Works the worker applies as it writes them reach execution only if still not
		// applied after a grace.
		written := m.config("works-written", works, writtenWorkKey, trigger.GenerationOrMetadata(nil, nil), m.onWrittenWork)
		written.Coalesce = executedGrace
		configs = append(configs, execution, written)
	}
	var err error
	if m.memberWatches, err = trigger.New(m.config("member-watches", m.clusters, nil, clusterChanged, m.onMemberWatch)); err != nil {
		return nil, nil, err
	}
	var out []*trigger.Trigger
	for _, cfg := range configs {
		t, err := trigger.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, t)
	}
	return m, out, nil
}

func (m *mcsTriggers) config(name string, informer cache.SharedIndexInformer, key trigger.KeyFunc, relevant trigger.RelevantFunc, handle trigger.HandlerFunc) trigger.Config {
	cfg := m.deps.triggerConfig(name, informer, handle)
	cfg.Key, cfg.Relevant = key, relevant
	return cfg
}

// onMCS starts or signals the workflow of a MultiClusterService. A MultiClusterService that is
// gone only gets a signal: its workflow, if still running, finishes the cleanup.
func (m *mcsTriggers) onMCS(ctx context.Context, key string) error {
	namespace, name, err := trigger.SplitKey(key)
	if err != nil {
		return err
	}
	change := mcs.Change{Kind: mcs.ChangeSpec, DetectedAt: time.Now()}
	if _, exists, _ := m.mcs.GetStore().GetByKey(key); !exists {
		return m.signal(ctx, m.deps.workflowID(mcs.WorkflowID(namespace, name)), change)
	}
	return m.signalMCS(ctx, namespace, name, change)
}

// onService signals the MultiClusterService of the same name, if there is one.
func (m *mcsTriggers) onService(ctx context.Context, key string) error {
	namespace, name, err := trigger.SplitKey(key)
	if err != nil {
		return err
	}
	if _, exists, _ := m.mcs.GetStore().GetByKey(key); !exists {
		return nil
	}
	return m.signalMCS(ctx, namespace, name, mcs.Change{Kind: mcs.ChangeSpec, DetectedAt: time.Now()})
}

// onMemberWatch keeps the member's EndpointSlice watch running while its Cluster exists. It
// runs on every replica, a standby's too, and signals nothing.
func (m *mcsTriggers) onMemberWatch(ctx context.Context, name string) error {
	obj, exists, _ := m.clusters.GetStore().GetByKey(name)
	if !exists {
		m.slices.stop(name)
		return nil
	}
	m.slices.ensure(ctx, name, obj.(*unstructured.Unstructured))
	return nil
}

// onCluster keeps the member's health and execution workflows, and tells the
// MultiClusterServices that involve the cluster that it joined, left or changed health. A
// Cluster that is gone has its workflows woken, if they still run: each finds it gone and ends
// (execution after releasing the Works left in its namespace).
func (m *mcsTriggers) onCluster(ctx context.Context, name string) error {
	if _, exists, _ := m.clusters.GetStore().GetByKey(name); !exists {
		if err := m.wakeClusterWorkflows(ctx, name); err != nil {
			return err
		}
	} else if err := m.startClusterWorkflows(ctx, name); err != nil {
		return err
	}
	for _, obj := range m.mcs.GetStore().List() {
		u := obj.(*unstructured.Unstructured)
		if !involves(u, name) {
			continue
		}
		if err := m.clusterFanout.Wait(ctx); err != nil {
			return err
		}
		// The MultiClusterService exists: a plain signal reaches its running workflow (half
		// of a SignalWithStart's cost to Temporal), and one that is missing is started and
		// counted, as for a slice change.
		change := mcs.Change{Kind: mcs.ChangeClusters, Cluster: name, State: m.clusterState(name), DetectedAt: time.Now()}
		if err := m.deps.signalOrStart(ctx, kindMCS, m.mcsStart(u.GetNamespace(), u.GetName(), change)); err != nil {
			return err
		}
	}
	return nil
}

// clusterState is the cluster's state as the store holds it now, which a change carries so
// that a change of its health alone costs a workflow no reads; nil when the Cluster is gone or
// ignored. It is read for each signal, not once per fan-out: a workflow signalled after the
// cluster flipped back gets the state it is back in, and has nothing to do, as it would if
// it read the Clusters itself. This handler runs for one cluster at a time, so a workflow gets
// a cluster's states in the order the store held them.
func (m *mcsTriggers) clusterState(name string) *mcsactivities.ClusterState {
	obj, exists, _ := m.clusters.GetStore().GetByKey(name)
	if !exists {
		return nil
	}
	state, ok := mcsactivities.ClusterStateOf(obj.(*unstructured.Unstructured))
	if !ok {
		return nil
	}
	return &state
}

// involves tells whether the MultiClusterService names cluster as a provider or consumer, or
// takes every cluster; one that cannot be read is told anyway.
func involves(obj *unstructured.Unstructured, cluster string) bool {
	var m networkingv1alpha1.MultiClusterService
	if err := kube.FromUnstructured(obj, &m); err != nil {
		return true
	}
	return m.Spec.Involves(cluster)
}

// wakeClusterWorkflows sends their resync to the running workflows of a cluster, and starts none.
func (m *mcsTriggers) wakeClusterWorkflows(ctx context.Context, cluster string) error {
	for _, start := range m.clusterStarts(cluster) {
		if err := trigger.SignalIfRunning(ctx, m.deps.Temporal, start.WorkflowID, start.Signal, start.SignalArg); err != nil {
			return err
		}
	}
	return nil
}

func (m *mcsTriggers) startClusterWorkflows(ctx context.Context, cluster string) error {
	for _, start := range m.clusterStarts(cluster) {
		if err := m.deps.signalWithStart(ctx, start); err != nil {
			return err
		}
	}
	return nil
}

// clusterStarts are the starts of a member cluster's workflows that are enabled: health
// probing and Work execution, each with its resync signal.
func (m *mcsTriggers) clusterStarts(cluster string) []trigger.Start {
	var starts []trigger.Start
	if m.deps.Options.EnableClusterHealth {
		starts = append(starts, m.clusterHealthStart(cluster))
	}
	if m.deps.Options.EnableWorkExecution {
		starts = append(starts, m.executionStart(cluster, execution.SignalResync, nil))
	}
	return starts
}

func (m *mcsTriggers) clusterHealthStart(cluster string) trigger.Start {
	return trigger.Start{
		WorkflowID: m.deps.workflowID(clusterhealth.WorkflowID(cluster)), Workflow: clusterhealth.WorkflowName,
		Args: []any{clusterhealth.Input{Cluster: cluster, Interval: m.deps.Options.ClusterProbeInterval,
			FailureThreshold: m.deps.Options.ClusterFailureThreshold}},
		TaskQueue:           m.deps.taskQueue(naming.CapabilityCluster),
		WorkflowTaskTimeout: m.deps.Options.WorkflowTaskTimeout,
		SearchAttributes:    searchattr.ForCluster(kindClusterHealth, cluster),
		Signal:              clusterhealth.SignalResync,
	}
}

func (m *mcsTriggers) executionStart(cluster, signal string, arg any) trigger.Start {
	return trigger.Start{
		WorkflowID: m.deps.workflowID(execution.WorkflowID(cluster)), Workflow: execution.WorkflowName,
		Args:                []any{execution.Input{Cluster: cluster}},
		TaskQueue:           m.deps.taskQueue(naming.CapabilityCluster),
		WorkflowTaskTimeout: m.deps.Options.WorkflowTaskTimeout,
		SearchAttributes:    searchattr.ForCluster(kindWorkExecution, cluster),
		Signal:              signal, SignalArg: arg,
	}
}

// onWork hands the Works of karmada-es-<cluster> that changed to that cluster's execution
// workflow, in signals of at most execution.MaxSignalWorks Works each; if one cannot be sent,
// its Works and those not sent yet wait for the retry. The Works of a Cluster that is gone are
// nobody's to apply: its workflow, if still running, is ending, and none is started for it. (A
// Cluster that the store does not hold yet gets its workflow, with a full pass, from its own
// event.)
func (m *mcsTriggers) onWork(ctx context.Context, cluster string) error {
	return m.works.send(cluster, func(names []string, versions map[string]string) error {
		if _, exists, _ := m.clusters.GetStore().GetByKey(cluster); !exists {
			return nil
		}
		return m.deps.signalOrStart(ctx, kindWorkExecution,
			m.executionStart(cluster, execution.SignalChange, execution.Change{Works: names, Versions: versions}))
	})
}

// onAgentCollected tells a MultiClusterService that karmada-agent collected a change of its
// slices in a Pull provider (key: agentCollectedKey).
func (m *mcsTriggers) onAgentCollected(ctx context.Context, key string) error {
	cluster, mcsKey, ok := strings.Cut(key, "|")
	if !ok {
		return nil
	}
	return m.signalSlices(ctx, cluster, mcsKey)
}

// signalSlices tells the MultiClusterService of a Service that its slices changed in cluster.
func (m *mcsTriggers) signalSlices(ctx context.Context, cluster, key string) error {
	if _, exists, _ := m.mcs.GetStore().GetByKey(key); !exists {
		return nil
	}
	namespace, name, err := trigger.SplitKey(key)
	if err != nil {
		return err
	}
	return m.deps.signalOrStart(ctx, kindMCS, m.mcsStart(namespace, name, mcs.Change{Kind: mcs.ChangeEndpointSlices, Cluster: cluster, DetectedAt: time.Now()}))
}

func (m *mcsTriggers) signalMCS(ctx context.Context, namespace, name string, change mcs.Change) error {
	return m.deps.signalWithStart(ctx, m.mcsStart(namespace, name, change))
}

func (m *mcsTriggers) mcsStart(namespace, name string, change mcs.Change) trigger.Start {
	return trigger.Start{
		WorkflowID: m.deps.workflowID(mcs.WorkflowID(namespace, name)), Workflow: mcs.WorkflowName,
		Args:                []any{mcs.Input{Namespace: namespace, Name: name}},
		TaskQueue:           m.deps.taskQueue(naming.CapabilityMCS),
		WorkflowTaskTimeout: m.deps.Options.WorkflowTaskTimeout,
		SearchAttributes:    searchattr.ForObject(kindMCS, namespace, name),
		Signal:              mcs.SignalChange, SignalArg: change,
	}
}

// signal sends a change to the workflow of a MultiClusterService that is gone: a workflow still
// running finishes the cleanup; one that is not running has nothing left to do (an object
// being deleted is still in the store, and gets SignalWithStart).
func (m *mcsTriggers) signal(ctx context.Context, workflowID string, change mcs.Change) error {
	return trigger.SignalIfRunning(ctx, m.deps.Temporal, workflowID, mcs.SignalChange, change)
}
