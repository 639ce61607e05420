package observability

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/karmadaflow/karmadaflow/internal/temporalcheck"
)

const (
	// checkTimeout bounds one readiness check, and one try of WaitFor.
	checkTimeout = 3 * time.Second
	// shutdownTimeout bounds the graceful shutdown of the server.
	shutdownTimeout = 5 * time.Second
)

// Check reports whether one dependency of readiness holds; nil means ready.
type Check func(ctx context.Context) error

// Server serves /metrics from a registry, /healthz (the process is alive and serving) and
// /readyz (every named readiness check passes), the latter two with Kubernetes' healthz
// handlers: /readyz?verbose lists the checks, /readyz/<check> runs one and names its error,
// /readyz?exclude=<check> skips one.
type Server struct {
	address  string
	registry *prometheus.Registry
	logger   *zap.Logger

	mu     sync.Mutex
	checks []healthz.HealthChecker
	// readyz serves /readyz and /readyz/<check>. healthz takes every check of a path in one
	// install, so each AddReadinessCheck installs them all on a new mux, which replaces this
	// one, even under a handler already serving.
	readyz atomic.Pointer[http.ServeMux]
}

// NewServer returns a server for address that serves registry's metrics.
func NewServer(address string, registry *prometheus.Registry, logger *zap.Logger) *Server {
	s := &Server{address: address, registry: registry, logger: logger}
	s.readyz.Store(readyzMux(nil))
	return s
}

// AddReadinessCheck adds a named check to /readyz, which may already be served. Checks run
// in the order they were added, each within checkTimeout.
func (s *Server) AddReadinessCheck(name string, check Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, healthz.NamedCheck(name, func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
		defer cancel()
		return check(ctx)
	}))
	s.readyz.Store(readyzMux(s.checks))
}

func readyzMux(checks []healthz.HealthChecker) *http.ServeMux {
	mux := http.NewServeMux()
	healthz.InstallReadyzHandler(mux, checks...)
	return mux
}

// Handler is the HTTP handler of the server's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	healthz.InstallHandler(mux, healthz.PingHealthz)
	readyz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.readyz.Load().ServeHTTP(unavailableWriter{w}, r)
	})
	mux.Handle("/readyz", readyz)
	mux.Handle("/readyz/", readyz)
	return mux
}

// unavailableWriter turns healthz's 500 for a failed check into 503 Service Unavailable: the
// process works, it is not ready yet, and 503 is what /readyz has always answered then.
type unavailableWriter struct{ http.ResponseWriter }

func (w unavailableWriter) WriteHeader(code int) {
	if code == http.StatusInternalServerError {
		code = http.StatusServiceUnavailable
	}
	w.ResponseWriter.WriteHeader(code)
}

// Run listens on the server's address and serves until ctx is done, then shuts down
// gracefully. It returns at once if the address cannot be bound.
func (s *Server) Run(ctx context.Context) error {
	listener, err := net.Listen("tcp", s.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.address, err)
	}
	server := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.logger.Info("serving metrics and health", zap.String("address", listener.Addr().String()))

	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", s.address, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down server on %s: %w", s.address, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// WaitFor returns once check passes, with ctx's error, or with a permanent error of check
// (temporalcheck.IsPermanent), which waiting would not fix. It retries with a delay that
// doubles up to 30 seconds and logs each failure as a warning about what.
func WaitFor(ctx context.Context, what string, check Check, logger *zap.Logger) error {
	// DelayFunc().Until, not ExponentialBackoffWithContext: the latter gives up once the delay
	// reaches Cap, and WaitFor waits as long as ctx lasts. Steps only bounds the doublings.
	delays := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}.DelayFunc()
	var retryIn time.Duration
	try := func(ctx context.Context) (bool, error) {
		checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
		defer cancel()
		err := check(checkCtx)
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case temporalcheck.IsPermanent(err):
			return false, err
		}
		// The delay is taken here to be logged; Until reads it after each try (sliding).
		retryIn = delays()
		logger.Warn("waiting for "+what, zap.Duration("retryIn", retryIn), zap.Error(err))
		return false, nil
	}
	return wait.DelayFunc(func() time.Duration { return retryIn }).Until(ctx, true, true, try)
}

// SyncedCheck is ready when every named hasSynced function (e.g. of an informer or a trigger)
// reports true; otherwise it names those that do not.
func SyncedCheck(hasSynced map[string]func() bool) Check {
	return func(context.Context) error {
		var pending []string
		for name, synced := range hasSynced {
			if !synced() {
				pending = append(pending, name)
			}
		}
		if len(pending) > 0 {
			slices.Sort(pending)
			return fmt.Errorf("not synced yet: %s", strings.Join(pending, ", "))
		}
		return nil
	}
}
