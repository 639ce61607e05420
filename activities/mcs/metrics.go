package mcs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Metrics are the MultiClusterService metrics of the seed, served on /metrics.
type Metrics struct {
	SyncService       prometheus.Histogram
	SyncEndpointSlice *prometheus.HistogramVec
	Errors            *prometheus.CounterVec
	Withdrawals       *prometheus.CounterVec
	WorkLists         *prometheus.CounterVec
	DroppedSlices     *prometheus.CounterVec
}

// Why a read of a MultiClusterService's Works listed them from the API server rather than
// reading the worker's Work cache (the mcs_work_lists_total label "reason").
const (
	// listMoved: the workflow said another worker, or a run before it, may have written the
	// Works, and the cache cannot vouch for showing those writes.
	listMoved = "moved"
	// listCacheUnanswerable: the cache cannot answer at all (not synced yet).
	listCacheUnanswerable = "cache-unanswerable"
	// listLagging: the read includes Works other processes create, and the cache's watch lags
	// behind this process's own writes.
	listLagging = "lagging"
	// listDeletion: the deletion of every Work of a MultiClusterService that goes.
	listDeletion = "deletion"
)

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := prometheus.ExponentialBuckets(0.005, 2, 17) // 5ms .. ~5.5min: cold starts included
	m := &Metrics{
		SyncService: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mcs_sync_svc_duration_seconds",
			Help:    "Time from detecting a Service or MultiClusterService change to the Service Works being written.",
			Buckets: buckets,
		}),
		SyncEndpointSlice: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcs_sync_eps_duration_seconds",
			Help:    "Time from detecting an EndpointSlice change in a provider to the Work being created or updated in the consumer's namespace.",
			Buckets: buckets,
		}, []string{"cluster"}),
	}
	m.Errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcs_errors_total",
		Help: "Failed MultiClusterService steps, by step and reason (the Kubernetes status reason, Unreachable, or Other).",
	}, []string{"step", "reason"})
	m.Withdrawals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcs_provider_withdrawals_total",
		Help: "Providers whose EndpointSlices were withdrawn from consumers after being not Ready beyond the grace period, by provider cluster.",
	}, []string{"cluster"})
	m.WorkLists = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcs_work_lists_total",
		Help: "Lists of a MultiClusterService's Works from the control plane's API server (a pass over every Work there), by why the worker's Work cache did not answer: moved, cache-unanswerable, lagging or deletion.",
	}, []string{"reason"})
	m.DroppedSlices = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcs_collected_slices_dropped_total",
		Help: "Collected EndpointSlices left out of a dispatch to a consumer, by reason (namespace or service: of another namespace or Service than the MultiClusterService's; undecodable: the Work holds no single EndpointSlice) and provider cluster.",
	}, []string{"reason", "cluster"})
	reg.MustRegister(m.SyncService, m.SyncEndpointSlice, m.Errors, m.Withdrawals, m.WorkLists, m.DroppedSlices)
	return m
}

// count records err, if any, against step and returns it.
func (m *Metrics) count(step string, err error) error {
	if m != nil && err != nil {
		m.Errors.WithLabelValues(step, kube.Reason(err)).Inc()
	}
	return err
}

func (m *Metrics) observeServiceSync(d time.Duration) {
	if m != nil {
		m.SyncService.Observe(d.Seconds())
	}
}

func (m *Metrics) observeSliceSync(consumer string, d time.Duration) {
	if m != nil {
		m.SyncEndpointSlice.WithLabelValues(consumer).Observe(d.Seconds())
	}
}

func (m *Metrics) countWorkList(reason string) {
	if m != nil {
		m.WorkLists.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) countDropped(reason, provider string) {
	if m != nil {
		m.DroppedSlices.WithLabelValues(reason, provider).Inc()
	}
}

func (m *Metrics) countWithdrawal(provider string) {
	if m != nil {
		m.Withdrawals.WithLabelValues(provider).Inc()
	}
}
