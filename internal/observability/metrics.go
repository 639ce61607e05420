package observability

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// latencyBuckets (seconds) suit Temporal's timers, from sub-millisecond local activities to
// one-minute long polls, finest between 1 and 100 ms, where the hops of the hot path lie;
// OpenTelemetry's default buckets assume milliseconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Metrics is the process's Prometheus registry and the OpenTelemetry meter provider that
// feeds the Temporal SDK's metrics into it.
type Metrics struct {
	// Registry holds every metric the process serves; register project metrics here.
	Registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
}

// NewMetrics returns a registry with the Go runtime, process and client-go request collectors
// and an OpenTelemetry Prometheus exporter registered into it.
func NewMetrics() (*Metrics, error) {
	registry := prometheus.NewRegistry()
	if err := registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("registering Go collector: %w", err)
	}
	if err := registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("registering process collector: %w", err)
	}
	if err := RegisterClientMetrics(registry); err != nil {
		return nil, fmt.Errorf("registering client-go metrics: %w", err)
	}
	exporter, err := otelprometheus.New(
		otelprometheus.WithRegisterer(registry),
		otelprometheus.WithoutScopeInfo(),
		otelprometheus.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("creating OpenTelemetry Prometheus exporter: %w", err)
	}
	seconds := sdkmetric.NewView(
		sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: latencyBuckets}},
	)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithView(seconds))
	return &Metrics{Registry: registry, provider: provider}, nil
}

// TemporalHandler is the Temporal SDK's metrics handler; its metrics appear in Registry with
// the SDK's names (temporal_request_total, temporal_workflow_task_execution_latency_seconds,
// ...). onError receives instrument errors, which would otherwise panic.
func (m *Metrics) TemporalHandler(onError func(error)) client.MetricsHandler {
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                m.provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		OnError:              onError,
	})
}

// Shutdown stops the meter provider.
func (m *Metrics) Shutdown(ctx context.Context) error {
	return m.provider.Shutdown(ctx)
}
