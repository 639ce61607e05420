package karmadae2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

const (
	karmadaCRD          = "karmadas.operator.karmada.io"
	secretRefRefused    = "spec.hostCluster.secretRef cannot be set, changed or removed after creation"
	etcdReplicasRefused = "spec.components.etcd.local.replicas cannot change after creation"
)

// TestImmutableFields: on an installed instance, a change of the host cluster or of the etcd
// replicas is refused by the API server (the CRD's transition rules) with a message saying
// what to do; with the rules removed from the CRD, the workflow refuses the same changes
// (Ready=False, ValidationError, naming the field) and leaves etcd as it is, and the instance
// is Ready again once the spec is set back.
func TestImmutableFields(t *testing.T) {
	in := instance{namespace: nsImmutable, name: "immutable",
		components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}}}
	step := timer(t)
	createKarmada(t, in)
	waitKarmadaReady(t, in, 10*time.Minute)
	if t.Failed() {
		t.FailNow()
	}
	step("Ready")
	k, _, err := getKarmada(in)
	require.NoError(t, err)
	assert.Equal(t, "local", k.Annotations[prov.AnnotationHostCluster], "host cluster recorded at install")

	ctx := context.Background()
	karmadas := testEnv.Host.Dynamic().Resource(kube.Karmadas).Namespace(in.namespace)
	patch := func(spec string, dryRun bool) error {
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := karmadas.Patch(ctx, in.name, types.MergePatchType, []byte(`{"spec":`+spec+`}`), opts)
		return err
	}
	const (
		setSecretRef  = `{"hostCluster":{"secretRef":{"name":"another-host"}}}`
		noSecretRef   = `{"hostCluster":null}`
		threeReplicas = `{"components":{"etcd":{"local":{"replicas":3}}}}`
		unsetReplicas = `{"components":{"etcd":null}}`
	)

	// (1) The API server refuses both, and takes what changes nothing.
	for spec, message := range map[string]string{setSecretRef: secretRefRefused, threeReplicas: etcdReplicasRefused} {
		err := patch(spec, false)
		require.Error(t, err, spec)
		assert.True(t, apierrors.IsInvalid(err), "%s: %v", spec, err)
		assert.Contains(t, err.Error(), message)
		assert.Contains(t, err.Error(), "create a new Karmada")
	}
	assert.NoError(t, patch(`{"components":{"etcd":{"local":{"replicas":1}}}}`, true), "unset replicas is 1")
	assert.NoError(t, patch(`{"hostCluster":{"networking":{"dnsDomain":"cluster.local"}}}`, true), "networking may change")
	step("changes refused by the API server")

	// (2) An object that gets around the rules: the CRD without them.
	stripValidations(t)
	require.NoError(t, poll(time.Minute, func() (bool, error) { return patch(threeReplicas, false) == nil, nil }),
		"etcd replicas accepted once the CRD has no rules")
	waitValidationError(t, in, "spec.components.etcd.local.replicas")
	etcd, err := testEnv.Host.Client().AppsV1().StatefulSets(in.namespace).Get(ctx, prov.NamesFor(in.name).Of(prov.SuffixEtcd), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), ptr.Deref(etcd.Spec.Replicas, 1), "etcd StatefulSet replicas unchanged")
	require.NoError(t, patch(unsetReplicas, false))
	waitKarmadaReady(t, in, 3*time.Minute)
	step("etcd replicas refused by the workflow, then Ready again")

	require.NoError(t, patch(setSecretRef, false))
	waitValidationError(t, in, "spec.hostCluster.secretRef")
	require.NoError(t, patch(noSecretRef, false))
	waitKarmadaReady(t, in, 3*time.Minute)
	step("host cluster refused by the workflow, then Ready again")

	// (3) A new image for an etcd whose data is in an emptyDir (the default) would start it
	// empty: refused, and etcd keeps running the pod it has.
	etcdPod := func() types.UID {
		pod, err := testEnv.Host.Client().CoreV1().Pods(in.namespace).Get(ctx, prov.NamesFor(in.name).Of(prov.SuffixEtcd)+"-0", metav1.GetOptions{})
		require.NoError(t, err)
		return pod.UID
	}
	before := etcdPod()
	require.NoError(t, patch(`{"components":{"etcd":{"local":{"imageTag":"3.5.17-0"}}}}`, false))
	waitValidationError(t, in, "spec.components.etcd.local")
	etcd, err = testEnv.Host.Client().AppsV1().StatefulSets(in.namespace).Get(ctx, prov.NamesFor(in.name).Of(prov.SuffixEtcd), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, etcd.Spec.Template.Spec.Containers[0].Image, "3.5.17-0", "etcd StatefulSet not rolled")
	assert.Equal(t, before, etcdPod(), "etcd pod kept")
	require.NoError(t, patch(unsetReplicas, false))
	waitKarmadaReady(t, in, 3*time.Minute)
	assert.Equal(t, before, etcdPod(), "etcd pod kept")
	step("new etcd image on an emptyDir refused by the workflow, then Ready again")

	checkDeletion(t, in)
	step("deleted")
}

// waitValidationError waits until the Karmada is Ready=False with reason ValidationError for
// its current generation, naming field.
func waitValidationError(t *testing.T, in instance, field string) {
	t.Helper()
	var last string
	err := poll(2*time.Minute, func() (bool, error) {
		k, _, err := getKarmada(in)
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
		if cond == nil {
			return false, nil
		}
		last = cond.Reason + ": " + cond.Message
		return cond.Status == metav1.ConditionFalse && cond.Reason == operatorv1alpha1.ReasonValidationError &&
			cond.ObservedGeneration == k.Generation && strings.Contains(cond.Message, field+": "), nil
	})
	require.NoError(t, err, "Ready=False ValidationError naming %s (last: %s)", field, last)
	t.Logf("refused: %s", last)
}

// stripValidations removes the transition rules from the host cluster's Karmada CRD, as an
// older CRD without them would be, and puts them back when the test ends.
func stripValidations(t *testing.T) {
	ctx := context.Background()
	crds := testEnv.Host.Dynamic().Resource(crdsGVR)
	path := []string{"schema", "openAPIV3Schema", "x-kubernetes-validations"}
	var rules []any
	update := func(change func(version map[string]any)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, karmadaCRD, metav1.GetOptions{})
			if err != nil {
				return err
			}
			versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
			if err != nil || len(versions) != 1 {
				t.Fatalf("versions of CRD %s: %v, %v", karmadaCRD, len(versions), err)
			}
			change(versions[0].(map[string]any))
			if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
				return err
			}
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
	}
	require.NoError(t, update(func(version map[string]any) {
		rules, _, _ = unstructured.NestedSlice(version, path...)
		unstructured.RemoveNestedField(version, path...)
	}))
	require.NotEmpty(t, rules, "the CRD has transition rules")
	t.Cleanup(func() {
		assert.NoError(t, update(func(version map[string]any) {
			assert.NoError(t, unstructured.SetNestedSlice(version, rules, path...))
		}), "restore the rules of CRD %s", karmadaCRD)
	})
}
