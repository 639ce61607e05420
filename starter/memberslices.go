package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/starter/trigger"
)

// The members' EndpointSlice watches: one per member cluster, each slice change a signal to the
// MultiClusterService of its Service.

// memberSlices runs one EndpointSlice watch per member cluster, started and stopped as
// Clusters join and leave, and restarted when a Cluster's endpoint or credentials change.
type memberSlices struct {
	deps     dependencies
	registry *members.Registry
	signal   func(ctx context.Context, cluster, key string) error

	mu      sync.Mutex
	running map[string]*memberWatch
}

type memberWatch struct {
	version string // the Cluster's generation and Ready status the watch was started for
	cancel  context.CancelFunc
}

// sliceSelector selects the slices that can be collected: those of a Service, not dispatched.
var sliceSelector = networkingv1alpha1.LabelServiceName + "," +
	networkingv1alpha1.LabelEndpointSliceManagedBy + "!=" + networkingv1alpha1.ManagedByEndpointSliceDispatch

// ensure runs the watch of cluster, unless it is a Pull cluster: the control plane does not
// dial one, and its agent watches the slices inside it (worker --cluster).
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
	watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
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

// run watches the member's EndpointSlices until ctx ends, retrying the connection setup.
func (s *memberSlices) run(ctx context.Context, cluster string) {
	logger := s.deps.Logger.With(zap.String("cluster", cluster))
	var client kubernetes.Interface
	for client == nil {
		member, err := s.registry.Get(ctx, cluster)
		if err == nil {
			client = member.Watching
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
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sliceSelector }),
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
	factory.Start(ctx.Done())
	logger.Info("watching EndpointSlices")
	t.Run(ctx)
	factory.Shutdown()
}
