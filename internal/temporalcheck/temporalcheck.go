// Package temporalcheck tells whether karmadaflow can work with its Temporal server, with one
// clear message per problem: the frontend answers over the configured transport, the
// namespace exists, and the project's search attributes are registered. Problems a retry
// cannot fix (TLS, credentials, a missing namespace or search attribute) are permanent, so a
// process exits with them instead of waiting forever; an unreachable server is not, since
// Temporal may simply not be up yet.
package temporalcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/karmadaflow/karmadaflow/internal/searchattr"
)

// PermanentError is a problem that waiting does not fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent tells whether err (or an error it wraps) is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// Target is the Temporal server a process works with, as its client sees it.
type Target struct {
	Client    client.Client
	Address   string
	Namespace string
	TLS       *tls.Config // the client's; nil: plain connections
}

// Ready is the readiness check: the frontend answers and the namespace exists.
func (t Target) Ready(ctx context.Context) error {
	return Server(ctx, t.Client, t.Address, t.Namespace, t.TLS)
}

// Usable is the check at start: Ready, and the project's search attributes are registered.
func (t Target) Usable(ctx context.Context) error {
	if err := t.Ready(ctx); err != nil {
		return err
	}
	return SearchAttributes(ctx, t.Client, t.Namespace, searchattr.Names())
}

// BootstrapHint says how to register what is missing.
const BootstrapHint = "register it with `worker bootstrap` (see the README)"

// Server checks that the Temporal frontend at address answers c and that namespace exists.
// tlsConfig is c's (nil: plain connections); when the frontend cannot be reached, a handshake
// of its own tells whether TLS is the cause.
func Server(ctx context.Context, c client.Client, address, namespace string, tlsConfig *tls.Config) error {
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		err = describe(err, "Temporal at "+address)
		if !IsPermanent(err) && tlsConfig != nil {
			if tlsErr := handshake(ctx, address, tlsConfig); tlsErr != nil {
				return tlsErr
			}
		}
		return err
	}
	_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	var notFound *serviceerror.NamespaceNotFound
	if errors.As(err, &notFound) || status.Code(err) == codes.NotFound {
		return &PermanentError{fmt.Errorf("namespace %q does not exist on Temporal at %s: %s", namespace, address, BootstrapHint)}
	}
	if err != nil {
		return describe(err, fmt.Sprintf("namespace %q on Temporal at %s", namespace, address))
	}
	return nil
}

// SearchAttributes checks that every name is a registered search attribute of namespace. A
// server that does not let the client list them (Unimplemented) is trusted.
func SearchAttributes(ctx context.Context, c client.Client, namespace string, names []string) error {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if status.Code(err) == codes.Unimplemented {
		return nil
	}
	if err != nil {
		return describe(err, fmt.Sprintf("listing the search attributes of namespace %q", namespace))
	}
	var missing []string
	for _, name := range names {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return &PermanentError{fmt.Errorf("search attributes %s are not registered in namespace %q: %s",
			strings.Join(missing, ", "), namespace, BootstrapHint)}
	}
	return nil
}

// handshake completes a TLS handshake with the frontend at address and waits briefly for the
// server's verdict on the client certificate, which TLS 1.3 sends after the handshake. It
// returns a permanent error when TLS failed, and nil otherwise (also when nothing answers).
func handshake(ctx context.Context, address string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	dialer := &tls.Dialer{Config: cfg.Clone()}
	dialer.Config.NextProtos = []string{"h2"}
	conn, err := dialer.DialContext(ctx, "tcp", address)
	var netErr net.Error
	if err == nil {
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		_, err = conn.Read(make([]byte, 1))
		if errors.As(err, &netErr) && netErr.Timeout() {
			return nil // the server waits for the client to speak: TLS is fine
		}
	}
	if err != nil && (strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:")) {
		return &PermanentError{fmt.Errorf("TLS with Temporal at %s failed (check the --temporal-tls-* flags): %w", address, err)}
	}
	return nil
}

// describe names what failed and why, marking what waiting does not fix as permanent.
func describe(err error, what string) error {
	msg := err.Error()
	switch {
	case status.Code(err) == codes.Unauthenticated || status.Code(err) == codes.PermissionDenied:
		return &PermanentError{fmt.Errorf("%s refused the credentials (check --temporal-api-key-file or the client certificate): %w", what, err)}
	case strings.Contains(msg, "x509:") || strings.Contains(msg, "tls:") || strings.Contains(msg, "authentication handshake failed"):
		return &PermanentError{fmt.Errorf("TLS with %s failed (check the --temporal-tls-* flags): %w", what, err)}
	case strings.Contains(msg, "server preface"):
		// Also seen from a server that is shutting down: worth waiting for.
		return fmt.Errorf("%s closed the connection before speaking gRPC; it may require TLS (--temporal-tls-* flags): %w", what, err)
	}
	return fmt.Errorf("%s is unreachable: %w", what, err)
}
