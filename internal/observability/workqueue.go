package observability

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// workqueueMetrics exposes client-go work queues under the names controller-runtime uses
// (workqueue_depth, workqueue_adds_total, ...), labelled with the queue's name.
type workqueueMetrics struct {
	depth, unfinished, longestRunning *prometheus.GaugeVec
	adds, retries                     *prometheus.CounterVec
	latency, workDuration             *prometheus.HistogramVec
}

// NewWorkqueueMetrics registers the work-queue metrics into registerer and returns the
// provider to pass to named queues (workqueue.TypedRateLimitingQueueConfig.MetricsProvider).
func NewWorkqueueMetrics(registerer prometheus.Registerer) (workqueue.MetricsProvider, error) {
	const subsystem = "workqueue"
	labels := []string{"name"}
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12) // 10ns .. 1000s
	m := &workqueueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "depth",
			Help: "Current depth of the work queue."}, labels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration."}, labels),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running processor of the queue has been running."}, labels),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: "adds_total",
			Help: "Adds handled by the work queue."}, labels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: "retries_total",
			Help: "Retries handled by the work queue."}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: "queue_duration_seconds",
			Help: "Seconds an item stays in the work queue before being processed.", Buckets: buckets}, labels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: "work_duration_seconds",
			Help: "Seconds processing an item takes.", Buckets: buckets}, labels),
	}
	for _, c := range []prometheus.Collector{m.depth, m.unfinished, m.longestRunning, m.adds, m.retries, m.latency, m.workDuration} {
		if err := registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}

func (m *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}
