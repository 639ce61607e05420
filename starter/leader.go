package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/karmadaflow/karmadaflow/internal/options"
)

// podNamespaceFile holds the namespace of the pod a process runs in.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// newLeaderGauge registers karmadaflow_starter_leader: 1 while this replica leads.
func newLeaderGauge(registerer prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "karmadaflow_starter_leader",
		Help: "1 while this starter leads (signals and starts workflows), 0 while it stands by.",
	})
	return g, registerer.Register(g)
}

// leadership tells what runs on every replica, such as the members' EndpointSlice watches,
// when this replica leads: until then it must signal nothing.
type leadership struct {
	led chan struct{}   // closed when this replica starts to lead
	ctx context.Context // the leadership's, set before led is closed
}

func newLeadership() *leadership { return &leadership{led: make(chan struct{})} }

// lead records that this replica leads until ctx ends. It is called once: a replica that loses
// the Lease exits rather than stand by again.
func (l *leadership) lead(ctx context.Context) {
	l.ctx = ctx
	close(l.led)
}

// wait returns the leadership's context once this replica leads, or false once ctx ends.
func (l *leadership) wait(ctx context.Context) (context.Context, bool) {
	select {
	case <-l.led:
		return l.ctx, true
	case <-ctx.Done():
		return nil, false
	}
}

// runLeading runs lead while this replica holds the starter's Lease in the host cluster, and
// returns once ctx ends (releasing the Lease, so that a standby takes over at once) or the
// Lease is lost. A replica that lost it returns an error and exits, to be restarted as a
// standby, rather than risk signalling beside the new leader.
func runLeading(ctx context.Context, cfg options.LeaderElection, host kubernetes.Interface, leader prometheus.Gauge, logger *zap.Logger, lead func(context.Context)) error {
	namespace := cfg.ResourceNamespace
	if namespace == "" {
		data, err := os.ReadFile(podNamespaceFile)
		if err != nil {
			return fmt.Errorf("--leader-elect-resource-namespace is empty and the pod's namespace is unknown: %w", err)
		}
		namespace = strings.TrimSpace(string(data))
	}
	hostname, err := os.Hostname()
	if err != nil {
		return err
	}
	identity := hostname + "_" + string(uuid.NewUUID())
	logger = logger.With(zap.String("lease", namespace+"/"+cfg.ResourceName), zap.String("identity", identity))

	var led atomic.Bool
	done := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: cfg.ResourceName},
			Client:     host.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer close(done)
				led.Store(true)
				leader.Set(1)
				logger.Info("leading: signalling and starting workflows")
				lead(ctx)
			},
			OnStoppedLeading: func() { leader.Set(0) },
			OnNewLeader: func(current string) {
				if current != identity {
					logger.Info("standing by", zap.String("leader", current))
				}
			},
		},
	})
	if err != nil {
		return err
	}
	logger.Info("waiting for the Lease")
	elector.Run(ctx)
	if led.Load() {
		<-done // the triggers and the ensure loop have stopped
	}
	if ctx.Err() == nil {
		return errors.New("lost the starter's Lease")
	}
	return nil
}
