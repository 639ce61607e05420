package provisioninge2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// waitValidationError waits for Ready=False/ValidationError on observed generation of the
// Karmada ns/name, checks that the message names field, and returns the condition.
func waitValidationError(t *testing.T, ns, name, field string) *metav1.Condition {
	t.Helper()
	k := waitReady(t, ns, name, metav1.ConditionFalse, operatorv1alpha1.ReasonValidationError, time.Minute)
	cond := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady)
	assert.True(t, strings.HasPrefix(cond.Message, field+": "), "%s: %q does not name %s", name, cond.Message, field)
	assert.Equal(t, k.Generation, k.Status.ObservedGeneration)
	return cond
}

// TestValidationErrors: every validation rule of the spec yields Ready=False/ValidationError
// naming the field, a Warning event, and no retry until the spec changes.
func TestValidationErrors(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-invalid")
	api := func(mutate func(*operatorv1alpha1.KarmadaAPIServer)) *operatorv1alpha1.KarmadaComponents {
		a := &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}
		mutate(a)
		return &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: a}
	}
	external := &operatorv1alpha1.ExternalEtcd{Endpoints: []string{"https://etcd.example:2379"}, SecretRef: operatorv1alpha1.LocalSecretReference{Name: "absent"}}
	cases := []struct {
		name  string
		spec  operatorv1alpha1.KarmadaSpec
		field string
	}{
		{"tarball-url", operatorv1alpha1.KarmadaSpec{CRDTarball: &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{URL: "::nope"}}},
			"spec.crdTarball.httpSource.url"},
		{"proxy-url", operatorv1alpha1.KarmadaSpec{CRDTarball: &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{
			URL: "http://" + tarballAddress + "/tarballs/crds.tar.gz", Proxy: &operatorv1alpha1.ProxyConfig{ProxyURL: "proxy without scheme"}}}},
			"spec.crdTarball.httpSource.proxy.proxyURL"},
		{"lb-class", operatorv1alpha1.KarmadaSpec{Components: api(func(a *operatorv1alpha1.KarmadaAPIServer) { a.LoadBalancerClass = ptr.To("x") })},
			"spec.components.karmadaAPIServer.loadBalancerClass"},
		{"remote-clusterip", operatorv1alpha1.KarmadaSpec{
			HostCluster: &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Name: "remote"}},
			Components:  api(func(a *operatorv1alpha1.KarmadaAPIServer) { a.ServiceType = corev1.ServiceTypeClusterIP })},
			"spec.components.karmadaAPIServer.serviceType"},
		{"etcd-both", operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{Etcd: &operatorv1alpha1.Etcd{
			Local: &operatorv1alpha1.LocalEtcd{}, External: external}}}, "spec.components.etcd"},
		{"etcd-neither", operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{Etcd: &operatorv1alpha1.Etcd{}}},
			"spec.components.etcd"},
		{"etcd-secret", operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{Etcd: &operatorv1alpha1.Etcd{External: external}}},
			"spec.components.etcd.external.secretRef"},
		{"sidecar-name", operatorv1alpha1.KarmadaSpec{Components: api(func(a *operatorv1alpha1.KarmadaAPIServer) {
			a.SidecarContainers = []corev1.Container{{Name: "kube-apiserver", Image: "x"}}
		})}, "spec.components.karmadaAPIServer.sidecarContainers[0].name"},
		{"volume-name", operatorv1alpha1.KarmadaSpec{Components: api(func(a *operatorv1alpha1.KarmadaAPIServer) {
			a.ExtraVolumes = []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})}, "spec.components.karmadaAPIServer.extraVolumes[0].name"},
		{"pdb", operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{KarmadaScheduler: &operatorv1alpha1.KarmadaScheduler{
			CommonSettings: operatorv1alpha1.CommonSettings{PodDisruptionBudgetConfig: &operatorv1alpha1.PodDisruptionBudgetConfig{
				MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}}}},
			"spec.components.karmadaScheduler.podDisruptionBudgetConfig"},
	}
	for _, c := range cases {
		createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: c.spec})
	}
	for _, c := range cases {
		cond := waitValidationError(t, ns, c.name, c.field)
		eventually(t, 30*time.Second, func() error {
			events, err := testEnv.Host.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + c.name + ",reason=" + operatorv1alpha1.ReasonValidationError})
			if err != nil {
				return err
			}
			if len(events.Items) != 1 || events.Items[0].Type != corev1.EventTypeWarning || events.Items[0].Message != cond.Message {
				return fmt.Errorf("%s: events %+v", c.name, events.Items)
			}
			return nil
		})
	}
	// The type field is also enforced by the CRD: the API server rejects it naming the field.
	bad := &operatorv1alpha1.Karmada{TypeMeta: metav1.TypeMeta{APIVersion: "operator.karmada.io/v1alpha1", Kind: "Karmada"},
		ObjectMeta: metav1.ObjectMeta{Name: "service-type", Namespace: ns},
		Spec:       operatorv1alpha1.KarmadaSpec{Components: api(func(a *operatorv1alpha1.KarmadaAPIServer) { a.ServiceType = "ExternalName" })}}
	u, err := kube.ToUnstructured(bad)
	require.NoError(t, err)
	_, err = karmadas(ns).Create(ctx, u, metav1.CreateOptions{})
	require.ErrorContains(t, err, "spec.components.karmadaAPIServer.serviceType")

	// No retry loop: a while later each workflow has still read its object once.
	time.Sleep(5 * time.Second)
	for _, c := range cases {
		counts, _ := scheduled(history(t, wf.WorkflowID(ns, c.name)))
		assert.Equal(t, 1, counts["ValidateKarmada"], c.name)
		assert.Equal(t, 1, counts["WriteKarmadaStatus"], c.name)
		assert.Len(t, counts, 2, "%s ran %v", c.name, counts)
	}

	// A spec change is what makes it try again.
	updateKarmada(t, ns, "lb-class", func(k *operatorv1alpha1.Karmada) { k.Spec.Components.KarmadaAPIServer.LoadBalancerClass = nil })
	eventually(t, time.Minute, func() error {
		counts, _ := scheduled(history(t, wf.WorkflowID(ns, "lb-class")))
		if counts["GenerateCertificates"] == 0 {
			return fmt.Errorf("not installing after the fix: %v", counts)
		}
		return nil
	})
	for _, c := range cases {
		deleteKarmada(t, ns, c.name)
	}
}
