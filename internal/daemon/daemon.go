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
	"go.uber.org/zap/zapcore"

	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
)

// RunFunc is a process's body; it returns when ctx ends (a signal) or on a fatal error.
type RunFunc func(ctx context.Context, opts *options.Options, logger *zap.Logger) error

// Main runs component with the process's arguments until SIGINT or SIGTERM and exits: 0 after
// a clean stop, 1 on a fatal error, 2 on bad flags or logger settings.
func Main(component options.Component, run RunFunc) {
	MainArgs(component, string(component), os.Args[1:], run)
}

// MainArgs is Main for command (the program and its subcommand: "worker versions"), with the
// arguments after it.
func MainArgs(component options.Component, command string, args []string, run RunFunc) {
	opts := options.FromCommandLine(component, command, args)
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
		// The error says what is wrong; a stack trace of this function would only hide it.
		logger.WithOptions(zap.AddStacktrace(zapcore.FatalLevel)).Error(string(component)+" failed", zap.Error(err))
		_ = logger.Sync()
		os.Exit(1)
	}
	logger.Info(string(component) + " stopped")
	_ = logger.Sync()
}
