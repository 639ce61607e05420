package execution

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// The execution namespace karmada-es-<cluster> lives as long as its Cluster, as Karmada's
// cluster controller keeps it: created for a Cluster, and removed with the Works left in it
// when the Cluster is deleted.

// RemoveResult says whether the execution namespace of a gone Cluster was removed.
type RemoveResult struct {
	// Removed: the Cluster is gone, its Works are released and its namespace is deleting.
	// False when the Cluster exists (again).
	Removed bool
}

// RemoveExecutionSpace releases the Works of a deleted Cluster and removes its execution
// namespace, and returns once the namespace is gone. Nothing can apply or delete their
// manifests in the member any more, so the Works' execution finalizers are taken off; the
// namespace goes first, so that no Work is created in it meanwhile. Until the namespace
// controller has removed every Work, a MultiClusterService may still write the finalizer on one:
// the finalizers are released again each round.
func (a *Activities) RemoveExecutionSpace(ctx context.Context, cluster string) (RemoveResult, error) {
	namespace := naming.ExecutionNamespace(cluster)
	namespaces := a.ControlPlane.Resource(kube.Namespaces)
	works := a.ControlPlane.Resource(kube.Works).Namespace(namespace)
	for {
		exists, err := a.clusterExists(ctx, cluster)
		if err != nil || exists {
			return RemoveResult{}, err
		}
		err = namespaces.Delete(ctx, namespace, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return RemoveResult{Removed: true}, nil
		}
		if err != nil {
			return RemoveResult{}, fmt.Errorf("deleting the execution namespace %s: %w", namespace, err)
		}
		list, err := works.List(ctx, metav1.ListOptions{})
		if err != nil {
			return RemoveResult{}, fmt.Errorf("listing Works of the gone cluster %s: %w", cluster, err)
		}
		for i := range list.Items {
			if err := kube.IgnoreNotFound(setFinalizer(ctx, works, &list.Items[i], false)); err != nil {
				return RemoveResult{}, err
			}
		}
		activity.RecordHeartbeat(ctx, len(list.Items))
		select {
		case <-ctx.Done():
			return RemoveResult{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// clusterExists reads the Cluster from the API server (the member clients are cached).
func (a *Activities) clusterExists(ctx context.Context, cluster string) (bool, error) {
	_, err := a.ControlPlane.Resource(kube.Clusters).Get(ctx, cluster, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Cluster %s: %w", cluster, err)
	}
	return true, nil
}

// ensureExecutionSpace creates the cluster's execution namespace if it does not exist; one
// still deleting (the Cluster was deleted and created again) is an error: the full pass goes
// on, releasing the Works being deleted there, and is repeated.
func (a *Activities) ensureExecutionSpace(ctx context.Context, cluster string) error {
	namespaces := a.ControlPlane.Resource(kube.Namespaces)
	namespace := naming.ExecutionNamespace(cluster)
	ns, err := namespaces.Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": namespace}}}
		_, err = namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: naming.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensuring the execution namespace %s: %w", namespace, err)
	}
	if ns.GetDeletionTimestamp() != nil {
		return fmt.Errorf("the execution namespace %s is still being deleted", namespace)
	}
	return nil
}
