package observability

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/karmadaflow/karmadaflow/internal/temporalcheck"
)

const (
	// checkTimeout bounds one readiness check.
	checkTimeout = 3 * time.Second
	// shutdownTimeout bounds the graceful shutdown of the server.
	shutdownTimeout = 5 * time.Second
)

// Check reports whether one dependency of readiness holds; nil means ready.
type Check func(ctx context.Context) error

type namedCheck struct {
	name  string
	check Check
}

// Server serves /metrics from a registry, /healthz (the process is alive and serving) and
// /readyz (every named readiness check passes).
type Server struct {
	address  string
	registry *prometheus.Registry
	logger   *zap.Logger

	mu     sync.Mutex
	checks []namedCheck
}

// NewServer returns a server for address that serves registry's metrics.
func NewServer(address string, registry *prometheus.Registry, logger *zap.Logger) *Server {
	return &Server{address: address, registry: registry, logger: logger}
}

// AddReadinessCheck adds a named check to /readyz. Checks run in the order they were added.
func (s *Server) AddReadinessCheck(name string, check Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, namedCheck{name: name, check: check})
}

// Handler is the HTTP handler of the server's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.serveReadyz)
	return mux
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

// serveReadyz answers 200 when every check passes and 503 otherwise, listing each check as
// Kubernetes' own /readyz does.
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	checks := append([]namedCheck(nil), s.checks...)
	s.mu.Unlock()

	var report strings.Builder
	ready := true
	for _, c := range checks {
		ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
		err := c.check(ctx)
		cancel()
		if err != nil {
			ready = false
			fmt.Fprintf(&report, "[-]%s failed: %v\n", c.name, err)
			continue
		}
		fmt.Fprintf(&report, "[+]%s ok\n", c.name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		report.WriteString("readyz check failed\n")
	} else {
		report.WriteString("ok\n")
	}
	_, _ = w.Write([]byte(report.String()))
}

// WaitFor returns once check passes, with ctx's error, or with a permanent error of check
// (temporalcheck.IsPermanent), which waiting would not fix. It retries with a delay that
// doubles up to 30 seconds and logs each failure as a warning about what.
func WaitFor(ctx context.Context, what string, check Check, logger *zap.Logger) error {
	const maxDelay = 30 * time.Second
	delay := time.Second
	for {
		checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
		err := check(checkCtx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if temporalcheck.IsPermanent(err) {
			return err
		}
		logger.Warn("waiting for "+what, zap.Duration("retryIn", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, maxDelay)
	}
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
