package provisioning

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	external := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{External: &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://e:2379"}}}
	})
	assert.Empty(t, checkEtcdReplicas(external, sts(ptr.To[int32](3))), "external etcd")

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

// TestValidateKarmadaRefusesWhatWouldLoseData: an object that got around the CRD's rules is
// refused with a ValidationError naming the field; an installed object gets its host cluster
// recorded.
func TestValidateKarmadaRefusesWhatWouldLoseData(t *testing.T) {
	ctx := context.Background()
	setup := func(k *operatorv1alpha1.Karmada, etcdReplicas int32) *Activities {
		k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
		k.Finalizers = []string{operatorv1alpha1.Finalizer}
		u, err := kube.ToUnstructured(k)
		require.NoError(t, err)
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: NamesFor(k.Name).Of(SuffixEtcd), Namespace: k.Namespace,
			Labels: Labels(k.Name, Etcd.Name)}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(etcdReplicas)}}
		return &Activities{Host: fake.NewClientset(sts), HostDynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, u)}
	}
	ref := Ref{Namespace: "tenant1", Name: "foo"}

	// Installed before the annotation existed: recorded, and valid.
	a := setup(karmada("foo"), 1)
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
	refused(setup(karmada("foo", withEtcdReplicas(3)), 1), "spec.components.etcd.local.replicas")
	refused(setup(karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Annotations = map[string]string{AnnotationHostCluster: "Secret tenant1/old-host"}
	}), 1), "spec.hostCluster.secretRef")
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
