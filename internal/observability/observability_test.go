package observability

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/karmadaflow/karmadaflow/internal/temporalcheck"
)

func TestNewLogger(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		logger, err := NewLogger("debug", format)
		require.NoError(t, err, format)
		assert.True(t, logger.Core().Enabled(zapcore.DebugLevel))
	}
	_, err := NewLogger("info", "xml")
	assert.Error(t, err)
	_, err = NewLogger("loud", "json")
	assert.Error(t, err)
}

func TestTemporalLoggerWritesZapFields(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	sdkLogger := TemporalLogger(zap.New(core).Named("worker"))

	sdkLogger.Info("Started Worker", "Namespace", "default", "TaskQueue", "karmadaflow")
	sdkLogger.Debug("dropped below the level")

	entries := logs.All()
	require.Len(t, entries, 1)
	assert.Equal(t, "Started Worker", entries[0].Message)
	assert.Equal(t, "worker.temporal", entries[0].LoggerName)
	assert.Equal(t, map[string]any{"Namespace": "default", "TaskQueue": "karmadaflow"}, entries[0].ContextMap())
}

func TestTemporalMetricsReachTheRegistry(t *testing.T) {
	metrics, err := NewMetrics()
	require.NoError(t, err)
	t.Cleanup(func() { _ = metrics.Shutdown(context.Background()) })

	handler := metrics.TemporalHandler(func(err error) { t.Errorf("metrics error: %v", err) })
	tagged := handler.WithTags(map[string]string{"operation": "SignalWithStartWorkflowExecution"})
	tagged.Counter("temporal_request").Inc(2)
	tagged.Timer("temporal_request_latency").Record(30 * time.Millisecond)

	body := scrape(t, NewServer("", metrics.Registry, zap.NewNop()).Handler())
	assert.Contains(t, body, `temporal_request_total{operation="SignalWithStartWorkflowExecution"} 2`)
	assert.Contains(t, body, `temporal_request_latency_seconds_bucket{operation="SignalWithStartWorkflowExecution",le="0.05"} 1`)
	assert.Contains(t, body, "go_goroutines")
	assert.Contains(t, body, "process_cpu_seconds_total")
}

func TestWorkqueueMetrics(t *testing.T) {
	metrics, err := NewMetrics()
	require.NoError(t, err)
	provider, err := NewWorkqueueMetrics(metrics.Registry)
	require.NoError(t, err)
	provider.NewAddsMetric("configmaps").Inc()
	provider.NewDepthMetric("configmaps").Inc()

	body := scrape(t, NewServer("", metrics.Registry, zap.NewNop()).Handler())
	assert.Contains(t, body, `workqueue_adds_total{name="configmaps"} 1`)
	assert.Contains(t, body, `workqueue_depth{name="configmaps"} 1`)
}

func TestHealthAndReadiness(t *testing.T) {
	metrics, err := NewMetrics()
	require.NoError(t, err)
	server := NewServer("", metrics.Registry, zap.NewNop())
	var temporalErr error
	synced := false
	server.AddReadinessCheck("temporal", func(context.Context) error { return temporalErr })
	server.AddReadinessCheck("informers-synced", SyncedCheck(map[string]func() bool{"configmaps": func() bool { return synced }}))
	handler := server.Handler()

	code, body := get(t, handler, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	// On failure /readyz lists every check but withholds the reasons, as Kubernetes' does;
	// /readyz/<check> names its reason.
	temporalErr = errors.New("connection refused")
	code, body = get(t, handler, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "[-]temporal failed: reason withheld")
	assert.Contains(t, body, "[-]informers-synced failed: reason withheld")
	code, body = get(t, handler, "/readyz/temporal")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "connection refused")
	_, body = get(t, handler, "/readyz/informers-synced")
	assert.Contains(t, body, "not synced yet: configmaps")

	temporalErr, synced = nil, true
	code, body = get(t, handler, "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	code, body = get(t, handler, "/readyz?verbose")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "[+]temporal ok\n[+]informers-synced ok\nreadyz check passed\n", body)
}

func TestReadyzVerboseListsChecksAndNamesTheFailing(t *testing.T) {
	metrics, err := NewMetrics()
	require.NoError(t, err)
	server := NewServer("", metrics.Registry, zap.NewNop())
	handler := server.Handler()

	// Checks added once the handler serves are served too.
	var deadline time.Duration
	server.AddReadinessCheck("temporal", func(ctx context.Context) error {
		d, ok := ctx.Deadline()
		require.True(t, ok, "a readiness check runs without a timeout")
		deadline = time.Until(d)
		return nil
	})
	server.AddReadinessCheck("worker", func(context.Context) error { return errors.New("not polling the task queue") })

	code, body := get(t, handler, "/readyz?verbose")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "[+]temporal ok\n[-]worker failed: reason withheld\nreadyz check failed\n", body)
	assert.Positive(t, deadline)
	assert.LessOrEqual(t, deadline, checkTimeout)

	code, body = get(t, handler, "/readyz?verbose&exclude=worker")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "[+]temporal ok\n[+]worker excluded: ok\nreadyz check passed\n", body)
}

func TestWaitFor(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	failures := 1
	err := WaitFor(context.Background(), "Temporal", func(context.Context) error {
		if failures > 0 {
			failures--
			return errors.New("connection refused")
		}
		return nil
	}, zap.New(core))
	require.NoError(t, err)
	entries := logs.FilterMessage("waiting for Temporal").All()
	require.Len(t, entries, 1)
	assert.Equal(t, "connection refused", entries[0].ContextMap()["error"])
	assert.Equal(t, time.Second, entries[0].ContextMap()["retryIn"])

	permanent := &temporalcheck.PermanentError{Err: errors.New("namespace does not exist")}
	err = WaitFor(context.Background(), "Temporal", func(context.Context) error { return permanent }, zap.NewNop())
	assert.Same(t, permanent, err)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = WaitFor(ctx, "Temporal", func(context.Context) error { return errors.New("connection refused") }, zap.NewNop())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestRunShutsDownWithContext(t *testing.T) {
	metrics, err := NewMetrics()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer("127.0.0.1:0", metrics.Registry, zap.NewNop()).Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}

	err = NewServer("127.0.0.1:-1", metrics.Registry, zap.NewNop()).Run(context.Background())
	assert.Error(t, err)
}

func get(t *testing.T, handler http.Handler, path string) (int, string) {
	t.Helper()
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(recorder.Result().Body)
	require.NoError(t, err)
	return recorder.Code, string(body)
}

func scrape(t *testing.T, handler http.Handler) string {
	t.Helper()
	code, body := get(t, handler, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(body, "# TYPE"), body)
	return body
}
