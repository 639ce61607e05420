package provisioning

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

func withHostSecret(name, namespace string) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		k.Spec.HostCluster = &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Name: name, Namespace: namespace}}
	}
}

func withEtcdReplicas(n int32) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{
			CommonSettings: operatorv1alpha1.CommonSettings{Replicas: ptr.To(n)}}}
	}
}

func withExternalEtcd(k *operatorv1alpha1.Karmada) {
	k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{External: &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://etcd.example:2379"},
		SecretRef: operatorv1alpha1.LocalSecretReference{Name: "etcd"}}}
}

func withEtcdData(data *operatorv1alpha1.VolumeData) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{VolumeData: data}}
	}
}

var (
	onHostPath = &operatorv1alpha1.VolumeData{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/karmada-etcd"}}
	onClaim    = &operatorv1alpha1.VolumeData{VolumeClaim: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	onEmptyDir = &operatorv1alpha1.VolumeData{EmptyDir: &corev1.EmptyDirVolumeSource{}}
)

// storedEtcd is the etcd StatefulSet the API server holds for k: EtcdObjects' with the
// defaults the API server gives a claim template.
func storedEtcd(k *operatorv1alpha1.Karmada) *appsv1.StatefulSet {
	sts, _ := EtcdObjects(k, "")
	for i := range sts.Spec.VolumeClaimTemplates {
		c := &sts.Spec.VolumeClaimTemplates[i]
		c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		c.Status.Phase = corev1.ClaimPending
	}
	return sts
}

func TestHostClusterOf(t *testing.T) {
	assert.Equal(t, "local", hostClusterOf(karmada("foo")))
	assert.Equal(t, "local", hostClusterOf(karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.HostCluster = &operatorv1alpha1.HostCluster{APIEndpoint: "192.0.2.7"}
	})))
	// The Secret's namespace is the Karmada's when unset: both name the same Secret.
	assert.Equal(t, "Secret tenant1/host", hostClusterOf(karmada("foo", withHostSecret("host", ""))))
	assert.Equal(t, "Secret tenant1/host", hostClusterOf(karmada("foo", withHostSecret("host", "tenant1"))))
}

func TestCheckHostCluster(t *testing.T) {
	recorded := func(host string) func(*operatorv1alpha1.Karmada) {
		return func(k *operatorv1alpha1.Karmada) { k.Annotations = map[string]string{AnnotationHostCluster: host} }
	}
	assert.Empty(t, checkHostCluster(karmada("foo")), "nothing recorded yet")
	assert.Empty(t, checkHostCluster(karmada("foo", recorded("local"))))
	assert.Empty(t, checkHostCluster(karmada("foo", recorded("Secret tenant1/host"), withHostSecret("host", ""))))

	for _, k := range []*operatorv1alpha1.Karmada{
		karmada("foo", recorded("local"), withHostSecret("host", "")),
		karmada("foo", recorded("Secret tenant1/host"), withHostSecret("other", "")),
		karmada("foo", recorded("Secret tenant1/host")),
	} {
		problems := checkHostCluster(k)
		require.Len(t, problems, 1)
		assert.Regexp(t, `^spec\.hostCluster\.secretRef: names the host cluster ".*", but the instance was installed into ".*"`, problems[0])
		assert.Contains(t, problems[0], "create a new Karmada")
	}
}

func TestCheckEtcdReplicas(t *testing.T) {
	sts := func(replicas *int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "foo-karmada-etcd", Namespace: "tenant1", Labels: Labels("foo", Etcd.Name)},
			Spec: appsv1.StatefulSetSpec{Replicas: replicas}}
	}
	assert.Empty(t, checkEtcdReplicas(karmada("foo"), nil), "not installed yet")
	assert.Empty(t, checkEtcdReplicas(karmada("foo"), sts(ptr.To[int32](1))), "unset is 1")
	assert.Empty(t, checkEtcdReplicas(karmada("foo", withEtcdReplicas(1)), sts(nil)), "unset is 1")
	assert.Empty(t, checkEtcdReplicas(karmada("foo", withEtcdReplicas(3)), sts(ptr.To[int32](3))))
	foreign := sts(ptr.To[int32](1))
	foreign.Labels = nil
	assert.Empty(t, checkEtcdReplicas(karmada("foo", withEtcdReplicas(3)), foreign), "not the instance's")
	// An external etcd has no replicas of its own; asking for one while the local etcd exists is
	// checkEtcdKind's refusal.
	assert.Empty(t, checkEtcdReplicas(karmada("foo", withExternalEtcd), sts(ptr.To[int32](3))), "external etcd")
	assert.NotEmpty(t, checkEtcdKind(karmada("foo", withExternalEtcd), sts(ptr.To[int32](3)), ""), "external etcd")

	problems := checkEtcdReplicas(karmada("foo", withEtcdReplicas(3)), sts(nil))
	require.Len(t, problems, 1)
	assert.Equal(t, "spec.components.etcd.local.replicas: is 3, but the etcd StatefulSet tenant1/foo-karmada-etcd has 1, and changing them "+
		"would rebuild etcd's initial cluster and lose quorum: set it back to 1, or create a new Karmada with the replicas you need and move to it",
		problems[0])
}

