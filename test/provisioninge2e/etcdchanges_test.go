package provisioninge2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/apiserverpod"
)

// nsHostAccess is the namespace whose Karmadas the workers allow host access
// (--host-access-namespaces): its instance keeps etcd's data on a hostPath.
const nsHostAccess = "tenant-hostaccess"

// TestEtcdChangesThatLoseDataAreRefused: on an installed instance whose etcd keeps its data on
// a hostPath, switching to an external etcd and moving the data to an emptyDir are refused by
// the API server (the CRD's rules) and, for an object that gets around the rules (the CRD
// without them), by the workflow: Ready=False with a ValidationError for that generation that
// names the field and says what to do, etcd's StatefulSet and pod and the API server as they
// were, and an object written before still read through the instance's API server. Set back,
// the instance is Ready again.
func TestEtcdChangesThatLoseDataAreRefused(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, nsHostAccess)
	const name = "keep"
	localEtcd := &operatorv1alpha1.Etcd{Local: &operatorv1alpha1.LocalEtcd{VolumeData: &operatorv1alpha1.VolumeData{
		HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/karmadaflow-e2e/" + ns + "/etcd", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}}
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{
			Etcd:             localEtcd.DeepCopy(),
			KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort},
		}},
	})
	t.Cleanup(func() { deleteKarmada(t, ns, name) })
	server := startAPIServerPod(t, ns, name)
	defer server.Stop()
	waitReady(t, ns, name, metav1.ConditionTrue, operatorv1alpha1.ReasonCompleted, 3*time.Minute)

	// What must outlive the refused changes: an object of the control plane, etcd as it runs,
	// and the API server that stores in it.
	admin := adminClient(t, ns, name)
	canary := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-before", Namespace: "default"}, Data: map[string]string{"a": "b"}}
	_, err := admin.CoreV1().ConfigMaps("default").Create(ctx, canary, metav1.CreateOptions{})
	require.NoError(t, err)
	etcdBefore := etcdStatefulSet(t, ns, name)
	require.Equal(t, localEtcd.Local.VolumeData.HostPath.Path, etcdDataVolume(etcdBefore).HostPath.Path)
	podBefore := etcdPodUID(t, ns, name)
	apiServerBefore, err := apiServerDeployment(t, ns, name)
	require.NoError(t, err)
	unchanged := func(change string) {
		t.Helper()
		etcd := etcdStatefulSet(t, ns, name)
		assert.Equal(t, etcdBefore.UID, etcd.UID, "%s: etcd's StatefulSet kept", change)
		assert.Equal(t, etcdBefore.Generation, etcd.Generation, "%s: etcd's StatefulSet not changed", change)
		assert.Equal(t, etcdBefore.Spec.Template.Spec.Volumes, etcd.Spec.Template.Spec.Volumes, "%s: etcd's data volume", change)
		assert.Equal(t, podBefore, etcdPodUID(t, ns, name), "%s: etcd's pod kept", change)
		d, err := apiServerDeployment(t, ns, name)
		require.NoError(t, err)
		assert.Equal(t, apiServerBefore.Generation, d.Generation, "%s: the API server's Deployment not changed", change)
		got, err := admin.CoreV1().ConfigMaps("default").Get(ctx, canary.Name, metav1.GetOptions{})
		if assert.NoError(t, err, "%s: the object written before, through the instance's API server", change) {
			assert.Equal(t, canary.Data, got.Data)
		}
	}

	// The external etcd the switch would name, with its client certificate, so that the switch
	// is the one thing wrong with the spec.
	_, err = testEnv.Host.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "external-etcd"},
		Data: map[string][]byte{"ca.crt": []byte("ca"), "tls.crt": []byte("crt"), "tls.key": []byte("key")}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	toExternal := func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.Etcd = &operatorv1alpha1.Etcd{External: &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://etcd.example:2379"},
			SecretRef: operatorv1alpha1.LocalSecretReference{Name: "external-etcd"}}}
	}
	toEmptyDir := func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.Etcd.Local.VolumeData = &operatorv1alpha1.VolumeData{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	setBack := func(k *operatorv1alpha1.Karmada) { k.Spec.Components.Etcd = localEtcd.DeepCopy() }

	// (1) The API server refuses both.
	for change, message := range map[string]string{
		"external": "spec.components.etcd cannot change between local and external after creation",
		"emptyDir": "spec.components.etcd.local.volumeData cannot change between volumeClaim, hostPath and emptyDir after creation",
	} {
		mutate := map[string]func(*operatorv1alpha1.Karmada){"external": toExternal, "emptyDir": toEmptyDir}[change]
		err := tryUpdateKarmada(ns, name, mutate)
		require.Error(t, err, change)
		assert.True(t, apierrors.IsInvalid(err), "%s: %v", change, err)
		assert.Contains(t, err.Error(), message)
		assert.Contains(t, err.Error(), "set it back")
	}

	// (2) An object that gets around the rules (the CRD without them) is refused by the
	// workflow, for the generation that asks for it.
	withoutKarmadaRules(t)
	for _, c := range []struct {
		change string
		mutate func(*operatorv1alpha1.Karmada)
		field  string
		todo   string
	}{
		{"external", toExternal, "spec.components.etcd.external", "set spec.components.etcd.local back; to move to an external etcd, copy the data into it"},
		{"emptyDir", toEmptyDir, "spec.components.etcd.local.volumeData", "an emptyDir starts empty: set it back; to move etcd's data, take a snapshot"},
	} {
		eventually(t, time.Minute, func() error { return tryUpdateKarmada(ns, name, c.mutate) }) // once the rules are gone
		cond := waitValidationError(t, ns, name, c.field)
		assert.Contains(t, cond.Message, c.todo, c.change)
		t.Logf("%s refused: %s", c.change, cond.Message)
		unchanged(c.change)

		updateKarmada(t, ns, name, setBack)
		k, _, err := getKarmada(ns, name)
		require.NoError(t, err)
		eventually(t, 2*time.Minute, func() error { return readyFor(ns, name, k.Generation) })
		unchanged(c.change + ", set back")
	}
}

