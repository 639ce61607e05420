// Package daemon runs a karmadaflow process: options from the command line and environment,
// the logger, SIGINT/SIGTERM handling and the exit code.
package daemon

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
)

// RunFunc is a process's body; it returns when ctx ends (a signal) or on a fatal error.
type RunFunc func(ctx context.Context, opts *options.Options, logger *zap.Logger) error

// Main runs component until SIGINT or SIGTERM and exits: 0 after a clean stop, 1 on a fatal
// error, 2 on bad flags or logger settings.
func Main(component options.Component, run RunFunc) {
	opts := options.FromCommandLine(component)
	logger, err := observability.NewLogger(opts.LogLevel, opts.LogFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	observability.RouteKlog(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, opts, logger)
	stop()
	if err != nil {
		logger.Error(string(component)+" failed", zap.Error(err))
		_ = logger.Sync()
		os.Exit(1)
	}
	logger.Info(string(component) + " stopped")
	_ = logger.Sync()
}
