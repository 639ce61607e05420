// Package bootstrap registers what karmadaflow needs in its Temporal namespace, idempotently:
// the namespace itself, where the server lets clients create namespaces, and the project's
// custom search attributes (Keyword), through the OperatorService. A production server has
// neither until someone registers them; the dev server's --search-attribute flag is only a
// convenience of the dev server.
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Config says what to register.
type Config struct {
	Namespace string
	// Retention of closed workflows, when the namespace is created here.
	Retention time.Duration
	// SearchAttributes are registered as Keyword.
	SearchAttributes []string
	// Timeout bounds the wait for a new namespace or attribute to become usable.
	Timeout time.Duration
	Logger  *zap.Logger
}

// Run registers the namespace when it is missing and every search attribute that is missing,
// and returns once all of them are usable.
func Run(ctx context.Context, c client.Client, cfg Config) error {
	if err := ensureNamespace(ctx, c, cfg); err != nil {
		return err
	}
	return ensureSearchAttributes(ctx, c, cfg)
}

func ensureNamespace(ctx context.Context, c client.Client, cfg Config) error {
	_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: cfg.Namespace})
	if err == nil {
		cfg.Logger.Info("namespace exists", zap.String("namespace", cfg.Namespace))
		return nil
	}
	if !isNotFound(err) {
		return fmt.Errorf("describing namespace %q: %w", cfg.Namespace, err)
	}
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        cfg.Namespace,
		Description:                      "karmadaflow",
		WorkflowExecutionRetentionPeriod: durationpb.New(cfg.Retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	switch {
	case errors.As(err, &exists):
	case status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("namespace %q does not exist and this server does not let karmadaflow create it "+
			"(on Temporal Cloud, create it in the Cloud console or with tcld): %w", cfg.Namespace, err)
	case err != nil:
		return fmt.Errorf("registering namespace %q: %w", cfg.Namespace, err)
	default:
		cfg.Logger.Info("namespace registered", zap.String("namespace", cfg.Namespace), zap.Duration("retention", cfg.Retention))
	}
	// The services know a new namespace once their namespace caches have caught up
	// (DescribeNamespace reads the database and knows it at once).
	return poll(ctx, cfg.Timeout, func(ctx context.Context) error {
		_, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: cfg.Namespace})
		return err
	})
}

func ensureSearchAttributes(ctx context.Context, c client.Client, cfg Config) error {
	missing, err := missingSearchAttributes(ctx, c, cfg)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		cfg.Logger.Info("search attributes registered", zap.Strings("names", cfg.SearchAttributes))
		return nil
	}
	add := map[string]enumspb.IndexedValueType{}
	for _, name := range missing {
		add[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	// A namespace registered a moment ago may not be known to every service yet: retry.
	err = poll(ctx, cfg.Timeout, func(ctx context.Context) error {
		_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: cfg.Namespace, SearchAttributes: add,
		})
		var exists *serviceerror.AlreadyExists
		if errors.As(err, &exists) {
			return nil // registered meanwhile, by a second bootstrap
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("adding search attributes %v to namespace %q: %w", missing, cfg.Namespace, err)
	}
	err = poll(ctx, cfg.Timeout, func(ctx context.Context) error {
		still, err := missingSearchAttributes(ctx, c, cfg)
		if err == nil && len(still) > 0 {
			err = fmt.Errorf("not listed yet: %v", still)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("search attributes %v of namespace %q: %w", missing, cfg.Namespace, err)
	}
	cfg.Logger.Info("search attributes added", zap.String("namespace", cfg.Namespace), zap.Strings("names", missing))
	return nil
}

// missingSearchAttributes are the configured attributes the namespace lacks; one registered
// with another type than Keyword is an error, since it cannot be changed.
func missingSearchAttributes(ctx context.Context, c client.Client, cfg Config) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: cfg.Namespace})
	if err != nil {
		return nil, fmt.Errorf("listing the search attributes of namespace %q: %w", cfg.Namespace, err)
	}
	var missing []string
	for _, name := range cfg.SearchAttributes {
		typ, ok := resp.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD:
			return nil, fmt.Errorf("search attribute %s of namespace %q is %s, karmadaflow needs Keyword", name, cfg.Namespace, typ)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

func isNotFound(err error) bool {
	var nsNotFound *serviceerror.NamespaceNotFound
	var notFound *serviceerror.NotFound
	return errors.As(err, &nsNotFound) || errors.As(err, &notFound)
}

// poll retries do every half second until it succeeds or timeout passes.
func poll(ctx context.Context, timeout time.Duration, do func(ctx context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = do(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return err
}
