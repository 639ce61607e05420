package provisioning

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// The finalizer that holds the Karmada object until Uninstall is done.

// AddKarmadaFinalizer adds the finalizer that holds the Karmada until Uninstall is done and,
// in the same update, records the host cluster it is installed into (AnnotationHostCluster):
// the workflow adds the finalizer before the first install step.
func (a *Activities) AddKarmadaFinalizer(ctx context.Context, ref Ref) error {
	return a.updateFinalizer(ctx, ref, true)
}

// RemoveKarmadaFinalizer releases the Karmada.
func (a *Activities) RemoveKarmadaFinalizer(ctx context.Context, ref Ref) error {
	return a.updateFinalizer(ctx, ref, false)
}

func (a *Activities) updateFinalizer(ctx context.Context, ref Ref, present bool) error {
	client := a.HostDynamic.Resource(kube.Karmadas).Namespace(ref.Namespace)
	obj, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Karmada %s: %w", ref, err)
	}
	finalizers := obj.GetFinalizers()
	has := slices.Contains(finalizers, operatorv1alpha1.Finalizer)
	switch {
	case present == has:
		return nil
	case present:
		finalizers = append(finalizers, operatorv1alpha1.Finalizer)
		if err := recordHostClusterOn(obj); err != nil {
			return err
		}
	default:
		finalizers = slices.DeleteFunc(finalizers, func(f string) bool { return f == operatorv1alpha1.Finalizer })
	}
	obj.SetFinalizers(finalizers)
	if _, err := client.Update(ctx, obj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating finalizers of Karmada %s: %w", ref, err)
	}
	return nil
}
