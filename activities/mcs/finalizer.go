package mcs

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// karmadaflow's finalizer on the MultiClusterService: put on, and taken off once everything it
// caused is gone.

// AddFinalizer puts karmadaflow's finalizer on the MultiClusterService.
func (a *Activities) AddFinalizer(ctx context.Context, ref Ref) error {
	return a.Metrics.count("finalizer", a.addFinalizer(ctx, ref))
}

func (a *Activities) addFinalizer(ctx context.Context, ref Ref) error {
	return a.updateFinalizers(ctx, ref, func(f []string) []string {
		if slices.Contains(f, networkingv1alpha1.Finalizer) {
			return nil
		}
		return append(f, networkingv1alpha1.Finalizer)
	})
}

// RemoveFinalizer releases the MultiClusterService once everything it caused is gone.
func (a *Activities) RemoveFinalizer(ctx context.Context, ref Ref) error {
	return a.Metrics.count("finalizer", a.removeFinalizer(ctx, ref))
}

func (a *Activities) removeFinalizer(ctx context.Context, ref Ref) error {
	err := a.updateFinalizers(ctx, ref, func(f []string) []string {
		if !slices.Contains(f, networkingv1alpha1.Finalizer) {
			return nil
		}
		return slices.DeleteFunc(slices.Clone(f), func(s string) bool { return s == networkingv1alpha1.Finalizer })
	})
	if err == nil {
		a.seen.put(ref, nil) // released: the object is gone or going
	}
	return err
}

// updateFinalizers applies edit (nil = nothing to do) with optimistic concurrency.
func (a *Activities) updateFinalizers(ctx context.Context, ref Ref, edit func([]string) []string) error {
	client := a.ControlPlane.Resource(kube.MultiClusterServices).Namespace(ref.Namespace)
	return a.updateMCS(ctx, ref, func(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		finalizers := edit(obj.GetFinalizers())
		if finalizers == nil {
			return nil, nil
		}
		obj.SetFinalizers(finalizers)
		updated, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: naming.FieldManager})
		if err != nil {
			return nil, fmt.Errorf("updating finalizers of MultiClusterService %s: %w", ref, err)
		}
		return updated, nil
	})
}
