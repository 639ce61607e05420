package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// The members' EndpointSlice watches: one per member cluster, each slice change a signal to the
// MultiClusterService of its Service.

// memberSlices runs one EndpointSlice watch per member cluster, started and stopped as
// Clusters join and leave, and restarted when a Cluster's endpoint or credentials change. The
// watches run on every replica, a standby's too, so that a new leader's informers are synced
// when it takes over and its first signal needs no list of every member; a watch's trigger
// queues keys from the start but handles them only while this replica leads.
type memberSlices struct {
	deps     dependencies
	registry *members.Registry
	// connect returns the client a watch lists and watches with: the registry's (a fake in tests).
	connect func(ctx context.Context, cluster string) (kubernetes.Interface, error)
	signal  func(ctx context.Context, cluster, key string) error

	mu      sync.Mutex
	running map[string]*memberWatch
}

type memberWatch struct {
	version string // the Cluster's generation and Ready status the watch was started for
	cancel  context.CancelFunc
}

// newMemberSlices returns the watches' keeper; each slice change of a member is signal(cluster,
// key of the Service's MultiClusterService).
func newMemberSlices(deps dependencies, signal func(ctx context.Context, cluster, key string) error) *memberSlices {
	registry := members.NewRegistry(deps.ControlPlane.Dynamic, deps.ControlPlane.Kube)
	return &memberSlices{deps: deps, registry: registry, signal: signal, running: map[string]*memberWatch{},
		connect: func(ctx context.Context, cluster string) (kubernetes.Interface, error) {
			member, err := registry.Get(ctx, cluster)
			if err != nil {
				return nil, err
			}
			return member.Watching, nil
		}}
}

// newMemberInformersSynced registers karmadaflow_starter_member_informers_synced.
func newMemberInformersSynced(registerer prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "karmadaflow_starter_member_informers_synced",
		Help: "Member clusters whose EndpointSlice informer has synced on this starter, a standby too.",
	})
	return g, registerer.Register(g)
}

// ensure runs the watch of cluster until ctx ends, unless it is a Pull cluster: the control
// plane does not dial one, and its agent watches the slices inside it (worker --cluster).
func (s *memberSlices) ensure(ctx context.Context, cluster string, obj *unstructured.Unstructured) {
	if members.IsPullCluster(obj) {
		s.stop(cluster)
		return
	}
	// A new generation may move the endpoint or credentials; a Ready flip means the member
	// came back, and a fresh watch beats the reflector's backoff after a long outage.
	version := fmt.Sprintf("%d/%s", obj.GetGeneration(), readyStatus(obj))
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.running[cluster]; ok {
		if w.version == version {
			return
		}
		w.cancel()
	}
	s.registry.Forget(cluster)
	watchCtx, cancel := context.WithCancel(ctx)
	s.running[cluster] = &memberWatch{version: version, cancel: cancel}
	go s.run(watchCtx, cluster)
}

func (s *memberSlices) stop(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.running[cluster]; ok {
		w.cancel()
		delete(s.running, cluster)
	}
}

// run watches the member's EndpointSlices until ctx ends, retrying the connection setup, and
// handles the trigger's keys once this replica leads. A watch also ends with the leadership: a
// replica that lost the Lease exits.
func (s *memberSlices) run(ctx context.Context, cluster string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := s.deps.Logger.With(zap.String("cluster", cluster))
	var client kubernetes.Interface
	for {
		var err error
		if client, err = s.connect(ctx, cluster); err == nil {
			break
		}
		logger.Warn("cannot connect to member cluster; retrying", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = mcsactivities.CollectableSelector }),
		informers.WithTransform(transformEndpointSlice))
	informer := factory.Discovery().V1().EndpointSlices().Informer()
	cfg := s.deps.triggerConfig("endpointslices-"+cluster, informer, func(ctx context.Context, key string) error {
		return s.signal(ctx, cluster, key)
	})
	cfg.Key = trigger.EndpointSliceServiceKey
	cfg.Relevant = trigger.GenerationOrMetadata(nil, nil)
	cfg.MetricsProvider = nil // one queue per member; not registered twice when a member rejoins
	t, err := trigger.New(cfg)
	if err != nil {
		logger.Error("cannot watch EndpointSlices", zap.Error(err))
		return
	}
	defer t.ShutDown()
	factory.Start(ctx.Done())
	defer factory.Shutdown() // does not block: every return below is after ctx ended
	logger.Info("watching EndpointSlices")
	if !cache.WaitForCacheSync(ctx.Done(), t.HasSynced) {
		return
	}
	logger.Info("EndpointSlices synced")
	s.deps.memberInformersSynced.Inc()
	defer s.deps.memberInformersSynced.Dec()

	leading, ok := s.deps.leadership.wait(ctx)
	if !ok {
		return
	}
	stop := context.AfterFunc(leading, cancel)
	defer stop()
	t.Run(ctx)
}
