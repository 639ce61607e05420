package provisioning

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// The changes of etcd that an installed instance cannot take, because its data is in the etcd
// it has: switching between a local and an external etcd (InstallEtcd would delete the local
// one, or start an empty one), and moving a local etcd's data elsewhere (a StatefulSet's claim
// templates cannot change, and an emptyDir or another host path starts empty). The CRD's
// transition rules refuse the same changes; these checks hold for objects that got around
// them, and run again in InstallEtcd, so that a change made after ValidateKarmada read the
// object never reaches etcd.

// etcdProblems reports the changes of k's spec that the etcd installed in t cannot take.
func (t *target) etcdProblems(ctx context.Context, k *operatorv1alpha1.Karmada) ([]string, error) {
	sts, err := t.installedEtcd(ctx, k)
	if err != nil {
		return nil, err
	}
	if externalEtcd(k) {
		return checkEtcdKind(k, sts, ""), nil
	}
	if sts != nil {
		problems := checkEtcdReplicas(k, sts)
		problems = append(problems, checkEtcdStorage(k, sts)...)
		return append(problems, checkEtcdImage(k, sts)...), nil
	}
	servers, err := t.apiServerEtcdServers(ctx, k)
	if err != nil {
		return nil, err
	}
	return checkEtcdKind(k, nil, servers), nil
}

// installedEtcd is the etcd StatefulSet of k's instance, nil when there is none of ours.
func (t *target) installedEtcd(ctx context.Context, k *operatorv1alpha1.Karmada) (*appsv1.StatefulSet, error) {
	name := NamesFor(k.Name).Of(SuffixEtcd)
	sts, err := t.kube.AppsV1().StatefulSets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading StatefulSet %s/%s: %w", k.Namespace, name, err)
	}
	if !ours(sts.Labels, k) {
		return nil, nil
	}
	return sts, nil
}

// apiServerEtcdServers is the --etcd-servers of the API server Deployment of k's instance,
// empty when there is none of ours.
func (t *target) apiServerEtcdServers(ctx context.Context, k *operatorv1alpha1.Karmada) (string, error) {
	name := NamesFor(k.Name).Of(SuffixAPIServer)
	d, err := t.kube.AppsV1().Deployments(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Deployment %s/%s: %w", k.Namespace, name, err)
	}
	if !ours(d.Labels, k) {
		return "", nil
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != APIServerContainer {
			continue
		}
		for _, arg := range c.Command {
			if servers, ok := strings.CutPrefix(arg, "--etcd-servers="); ok {
				return servers, nil
			}
		}
	}
	return "", nil
}

// ours tells whether labels are those karmadaflow gives the objects of k's instance.
func ours(labels map[string]string, k *operatorv1alpha1.Karmada) bool {
	return labels[LabelManagedBy] == ManagedBy && labels[LabelInstance] == k.Name
}

// checkEtcdKind reports a switch between a local and an external etcd: an external etcd
// asked for while the instance's local etcd StatefulSet sts exists, or a local etcd asked for
// while the instance's API server stores in other etcd servers (apiServerEtcd, its
// --etcd-servers; empty when there is no API server).
func checkEtcdKind(k *operatorv1alpha1.Karmada, sts *appsv1.StatefulSet, apiServerEtcd string) []string {
	if externalEtcd(k) {
		if sts == nil {
			return nil
		}
		return []string{fmt.Sprintf("spec.components.etcd.external: the instance keeps its data in its local etcd (StatefulSet %s/%s), "+
			"which switching to an external etcd would delete: set spec.components.etcd.local back; to move to an external etcd, "+
			"copy the data into it (etcdctl snapshot save, then etcdutl snapshot restore there) and create a new Karmada that names it",
			sts.Namespace, sts.Name)}
	}
	if apiServerEtcd == "" || servesLocalEtcd(k, apiServerEtcd) {
		return nil
	}
	return []string{fmt.Sprintf("spec.components.etcd.local: the instance keeps its data in the external etcd %s, "+
		"and a local etcd would start empty: set spec.components.etcd.external back; to move to a local etcd, "+
		"create a new Karmada with one and restore a snapshot of the external etcd (etcdctl snapshot save) into it", apiServerEtcd)}
}