// TestHostAccessRefused: a Karmada asking for a privileged sidecar, and one asking for a
// hostPath volume, in a namespace the workers do not allow host access, are refused with a
// ValidationError naming the field and the flag, and no Deployment gets either; in the
// namespace they allow, the privileged sidecar reaches the API server's Deployment.
func TestHostAccessRefused(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-invalid")
	privileged := func() *operatorv1alpha1.KarmadaAPIServer {
		return &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort, SidecarContainers: []corev1.Container{{Name: "kms",
			Image: "kms:1", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
	}
	hostPath := &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort, ExtraVolumes: []corev1.Volume{{Name: "root",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}}
	cases := []struct {
		name  string
		api   *operatorv1alpha1.KarmadaAPIServer
		field string
	}{
		{"privileged-sidecar", privileged(), "spec.components.karmadaAPIServer.sidecarContainers[0].securityContext.privileged"},
		{"hostpath-volume", hostPath, "spec.components.karmadaAPIServer.extraVolumes[0].hostPath"},
	}
	for _, c := range cases {
		createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
			Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: c.api}}})
		t.Cleanup(func() { deleteKarmada(t, ns, c.name) })
	}
	for _, c := range cases {
		cond := waitValidationError(t, ns, c.name, c.field)
		assert.Contains(t, cond.Message, "which only the Karmadas of the namespaces in the worker's --host-access-namespaces may ask for (not "+ns+")", c.name)
		deployments, err := testEnv.Host.Client().AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: prov.InstanceSelector(c.name)})
		require.NoError(t, err)
		assert.Empty(t, deployments.Items, "%s: Deployments made for a refused spec", c.name)
	}
	deployments, err := testEnv.Host.Client().AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, d := range deployments.Items {
		for _, v := range d.Spec.Template.Spec.Volumes {
			assert.Nil(t, v.HostPath, "Deployment %s mounts the node's %s", d.Name, v.Name)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			assert.False(t, c.SecurityContext != nil && ptr.Deref(c.SecurityContext.Privileged, false), "Deployment %s has a privileged %s", d.Name, c.Name)
		}
	}

	// Allowed: the same sidecar reaches the API server's Deployment.
	allowed := hostNamespace(t, nsHostAccess)
	const name = "privileged-allowed"
	createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: allowed},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: privileged()}}})
	t.Cleanup(func() { deleteKarmada(t, allowed, name) })
	eventually(t, 2*time.Minute, func() error {
		d, err := apiServerDeployment(t, allowed, name)
		if err != nil {
			return err
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "kms" && c.SecurityContext != nil && ptr.Deref(c.SecurityContext.Privileged, false) {
				return nil
			}
		}
		return fmt.Errorf("no privileged sidecar in Deployment %s", d.Name)
	})
}

