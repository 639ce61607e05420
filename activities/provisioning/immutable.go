package provisioning

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

// The changes that would lose an instance's data, refused when an object gets around the
// CRD's transition rules (e.g. one created or changed under an older CRD without them): a
// new host cluster would start with an empty etcd and a new CA and leave the old one as it
// was; new etcd replicas would rebuild etcd's initial cluster and lose quorum; the changes of
// where etcd keeps its data are etcdchanges.go's.

// AnnotationHostCluster, on a Karmada object, records the host cluster the instance was
// installed into (see hostClusterOf), so that a later spec naming another is refused.
const AnnotationHostCluster = "karmadaflow.io/host-cluster"

// hostClusterOf names the host cluster k's spec installs into: "local" for the cluster
// karmadaflow runs against, else "Secret <namespace>/<name>" of spec.hostCluster.secretRef.
func hostClusterOf(k *operatorv1alpha1.Karmada) string {
	h := k.Spec.HostCluster
	if h == nil || h.SecretRef == nil {
		return "local"
	}
	ns := h.SecretRef.Namespace
	if ns == "" {
		ns = k.Namespace
	}
	return "Secret " + ns + "/" + h.SecretRef.Name
}

// checkHostCluster reports a spec whose host cluster is not the one recorded at install.
func checkHostCluster(k *operatorv1alpha1.Karmada) []string {
	recorded, ok := k.Annotations[AnnotationHostCluster]
	if !ok || recorded == hostClusterOf(k) {
		return nil
	}
	return []string{fmt.Sprintf("spec.hostCluster.secretRef: names the host cluster %q, but the instance was installed into %q "+
		"(annotation %s), which holds its etcd and certificates: set it back, or create a new Karmada on the host cluster you need and move to it",
		hostClusterOf(k), recorded, AnnotationHostCluster)}
}

// checkEtcdReplicas reports a spec whose local etcd replicas differ from those of the
// instance's etcd StatefulSet (nil when there is none).
func checkEtcdReplicas(k *operatorv1alpha1.Karmada, sts *appsv1.StatefulSet) []string {
	if sts == nil || externalEtcd(k) || sts.Labels[LabelManagedBy] != ManagedBy {
		return nil
	}
	want, have := *replicas(k, Etcd), ptr.Deref(sts.Spec.Replicas, 1)
	if want == have {
		return nil
	}
	return []string{fmt.Sprintf("spec.components.etcd.local.replicas: is %d, but the etcd StatefulSet %s/%s has %d, and changing them "+
		"would rebuild etcd's initial cluster and lose quorum: set it back to %d, or create a new Karmada with the replicas you need and move to it",
		want, sts.Namespace, sts.Name, have, have)}
}

// checkInstalled reports the changes of k's spec that its installed instance cannot take.
func (a *Activities) checkInstalled(ctx context.Context, k *operatorv1alpha1.Karmada) ([]string, error) {
	if problems := checkHostCluster(k); len(problems) > 0 {
		return problems, nil // the spec's host is not the instance's: its etcd is elsewhere
	}
	t, err := a.targetOf(ctx, k)
	if err != nil {
		// The first install step reports an unreachable host cluster, with its retries.
		return nil, nil
	}
	return t.etcdProblems(ctx, k)
}

// dataInEmptyDir reports whether the etcd of sts keeps its data in an emptyDir, which a new
// pod starts empty: rolling such an etcd loses every object of the control plane.
func dataInEmptyDir(sts *appsv1.StatefulSet) bool {
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == volumeEtcdData {
			return v.EmptyDir != nil
		}
	}
	return false
}

// checkEtcdImage reports a new etcd image for an etcd whose data is in an emptyDir: its
// rollout would start every member empty. (InstallEtcd never rolls such an etcd for its own
// reasons either.)
func checkEtcdImage(k *operatorv1alpha1.Karmada, sts *appsv1.StatefulSet) []string {
	if sts == nil || sts.Labels[LabelManagedBy] != ManagedBy || !dataInEmptyDir(sts) {
		return nil
	}
	running := ""
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == Etcd.Name {
			running = c.Image
		}
	}
	if want := Image(k, Etcd); running == "" || want == running {
		return nil
	}
	return []string{fmt.Sprintf("spec.components.etcd.local: the image is %s, but etcd runs %s and keeps its data in an emptyDir "+
		"(spec.components.etcd.local.volumeData), where a new pod starts empty: rolling it would lose every object of the control plane. "+
		"Set the image back, or create a new Karmada whose etcd has a volumeClaim or hostPath and move to it", Image(k, Etcd), running)}
}

// recordHostCluster records k's host cluster on k unless one is recorded. ValidateKarmada
// calls it for objects that already hold the finalizer, since it is the one activity every
// pass runs: instances installed before the annotation existed get it on their next pass
// (workflow code, which would otherwise have to call a new activity, stays as it is). The
// resourceVersion makes it fail rather than overwrite a concurrent change.
func (a *Activities) recordHostCluster(ctx context.Context, k *operatorv1alpha1.Karmada) error {
	if _, ok := k.Annotations[AnnotationHostCluster]; ok {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": k.ResourceVersion,
		"annotations":     map[string]string{AnnotationHostCluster: hostClusterOf(k)},
	}})
	if err != nil {
		return err
	}
	_, err = a.HostDynamic.Resource(kube.Karmadas).Namespace(k.Namespace).Patch(ctx, k.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording the host cluster of Karmada %s/%s: %w", k.Namespace, k.Name, err)
	}
	if k.Annotations == nil {
		k.Annotations = map[string]string{}
	}
	k.Annotations[AnnotationHostCluster] = hostClusterOf(k)
	return nil
}

// recordHostClusterOn sets AnnotationHostCluster on obj, a Karmada, unless it is set.
func recordHostClusterOn(obj *unstructured.Unstructured) error {
	var k operatorv1alpha1.Karmada
	if err := kube.FromUnstructured(obj, &k); err != nil {
		return err
	}
	annotations := obj.GetAnnotations()
	if _, ok := annotations[AnnotationHostCluster]; ok {
		return nil
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationHostCluster] = hostClusterOf(&k)
	obj.SetAnnotations(annotations)
	return nil
}
