package execution

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// Metrics of Work execution, served on /metrics.
type Metrics struct {
	// Propagation is the end-to-end time of a MultiClusterService change: from the starter
	// seeing an EndpointSlice change in a provider to the dispatched slice applied in the
	// consumer.
	Propagation *prometheus.HistogramVec
	Errors      *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Propagation: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcs_propagation_duration_seconds",
			Help:    "Time from detecting an EndpointSlice change in a provider to the dispatched EndpointSlice applied in the consumer.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 17), // 5ms .. ~5.5min
		}, []string{"cluster"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "work_apply_errors_total",
			Help: "Works that failed to apply to a member cluster, by cluster and reason.",
		}, []string{"cluster", "reason"}),
	}
	reg.MustRegister(m.Propagation, m.Errors)
	return m
}

func (m *Metrics) observePropagation(cluster, detectedAt string) {
	if m == nil || detectedAt == "" {
		return
	}
	if t, err := time.Parse(time.RFC3339Nano, detectedAt); err == nil {
		m.Propagation.WithLabelValues(cluster).Observe(time.Since(t).Seconds())
	}
}

func (m *Metrics) countError(cluster string, err error) {
	if m != nil {
		m.Errors.WithLabelValues(cluster, kube.Reason(err)).Inc()
	}
}