// startAPIServerPod plays the NodePort instance's API server, as in TestNodePortInstall, once
// its Service has a node port.
func startAPIServerPod(t *testing.T, ns, name string) *apiserverpod.Server {
	t.Helper()
	ctx := context.Background()
	var nodePort int32
	eventually(t, 2*time.Minute, func() error {
		service, err := testEnv.Host.Client().CoreV1().Services(ns).Get(ctx, prov.NamesFor(name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
		if err == nil && (len(service.Spec.Ports) == 0 || service.Spec.Ports[0].NodePort == 0) {
			err = fmt.Errorf("Service %s has no node port yet", service.Name)
		}
		if err == nil {
			nodePort = service.Spec.Ports[0].NodePort
		}
		return err
	})
	server, err := apiserverpod.Start(ctx, testEnv, ns, name, nodePort)
	require.NoError(t, err)
	return server
}

// adminClient reaches the instance's API server with the admin kubeconfig the workflow wrote.
func adminClient(t *testing.T, ns, name string) kubernetes.Interface {
	t.Helper()
	secret, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(context.Background(), prov.NamesFor(name).Of(prov.SuffixAdminConfig), metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[prov.KeyKubeconfig])
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return client
}

func etcdStatefulSet(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	sts, err := testEnv.Host.Client().AppsV1().StatefulSets(ns).Get(context.Background(), prov.NamesFor(name).Of(prov.SuffixEtcd), metav1.GetOptions{})
	require.NoError(t, err)
	return sts
}

// etcdDataVolume is the volume etcd keeps its data in (etcd-data, as EtcdObjects names it).
func etcdDataVolume(sts *appsv1.StatefulSet) corev1.VolumeSource {
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "etcd-data" {
			return v.VolumeSource
		}
	}
	return corev1.VolumeSource{}
}

func etcdPodUID(t *testing.T, ns, name string) types.UID {
	t.Helper()
	pod, err := testEnv.Host.Client().CoreV1().Pods(ns).Get(context.Background(), prov.NamesFor(name).Of(prov.SuffixEtcd)+"-0", metav1.GetOptions{})
	require.NoError(t, err)
	return pod.UID
}

// tryUpdateKarmada applies mutate to the current object and writes it once, returning the
// API server's answer.
func tryUpdateKarmada(ns, name string, mutate func(*operatorv1alpha1.Karmada)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		k, _, err := getKarmada(ns, name)
		if err != nil {
			return err
		}
		mutate(k)
		k.TypeMeta = metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"}
		u, err := kube.ToUnstructured(k)
		if err != nil {
			return err
		}
		delete(u.Object, "status")
		_, err = karmadas(ns).Update(context.Background(), u, metav1.UpdateOptions{})
		return err
	})
}

// readyFor tells whether the Karmada is Ready (Completed) for generation.
func readyFor(ns, name string, generation int64) error {
	k, _, err := getKarmada(ns, name)
	if err != nil {
		return err
	}
	for _, c := range k.Status.Conditions {
		if c.Type == operatorv1alpha1.ConditionReady && c.Status == metav1.ConditionTrue && c.Reason == operatorv1alpha1.ReasonCompleted &&
			c.ObservedGeneration == generation {
			return nil
		}
	}
	return fmt.Errorf("Karmada %s/%s not Ready for generation %d: %+v", ns, name, generation, k.Status.Conditions)
}

// withoutKarmadaRules removes the rules on the whole object from the host cluster's Karmada CRD,
// as an older CRD without them would be, and puts them back when the test ends.
func withoutKarmadaRules(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crds := testEnv.Host.Dynamic().Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	const crd = "karmadas.operator.karmada.io"
	path := []string{"schema", "openAPIV3Schema", "x-kubernetes-validations"}
	var rules []any
	update := func(change func(version map[string]any)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := crds.Get(ctx, crd, metav1.GetOptions{})
			if err != nil {
				return err
			}
			versions, _, err := unstructured.NestedSlice(obj.Object, "spec", "versions")
			if err != nil || len(versions) != 1 {
				return fmt.Errorf("versions of CRD %s: %d, %v", crd, len(versions), err)
			}
			change(versions[0].(map[string]any))
			if err := unstructured.SetNestedSlice(obj.Object, versions, "spec", "versions"); err != nil {
				return err
			}
			_, err = crds.Update(ctx, obj, metav1.UpdateOptions{})
			return err
		})
	}
	require.NoError(t, update(func(version map[string]any) {
		rules, _, _ = unstructured.NestedSlice(version, path...)
		unstructured.RemoveNestedField(version, path...)
	}))
	require.NotEmpty(t, rules, "the CRD has rules on the whole object")
	t.Cleanup(func() {
		assert.NoError(t, update(func(version map[string]any) {
			assert.NoError(t, unstructured.SetNestedSlice(version, rules, path...))
		}), "restore the rules of CRD %s", crd)
	})
}