// servesLocalEtcd tells whether servers, an API server's --etcd-servers, name the client
// Service of k's local etcd (in any DNS domain).
func servesLocalEtcd(k *operatorv1alpha1.Karmada, servers string) bool {
	return strings.HasPrefix(servers, "https://"+NamesFor(k.Name).Of(SuffixEtcdClient)+"."+k.Namespace+".svc.")
}

// etcdStorage is where an etcd StatefulSet keeps its data: the claim template of its data
// volume, or the volume itself (a hostPath or an emptyDir).
type etcdStorage struct {
	claim  *corev1.PersistentVolumeClaim
	volume *corev1.VolumeSource
}

func etcdStorageOf(sts *appsv1.StatefulSet) etcdStorage {
	for i, c := range sts.Spec.VolumeClaimTemplates {
		if c.Name == volumeEtcdData {
			return etcdStorage{claim: &sts.Spec.VolumeClaimTemplates[i]}
		}
	}
	for i, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == volumeEtcdData {
			return etcdStorage{volume: &sts.Spec.Template.Spec.Volumes[i].VolumeSource}
		}
	}
	return etcdStorage{}
}

// kind is the spec's name of the storage: volumeClaim, hostPath or emptyDir.
func (s etcdStorage) kind() string {
	switch {
	case s.claim != nil:
		return "volumeClaim"
	case s.volume != nil && s.volume.HostPath != nil:
		return "hostPath"
	case s.volume != nil && s.volume.EmptyDir != nil:
		return "emptyDir"
	}
	return "none"
}

func (s etcdStorage) String() string {
	if s.kind() == "hostPath" {
		return fmt.Sprintf("a hostPath (%s)", s.volume.HostPath.Path)
	}
	if s.kind() == "emptyDir" {
		return "an emptyDir"
	}
	return "a " + s.kind()
}

// checkEtcdStorage reports a spec whose etcd storage is not where the instance's etcd
// StatefulSet sts keeps its data: another kind, another claim template or another host path.
func checkEtcdStorage(k *operatorv1alpha1.Karmada, sts *appsv1.StatefulSet) []string {
	if sts == nil || !ours(sts.Labels, k) {
		return nil
	}
	want, _ := EtcdObjects(k, "")
	asked, has := etcdStorageOf(want), etcdStorageOf(sts)
	if has.kind() == "none" {
		return nil // no data volume karmadaflow knows of: nothing to compare
	}
	const todo = "; to move etcd's data, take a snapshot (etcdctl snapshot save), create a new Karmada with the storage you need and restore it there"
	field := "spec.components.etcd.local.volumeData"
	switch {
	case asked.kind() != has.kind():
		return []string{fmt.Sprintf("%s: is %s, but etcd keeps its data in %s (StatefulSet %s/%s), and %s: set it back%s",
			field, asked, has, sts.Namespace, sts.Name, newStorageLoss(asked), todo)}
	case asked.claim != nil && !sameClaimTemplate(asked.claim, has.claim):
		return []string{fmt.Sprintf("%s.volumeClaim: differs from the claim template of the etcd StatefulSet %s/%s, "+
			"which cannot change and whose claims hold etcd's data: set it back%s", field, sts.Namespace, sts.Name, todo)}
	case asked.kind() == "hostPath" && asked.volume.HostPath.Path != has.volume.HostPath.Path:
		return []string{fmt.Sprintf("%s.hostPath.path: is %q, but etcd keeps its data in %q (StatefulSet %s/%s), and another directory "+
			"starts empty: set it back%s", field, asked.volume.HostPath.Path, has.volume.HostPath.Path, sts.Namespace, sts.Name, todo)}
	}
	return nil
}

// newStorageLoss says why moving etcd to the storage asked for loses its data.
func newStorageLoss(asked etcdStorage) string {
	if asked.kind() == "emptyDir" {
		return "an emptyDir starts empty"
	}
	return "new storage starts empty"
}

// sameClaimTemplate tells whether the claim template asked for is the one of the StatefulSet,
// which the API server stored with the defaults of a claim's spec (volumeMode Filesystem) and
// status (phase Pending).
func sameClaimTemplate(asked, has *corev1.PersistentVolumeClaim) bool {
	a, h := asked.DeepCopy(), has.DeepCopy()
	for _, c := range []*corev1.PersistentVolumeClaim{a, h} {
		if c.Spec.VolumeMode == nil {
			c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	}
	return equality.Semantic.DeepEqual(a.Spec, h.Spec) && equality.Semantic.DeepEqual(a.Labels, h.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, h.Annotations)
}