func TestCheckEtcdImage(t *testing.T) {
	k := karmada("foo")
	running := func(k *operatorv1alpha1.Karmada) *appsv1.StatefulSet {
		sts, _ := EtcdObjects(k, "")
		sts.Labels = Labels("foo", Etcd.Name)
		return sts
	}
	upgraded := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{
			CommonSettings: operatorv1alpha1.CommonSettings{Image: operatorv1alpha1.Image{ImageTag: "3.5.17-0"}}}}
	})
	assert.Empty(t, checkEtcdImage(k, nil), "not installed yet")
	assert.Empty(t, checkEtcdImage(k, running(k)), "same image")
	problems := checkEtcdImage(upgraded, running(k))
	require.Len(t, problems, 1, "a new image for an etcd on an emptyDir")
	assert.Contains(t, problems[0], "spec.components.etcd.local: the image is registry.k8s.io/etcd:3.5.17-0, but etcd runs registry.k8s.io/etcd:"+defaultEtcdTag)
	assert.Contains(t, problems[0], "would lose every object of the control plane")

	onHostPath := running(k)
	for i, v := range onHostPath.Spec.Template.Spec.Volumes {
		if v.Name == volumeEtcdData {
			onHostPath.Spec.Template.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/etcd"}}
		}
	}
	assert.Empty(t, checkEtcdImage(upgraded, onHostPath), "the data outlives the pod")
}

// TestCheckEtcdKind: an external etcd is refused while the instance's local etcd exists, and a
// local etcd while the instance's API server stores in an external one.
func TestCheckEtcdKind(t *testing.T) {
	local, external := karmada("foo"), karmada("foo", withExternalEtcd)
	sts := storedEtcd(local)
	assert.Empty(t, checkEtcdKind(external, nil, ""), "no local etcd")
	assert.Empty(t, checkEtcdKind(external, nil, "https://etcd.example:2379"), "external from the start")
	assert.Empty(t, checkEtcdKind(local, nil, ""), "not installed yet")
	assert.Empty(t, checkEtcdKind(local, sts, etcdServers(local)))
	assert.Empty(t, checkEtcdKind(local, nil, "https://foo-karmada-etcd-client.tenant1.svc.example.org:2379"), "the local etcd in another DNS domain")

	problems := checkEtcdKind(external, sts, "")
	require.Len(t, problems, 1)
	assert.Equal(t, "spec.components.etcd.external: the instance keeps its data in its local etcd (StatefulSet tenant1/foo-karmada-etcd), "+
		"which switching to an external etcd would delete: set spec.components.etcd.local back; to move to an external etcd, "+
		"copy the data into it (etcdctl snapshot save, then etcdutl snapshot restore there) and create a new Karmada that names it", problems[0])

	problems = checkEtcdKind(local, nil, "https://etcd.example:2379")
	require.Len(t, problems, 1)
	assert.Equal(t, "spec.components.etcd.local: the instance keeps its data in the external etcd https://etcd.example:2379, "+
		"and a local etcd would start empty: set spec.components.etcd.external back; to move to a local etcd, "+
		"create a new Karmada with one and restore a snapshot of the external etcd (etcdctl snapshot save) into it", problems[0])
}

