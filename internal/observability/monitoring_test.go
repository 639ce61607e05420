package observability_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"k8s.io/client-go/tools/cache"

	executionactivities "github.com/karmadaflow/karmadaflow/activities/execution"
	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	"github.com/karmadaflow/karmadaflow/internal/capabilities"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/workerdeployment"
	"github.com/karmadaflow/karmadaflow/starter/certexpiry"
	"github.com/karmadaflow/karmadaflow/starter/ensure"
)

// monitoringDir holds the alert rules, their promtool tests and the Grafana dashboard.
const monitoringDir = "../../deploy/charts/karmadaflow/monitoring"

// metricName matches the names of the metric families the worker and the starter serve.
var metricName = regexp.MustCompile(`\b(?:temporal|mcs|work|workqueue|rest_client|karmadaflow)_[a-z0-9_]+`)

// Every metric the alert rules, their tests and the dashboard name is one the worker or the
// starter serves: a renamed metric fails here, not silently in production.
func TestMonitoringNamesServedMetrics(t *testing.T) {
	served := projectMetrics(t)
	for name := range temporalSDKMetrics(t) {
		served[name] = true
	}
	var named []string
	for _, file := range []string{"alerts.yaml", "alerts.test.yaml", "dashboard.json"} {
		text, err := os.ReadFile(filepath.Join(monitoringDir, file))
		require.NoError(t, err)
		for _, name := range metricName.FindAllString(string(text), -1) {
			if !served[name] {
				t.Errorf("%s names %s, which neither the worker nor the starter serves", file, name)
			}
			named = append(named, name)
		}
	}
	for _, want := range []string{"mcs_errors_total", "mcs_provider_withdrawals_total", "mcs_collected_slices_dropped_total", "workqueue_depth",
		"temporal_workflow_task_execution_failed_total", "temporal_workflow_task_schedule_to_start_latency_seconds_bucket",
		certexpiry.MetricName} {
		require.True(t, slices.Contains(named, want), "the monitoring files do not name %s", want)
	}
}

// recorder is a Registerer that keeps what is registered.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// projectMetrics are the series names of the project's own metric families and client-go's,
// registered as the worker and the starter register them.
func projectMetrics(t *testing.T) map[string]bool {
	r := &recorder{}
	require.NoError(t, observability.RegisterClientMetrics(r))
	mcsactivities.NewMetrics(r)
	executionactivities.NewMetrics(r)
	_, err := observability.NewWorkqueueMetrics(r)
	require.NoError(t, err)
	_, err = ensure.NewStartedCounter(r)
	require.NoError(t, err)
	_, err = capabilities.NewPollers(nil, r, zap.NewNop())
	require.NoError(t, err)
	require.NoError(t, certexpiry.Register(r, cache.NewStore(cache.MetaNamespaceKeyFunc)))
	_, err = workerdeployment.NewRescuer(time.Minute, r, zap.NewNop())
	require.NoError(t, err)

	names := map[string]bool{}
	descs := make(chan *prometheus.Desc, 100)
	for _, c := range r.collectors {
		c.Describe(descs)
	}
	close(descs)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			names[m[1]+suffix] = true
		}
	}
	return names
}

var sdkConstant = regexp.MustCompile(`TemporalMetricsPrefix \+ "([a-z0-9_]+)"`)

// temporalSDKMetrics are the series names the Temporal SDK's metrics take through the
// OpenTelemetry Prometheus exporter (NewMetrics): counters end in _total, timers are
// histograms in seconds, gauges keep their name. The names are read from the SDK's source in
// the module cache, at the version go.mod requires.
func temporalSDKMetrics(t *testing.T) map[string]bool {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/sdk").Output()
	require.NoError(t, err)
	source, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "internal", "common", "metrics", "constants.go"))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range sdkConstant.FindAllStringSubmatch(string(source), -1) {
		base := "temporal_" + m[1]
		for _, suffix := range []string{"", "_total", "_seconds_bucket", "_seconds_sum", "_seconds_count"} {
			names[base+suffix] = true
		}
	}
	require.NotEmpty(t, names, "no metric names found in the Temporal SDK's source")
	return names
}
