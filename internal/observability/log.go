// Package observability owns what the worker and the starter expose about themselves: the zap
// logger (also behind the Temporal SDK's and klog's logs), the Prometheus registry that holds
// the process, client-go, work-queue, Temporal SDK and project metrics, and the HTTP server of
// /metrics, /healthz and /readyz with its readiness checks.
package observability

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// NewLogger builds the process logger. level is debug, info, warn or error; format is json or
// console.
func NewLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	switch format {
	case "json":
	case "console":
		cfg.Encoding = "console"
		cfg.EncoderConfig = zap.NewDevelopmentEncoderConfig()
	default:
		return nil, fmt.Errorf("log format %q: want json or console", format)
	}
	logger, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("building logger: %w", err)
	}
	return logger, nil
}

// TemporalLogger adapts logger to the Temporal SDK: the SDK's key-value logs become zap fields
// under the logger name "temporal", at logger's level.
func TemporalLogger(logger *zap.Logger) log.Logger {
	handler := zapslog.NewHandler(logger.Core(), zapslog.WithName(joinName(logger, "temporal")))
	return log.NewStructuredLogger(slog.New(handler))
}

// RouteKlog sends the logs of the Kubernetes client libraries (klog: reflector and discovery
// errors, throttling notices) through logger, under the name "klog", instead of plain stderr.
// Their errors carry no stack trace: it would show the library's internals, and the library
// also returns the error to the caller, whose own log names where it came from.
func RouteKlog(logger *zap.Logger) {
	klog.SetSlogLogger(slog.New(zapslog.NewHandler(logger.Core(), zapslog.WithName(joinName(logger, "klog")),
		zapslog.AddStacktraceAt(slog.LevelError+1))))
}

func joinName(logger *zap.Logger, name string) string {
	if parent := logger.Name(); parent != "" {
		return parent + "." + name
	}
	return name
}
