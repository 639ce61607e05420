package execution

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// Removing member objects: those of a Work being deleted, and the orphan sweep of objects whose
// Work is gone.

// deleteOwned deletes the manifest's object from the member if this Work created it.
func deleteOwned(ctx context.Context, member *members.Member, work, manifest *unstructured.Unstructured) error {
	client, err := resourceFor(member, manifest)
	if err != nil {
		return err
	}
	current, err := client.Get(ctx, manifest.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster %s: reading %s %s/%s: %w", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(), err)
	}
	if !ownedBy(current, work) || appliedByAnother(current, work) {
		return nil
	}
	err = client.Delete(ctx, manifest.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(current.GetUID())}})
	if kube.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("cluster %s: deleting %s %s/%s: %w", member.Name, manifest.GetKind(), manifest.GetNamespace(), manifest.GetName(), err)
	}
	return nil
}

// removeOrphans deletes member objects labelled with a Work of this namespace that no longer
// exists (a Work deleted before its finalizer was set), as the API server says when the
// object is about to be deleted. It looks at the objects the full pass listed (listed), of
// the kinds that Works here carry; one orphaned since is removed by the next pass.
func (a *Activities) removeOrphans(ctx context.Context, member *members.Member, namespace string, works []*unstructured.Unstructured, listed listedObjects) error {
	existing := map[string]bool{}
	for _, w := range works {
		existing[w.GetName()] = true
	}
	for _, obj := range listed {
		work := obj.GetLabels()[naming.LabelWorkName]
		if existing[work] {
			continue
		}
		// A Work written after the list of Works may have been applied since (a
		// MultiClusterService applies the Works it writes at once): ask before deleting.
		if exists, err := a.workExists(ctx, namespace, work); err != nil || exists {
			if err != nil {
				return err
			}
			continue
		}
		client, err := resourceFor(member, obj)
		if err != nil {
			return err
		}
		err = client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(obj.GetUID())}})
		if kube.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("cluster %s: deleting orphan %s %s/%s: %w", member.Name, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// workExists reads the Work from the API server: whether it exists now.
func (a *Activities) workExists(ctx context.Context, namespace, name string) (bool, error) {
	_, err := a.ControlPlane.Resource(kube.Works).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("reading Work %s/%s: %w", namespace, name, err)
}

// appliedByAnother tells whether the object in the member, labelled with work's name, was
// applied from another Work of that name (one created since work was deleted).
func appliedByAnother(obj, work *unstructured.Unstructured) bool {
	uid, _ := appliedFrom(obj)
	return uid != "" && work.GetUID() != "" && uid != string(work.GetUID())
}

func ptr[T any](v T) *T { return &v }
