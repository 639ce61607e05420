package provisioning

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// Removing what an instance installed, only objects with our labels: a component the spec no
// longer installs, and everything on Uninstall.

// removeComponent deletes the Deployment (or StatefulSet), Services and PDB of a component
// the spec no longer installs.
func (t *target) removeComponent(ctx context.Context, k *operatorv1alpha1.Karmada, c Component) error {
	sel := LabelManagedBy + "=" + ManagedBy + "," + LabelName + "=" + c.Name + "," + LabelInstance + "=" + k.Name
	for _, gvr := range []schema.GroupVersionResource{deployments, statefulSets, services, pdbs} {
		if _, err := t.deleteSelected(ctx, k.Namespace, gvr, sel); err != nil {
			return err
		}
	}
	return nil
}

// Resources the activities write in the host cluster.
var (
	deployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	services     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	secrets      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	pdbs         = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

// deleteOurs deletes one named object if it carries our managed-by label.
func (t *target) deleteOurs(ctx context.Context, k *operatorv1alpha1.Karmada, gvr schema.GroupVersionResource, name string) error {
	client := t.dyn.Resource(gvr).Namespace(k.Namespace)
	obj, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", gvr.Resource, k.Namespace, name, err)
	}
	if obj.GetLabels()[LabelManagedBy] != ManagedBy || obj.GetLabels()[LabelInstance] != k.Name {
		return nil
	}
	return t.a.deleteObject(ctx, client, obj)
}

func (a *Activities) deleteObject(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	uid := obj.GetUID()
	err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// deleteSelected deletes every object of gvr in namespace matching selector and returns how
// many there were.
func (t *target) deleteSelected(ctx context.Context, namespace string, gvr schema.GroupVersionResource, selector string) (int, error) {
	client := t.dyn.Resource(gvr).Namespace(namespace)
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, fmt.Errorf("listing %s in %s: %w", gvr.Resource, namespace, err)
	}
	for i := range list.Items {
		if err := t.a.deleteObject(ctx, client, &list.Items[i]); err != nil {
			return 0, err
		}
	}
	return len(list.Items), nil
}

// Uninstall deletes every object of the instance that carries our managed-by and instance
// labels (workloads, Services, PDBs, Secrets and kubeconfig Secrets) in its host cluster and,
// for a remote host cluster, the local copies of its Secrets; it returns how many. Objects
// without our labels are never touched.
func (a *Activities) Uninstall(ctx context.Context, ref Ref) (int, error) {
	if !a.provisions(ref.Namespace) {
		return 0, notProvisionedForRemoval(ref)
	}
	_, t, err := a.instance(ctx, ref)
	if err != nil {
		return 0, err
	}
	clusters := []*target{t}
	if t.remote {
		clusters = append(clusters, a.local())
	}
	total := 0
	for _, c := range clusters {
		for _, gvr := range []schema.GroupVersionResource{deployments, statefulSets, services, pdbs, secrets} {
			n, err := c.deleteSelected(ctx, ref.Namespace, gvr, InstanceSelector(ref.Name))
			if err != nil {
				return total, err
			}
			total += n
			heartbeat(ctx, total)
		}
	}
	return total, nil
}
