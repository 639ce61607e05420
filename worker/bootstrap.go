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

// runBootstrap is `worker bootstrap`: it registers the namespace (when missing and allowed)
// and the project's search attributes with the Temporal server the flags name, then exits.
// Running it again changes nothing.
func runBootstrap(ctx context.Context, opts *options.Options, logger *zap.Logger) error {
	clientOptions, err := opts.TemporalClientOptions(observability.TemporalLogger(logger), nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	temporal, err := client.DialContext(ctx, clientOptions)
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", opts.TemporalAddress, err)
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
