// Package provisioning does the I/O of installing a Karmada control plane described by a
// Karmada object (operator.karmada.io/v1alpha1) into its host cluster (the cluster karmadaflow
// runs against, or the remote one spec.hostCluster names): validation, the certificates and
// kubeconfigs (written straight into Secrets, never returned), the etcd, API server and
// component workloads, the objects inside the new control plane, the status and the removal.
// Every step is idempotent: deterministic names, server-side apply with one field manager, CAs
// and keys generated once, leaf certificates issued again only when due for renewal. Which
// steps run, in what order, is workflows/provisioning's.
package provisioning

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// The Activities type and what every step shares: server-side apply in a host cluster, and the
// pause and heartbeat of the waits.

// Activities holds the clients of the host cluster the control planes are installed into.
type Activities struct {
	Host        kubernetes.Interface
	HostDynamic dynamic.Interface
	// PollInterval is how often the waits look; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// CRDSource is where the control planes' CRDs come from when a Karmada names no tarball.
	CRDSource CRDSource
	// HostAccess is which Karmadas may ask for pods that reach their node.
	HostAccess HostAccess
	// Namespaces are the only namespaces whose Karmadas are provisioned (namespaces.go); nil
	// is every namespace.
	Namespaces []string
}

// DefaultPollInterval is how often the waits look by default: pods turn Ready and CRDs
// Established within a fraction of a second, so a second would mostly be idle.
const DefaultPollInterval = 250 * time.Millisecond

// ErrNotFound is the ApplicationError type of a Karmada object that no longer exists.
const ErrNotFound = "KarmadaNotFound"

// pause heartbeats what is awaited and sleeps one poll interval.
func (a *Activities) pause(ctx context.Context, what string) error {
	heartbeat(ctx, what)
	interval := a.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(interval):
		return nil
	}
}

func heartbeat(ctx context.Context, details ...any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, details...)
	}
}

// apply writes a typed object (apiVersion and kind set) with server-side apply to the
// cluster of client.
func (a *Activities) apply(ctx context.Context, client dynamic.Interface, obj any) (*unstructured.Unstructured, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		var err error
		if u, err = kube.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("encoding %T: %w", obj, err)
		}
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	gvr := gv.WithResource(strings.ToLower(u.GetKind()) + "s")
	var resource dynamic.ResourceInterface = client.Resource(gvr)
	if u.GetNamespace() != "" {
		resource = client.Resource(gvr).Namespace(u.GetNamespace())
	}
	out, err := kube.Apply(ctx, resource, u)
	if err != nil && kube.IsPermanent(err) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidObject", err)
	}
	return out, err
}