// TestCheckEtcdStorage: a spec whose etcd storage is not where the installed etcd keeps its
// data (another kind, claim template or host path) is refused naming the field; a change
// that keeps the data where it is passes.
func TestCheckEtcdStorage(t *testing.T) {
	bigger := onClaim.DeepCopy()
	bigger.VolumeClaim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	labelled := onClaim.DeepCopy()
	labelled.VolumeClaim.Labels = map[string]string{"tier": "etcd"}
	elsewhere := &operatorv1alpha1.VolumeData{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/etcd"}}
	typed := onHostPath.DeepCopy()
	typed.HostPath.Type = ptr.To(corev1.HostPathDirectoryOrCreate)
	sized := &operatorv1alpha1.VolumeData{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}

	refused := []struct {
		name     string
		has, ask *operatorv1alpha1.VolumeData
		problem  string
	}{
		{"hostPath to emptyDir", onHostPath, onEmptyDir, "spec.components.etcd.local.volumeData: is an emptyDir, but etcd keeps its data in a hostPath (/var/lib/karmada-etcd) " +
			"(StatefulSet tenant1/foo-karmada-etcd), and an emptyDir starts empty: set it back; to move etcd's data, take a snapshot (etcdctl snapshot save), " +
			"create a new Karmada with the storage you need and restore it there"},
		{"hostPath to unset", onHostPath, nil, "spec.components.etcd.local.volumeData: is an emptyDir, but etcd keeps its data in a hostPath"},
		{"volumeClaim to emptyDir", onClaim, onEmptyDir, "spec.components.etcd.local.volumeData: is an emptyDir, but etcd keeps its data in a volumeClaim"},
		{"volumeClaim to hostPath", onClaim, onHostPath, "spec.components.etcd.local.volumeData: is a hostPath (/var/lib/karmada-etcd), but etcd keeps its data in a volumeClaim " +
			"(StatefulSet tenant1/foo-karmada-etcd), and new storage starts empty: set it back"},
		{"emptyDir to volumeClaim", nil, onClaim, "spec.components.etcd.local.volumeData: is a volumeClaim, but etcd keeps its data in an emptyDir"},
		{"claim size", onClaim, bigger, "spec.components.etcd.local.volumeData.volumeClaim: differs from the claim template of the etcd StatefulSet " +
			"tenant1/foo-karmada-etcd, which cannot change and whose claims hold etcd's data: set it back; to move etcd's data"},
		{"claim labels", onClaim, labelled, "spec.components.etcd.local.volumeData.volumeClaim: differs from the claim template"},
		{"host path", onHostPath, elsewhere, `spec.components.etcd.local.volumeData.hostPath.path: is "/srv/etcd", but etcd keeps its data in "/var/lib/karmada-etcd" ` +
			"(StatefulSet tenant1/foo-karmada-etcd), and another directory starts empty: set it back"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			problems := checkEtcdStorage(karmada("foo", withEtcdData(c.ask)), storedEtcd(karmada("foo", withEtcdData(c.has))))
			require.Len(t, problems, 1)
			assert.True(t, strings.HasPrefix(problems[0], c.problem), "%s", problems[0])
		})
	}
	for _, c := range []struct {
		name     string
		has, ask *operatorv1alpha1.VolumeData
	}{
		{"unset to emptyDir", nil, onEmptyDir},
		{"emptyDir size", onEmptyDir, sized},
		{"same claim, stored with the defaults", onClaim, onClaim},
		{"hostPath type", onHostPath, typed},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Empty(t, checkEtcdStorage(karmada("foo", withEtcdData(c.ask)), storedEtcd(karmada("foo", withEtcdData(c.has)))))
		})
	}
	assert.Empty(t, checkEtcdStorage(karmada("foo", withEtcdData(onEmptyDir)), nil), "not installed yet")
}

