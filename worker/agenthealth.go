package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/activities/health"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
)

// agentHealthReporter keeps the agent's cluster's health in the control plane, every
// interval: it renews its Lease (naming.AgentLease, in the execution namespace), which tells
// the control plane the agent is there, then probes the member's /readyz and writes its
// Cluster's Ready condition, held True through failures for the failure threshold as the
// control plane's own probes are.
type agentHealthReporter struct {
	cluster             string
	leases              coordinationclient.LeaseInterface // of the execution namespace
	probe               *health.Activities
	interval, threshold time.Duration
	logger              *zap.Logger

	renewed      atomic.Int64 // UnixNano of the last renewal
	failingSince time.Time    // when the probes began to fail (zero: the last succeeded)
}

// run renews and probes until ctx is done.
func (r *agentHealthReporter) run(ctx context.Context) {
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		if err := r.renew(ctx); err != nil && ctx.Err() == nil {
			r.logger.Warn("renewing the agent's lease failed", zap.String("cluster", r.cluster), zap.Error(err))
		}
		r.probeOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// renew creates or renews the agent's Lease.
func (r *agentHealthReporter) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	holder, _ := os.Hostname()
	lease, err := r.leases.Get(ctx, naming.AgentLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: naming.AgentLease},
			Spec: coordinationv1.LeaseSpec{AcquireTime: &now}}
	} else if err != nil {
		return fmt.Errorf("reading lease %s of cluster %s: %w", naming.AgentLease, r.cluster, err)
	}
	lease.Spec.HolderIdentity = &holder
	lease.Spec.RenewTime = &now
	// What the agent promises: its renewals come at least this often. The control plane
	// judges with a grace of its own (--pull-cluster-lease-grace).
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(r.interval.Seconds()))
	if lease.ResourceVersion == "" {
		_, err = r.leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: naming.FieldManager})
	} else {
		_, err = r.leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: naming.FieldManager})
	}
	if err != nil {
		return fmt.Errorf("renewing lease %s of cluster %s: %w", naming.AgentLease, r.cluster, err)
	}
	r.renewed.Store(now.UnixNano())
	return nil
}

// probeOnce probes the member and records the result in its Cluster's Ready condition.
func (r *agentHealthReporter) probeOnce(ctx context.Context) {
	now := time.Now()
	res, err := r.probe.ProbeCluster(ctx, health.ProbeInput{Cluster: r.cluster,
		HoldReady: clusterhealth.HoldReady(r.failingSince, now, r.threshold)})
	if err != nil {
		if ctx.Err() == nil {
			r.logger.Warn("recording the health of the member failed", zap.String("cluster", r.cluster), zap.Error(err))
		}
		return
	}
	switch {
	case res.Reachable:
		r.failingSince = time.Time{}
	case r.failingSince.IsZero():
		r.failingSince = now
	}
	if res.Changed {
		r.logger.Info("the member's Ready condition changed", zap.String("cluster", r.cluster), zap.Bool("ready", res.Ready),
			zap.String("message", res.Message))
	}
}

// renewedRecently is the agent's readiness: it renewed its Lease within three intervals.
func (r *agentHealthReporter) renewedRecently(context.Context) error {
	last := r.renewed.Load()
	if last == 0 {
		return fmt.Errorf("the lease %s of cluster %s is not renewed yet", naming.AgentLease, r.cluster)
	}
	if age := time.Since(time.Unix(0, last)); age > 3*r.interval {
		return fmt.Errorf("the lease %s of cluster %s was last renewed %s ago", naming.AgentLease, r.cluster, age.Round(time.Second))
	}
	return nil
}
