package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/karmadaflow/karmadaflow/internal/bootstrap"
	"github.com/karmadaflow/karmadaflow/internal/observability"
	"github.com/karmadaflow/karmadaflow/internal/options"
	"github.com/karmadaflow/karmadaflow/internal/searchattr"
)

// bootstrapTimeout bounds the whole `worker bootstrap`, waits for a new namespace included.
const bootstrapTimeout = 2 * time.Minute

// dialTemporal connects a subcommand (`worker bootstrap`, `worker versions`) to the Temporal
// server the flags name.
func dialTemporal(ctx context.Context, opts *options.Options, logger *zap.Logger) (client.Client, error) {
	clientOptions, err := opts.TemporalClientOptions(observability.TemporalLogger(logger), nil)
	if err != nil {
		return nil, err
	}
	temporal, err := client.DialContext(ctx, clientOptions)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", opts.TemporalAddress, err)
	}
	return temporal, nil
}

// runBootstrap is `worker bootstrap`: it registers the namespace (when missing and allowed)
// and the project's search attributes with the Temporal server the flags name, then exits.
// Running it again changes nothing.
func runBootstrap(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	temporal, err := dialTemporal(ctx, opts, logger)
	if err != nil {
		return err
	}
	defer temporal.Close()
	return bootstrap.Run(ctx, temporal, bootstrap.Config{
		Namespace:        opts.TemporalNamespace,
		Retention:        opts.NamespaceRetention,
		SearchAttributes: searchattr.Names(),
		Timeout:          bootstrapTimeout / 2,
		Logger:           logger,
	})
}