// TestValidateKarmadaRefusesWhatWouldLoseData: an object that got around the CRD's rules is
// refused with a ValidationError naming the field; an installed object gets its host cluster
// recorded.
func TestValidateKarmadaRefusesWhatWouldLoseData(t *testing.T) {
	ctx := context.Background()
	setup := func(k *operatorv1alpha1.Karmada, installed ...runtime.Object) *Activities {
		k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
		k.Finalizers = []string{operatorv1alpha1.Finalizer}
		u, err := kube.ToUnstructured(k)
		require.NoError(t, err)
		etcdClient := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: k.Namespace},
			Data: map[string][]byte{"ca.crt": []byte("x"), "tls.crt": []byte("x"), "tls.key": []byte("x")}}
		return &Activities{Host: fake.NewClientset(append(installed, etcdClient)...), HostDynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, u)}
	}
	etcdWithReplicas := func(n int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: NamesFor("foo").Of(SuffixEtcd), Namespace: "tenant1",
			Labels: Labels("foo", Etcd.Name)}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(n)}}
	}
	ref := Ref{Namespace: "tenant1", Name: "foo"}

	// Installed before the annotation existed: recorded, and valid.
	a := setup(karmada("foo"), etcdWithReplicas(1))
	_, err := a.ValidateKarmada(ctx, ref)
	require.NoError(t, err)
	k, err := a.mustGet(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, "local", k.Annotations[AnnotationHostCluster])

	refused := func(a *Activities, field string) {
		t.Helper()
		sum, err := a.ValidateKarmada(ctx, ref)
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%v", err)
		assert.Equal(t, ErrValidation, appErr.Type())
		require.Len(t, sum.Invalid, 1)
		assert.Contains(t, sum.Invalid[0], field+": ")
	}
	refused(setup(karmada("foo", withEtcdReplicas(3)), etcdWithReplicas(1)), "spec.components.etcd.local.replicas")
	refused(setup(karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Annotations = map[string]string{AnnotationHostCluster: "Secret tenant1/old-host"}
	}), etcdWithReplicas(1)), "spec.hostCluster.secretRef")

	// Where etcd keeps the data: an external etcd for an instance with a local one, a local
	// etcd for one whose API server stores in an external one, another kind of storage.
	refused(setup(karmada("foo", withExternalEtcd), storedEtcd(karmada("foo"))), "spec.components.etcd.external")
	_, err = setup(karmada("foo", withExternalEtcd)).ValidateKarmada(ctx, ref)
	assert.NoError(t, err, "external from the start")
	refused(setup(karmada("foo"), APIServerDeployment(karmada("foo", withExternalEtcd), "")), "spec.components.etcd.local")
	_, err = setup(karmada("foo"), APIServerDeployment(karmada("foo"), "")).ValidateKarmada(ctx, ref)
	assert.NoError(t, err, "local etcd gone: installed again")
	refused(setup(karmada("foo", withEtcdData(onEmptyDir)), storedEtcd(karmada("foo", withEtcdData(onHostPath)))), "spec.components.etcd.local.volumeData")
	refused(setup(karmada("foo", withEtcdData(onEmptyDir)), storedEtcd(karmada("foo", withEtcdData(onClaim)))), "spec.components.etcd.local.volumeData")
}

// TestInstallEtcdKeepsTheData: InstallEtcd refuses, as ValidateKarmada does, a spec read after
// validation that would delete the local etcd or move its data, and leaves the StatefulSet as
// it was.
func TestInstallEtcdKeepsTheData(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		spec      *operatorv1alpha1.Karmada
		installed *operatorv1alpha1.Karmada
		field     string
	}{
		"local to external":       {karmada("foo", withExternalEtcd), karmada("foo"), "spec.components.etcd.external"},
		"hostPath to emptyDir":    {karmada("foo", withEtcdData(onEmptyDir)), karmada("foo", withEtcdData(onHostPath)), "spec.components.etcd.local.volumeData"},
		"volumeClaim to emptyDir": {karmada("foo"), karmada("foo", withEtcdData(onClaim)), "spec.components.etcd.local.volumeData"},
	} {
		t.Run(name, func(t *testing.T) {
			k := c.spec
			k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
			u, err := kube.ToUnstructured(k)
			require.NoError(t, err)
			sts := storedEtcd(c.installed)
			a := &Activities{Host: fake.NewClientset(sts), HostDynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), u)}
			err = a.InstallEtcd(ctx, InstallInput{Ref: Ref{Namespace: "tenant1", Name: "foo"}})
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			assert.Equal(t, ErrValidation, appErr.Type())
			assert.True(t, appErr.NonRetryable())
			assert.True(t, strings.HasPrefix(appErr.Message(), c.field+": "), "%s", appErr.Message())
			left, err := a.Host.AppsV1().StatefulSets("tenant1").Get(ctx, sts.Name, metav1.GetOptions{})
			require.NoError(t, err, "etcd's StatefulSet kept")
			assert.Equal(t, sts.Spec, left.Spec)
		})
	}
}

func TestAddKarmadaFinalizerRecordsTheHostCluster(t *testing.T) {
	ctx := context.Background()
	k := karmada("foo", withHostSecret("host", ""))
	k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	a := &Activities{HostDynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), u)}
	ref := Ref{Namespace: "tenant1", Name: "foo"}
	require.NoError(t, a.AddKarmadaFinalizer(ctx, ref))
	got, err := a.mustGet(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, []string{operatorv1alpha1.Finalizer}, got.Finalizers)
	assert.Equal(t, "Secret tenant1/host", got.Annotations[AnnotationHostCluster])
}
