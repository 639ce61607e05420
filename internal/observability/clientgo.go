package observability

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// RegisterClientMetrics registers client-go's request metrics into registerer under the names
// Kubernetes' own components use: rest_client_request_duration_seconds and
// rest_client_rate_limiter_duration_seconds by verb and host, rest_client_requests_total by
// code, method and host. client-go takes one set per process: only the first call feeds its
// metrics.
func RegisterClientMetrics(registerer prometheus.Registerer) error {
	buckets := []float64{0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
		Help: "Kubernetes API request latency in seconds, by verb and host.", Buckets: buckets}, []string{"verb", "host"})
	throttled := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_rate_limiter_duration_seconds",
		Help: "Seconds Kubernetes API requests waited for the client-side rate limiter, by verb and host.", Buckets: buckets}, []string{"verb", "host"})
	results := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
		Help: "Kubernetes API requests, by HTTP status code (or <error>), method and host."}, []string{"code", "method", "host"})
	for _, c := range []prometheus.Collector{latency, throttled, results} {
		if err := registerer.Register(c); err != nil {
			return err
		}
	}
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency:     latencyAdapter{latency},
		RateLimiterLatency: latencyAdapter{throttled},
		RequestResult:      resultAdapter{results},
	})
	return nil
}

type latencyAdapter struct{ *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.WithLabelValues(code, method, host).Inc()
}
