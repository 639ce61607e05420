package provisioninge2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/test/apiserverpod"
	"github.com/karmadaflow/karmadaflow/test/replay"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// stepsBeforeControlPlane are the steps of a NodePort install that run before the new control
// plane is reached.
var stepsBeforeControlPlane = []string{"ValidateKarmada", "AddKarmadaFinalizer", prov.StepGenerateCertificates,
	prov.StepEnsureNamespace, prov.StepInstallEtcd, prov.StepWaitEtcdReady, prov.StepInstallAPIServer,
	prov.StepWaitAPIServerReady, prov.StepWriteAdminKubeconfig, prov.StepInstallAggregatedAPIServer,
	prov.StepWaitAggregatedAPIServerReady}

// TestNodePortInstall installs a NodePort instance end to end: both workers are killed in the
// middle of the install and restarted, the test then starts the instance's API server for
// real, and the instance becomes Ready without any completed step running again; the
// objects inside the new control plane are read back from that API server; the history holds
// no secret; deletion removes exactly what the instance created.
func TestNodePortInstall(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-np")
	const name = "np"
	id := wf.WorkflowID(ns, name)
	begin := time.Now()
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{
			KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort},
		}},
	})

	// Mid-install: the API server pod is Ready, the control plane is not reachable yet.
	eventually(t, 2*time.Minute, func() error {
		h, err := tryHistory(id)
		if err != nil {
			return err
		}
		_, completed := scheduled(h)
		if completed[prov.StepWaitAggregatedAPIServerReady] == 0 {
			return fmt.Errorf("completed so far: %v", completed)
		}
		return nil
	})
	scheduledBeforeKill, completed := scheduled(history(t, id))
	require.Zero(t, completed[prov.StepInitControlPlane], "the install is not finished when the workers die")
	svc.KillWorkers()
	t.Logf("workers killed %.1fs after create; completed steps: %v", time.Since(begin).Seconds(), completed)
	k, _, err := getKarmada(ns, name)
	require.NoError(t, err)
	require.NotEqual(t, operatorv1alpha1.ReasonCompleted, readyReason(k))
	require.NoError(t, svc.StartWorkers(ctx))

	// The test is the kubelet of the API server pod: a real kube-apiserver on the node port.
	service, err := testEnv.Host.Client().CoreV1().Services(ns).Get(ctx, prov.NamesFor(name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
	require.NoError(t, err)
	nodePort := service.Spec.Ports[0].NodePort
	require.NotZero(t, nodePort)
	server, err := apiserverpod.Start(ctx, testEnv, ns, name, nodePort)
	require.NoError(t, err)
	defer server.Stop()

	k = waitReady(t, ns, name, metav1.ConditionTrue, operatorv1alpha1.ReasonCompleted, 3*time.Minute)
	t.Logf("Ready %.1fs after create", time.Since(begin).Seconds())

	// Resumed where it was: no step that had completed ran again after the restart. A step
	// runs once; ValidateKarmada runs once per pass, and a change signal that arrives twice
	// (signals are at least once) may start a second pass before the kill.
	h := history(t, id)
	counts, completed := scheduled(h)
	for _, step := range stepsBeforeControlPlane {
		assert.Equal(t, scheduledBeforeKill[step], counts[step], "%s scheduled again after the workers restarted", step)
		if step != "ValidateKarmada" {
			assert.Equal(t, 1, counts[step], "%s scheduled more than once", step)
		}
	}
	for _, step := range []string{prov.StepInitControlPlane, prov.StepRemoveOldComponents, "InspectCertificates"} {
		assert.Equal(t, 1, completed[step], step)
	}
	// One activity per component: KWOK pods that run nothing, except the API server's.
	for _, step := range []string{prov.StepInstallComponent, prov.StepWaitComponentReady} {
		assert.Equal(t, len(prov.InstalledComponents(k)), completed[step], step)
	}
	t.Logf("activities scheduled: %v", counts)
	// The step that was running when the workers died failed (connection refused until the
	// API server ran, lost worker) and was retried in place.
	for _, e := range h.Events {
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			t.Logf("an activity completed on attempt %d (last failure: %s)", a.GetAttempt(), a.GetLastFailure().GetMessage())
		}
	}

	// Status: all five apiServerService fields, secretRef, observedGeneration, versions.
	require.NotNil(t, k.Status.APIServerService)
	assert.Equal(t, operatorv1alpha1.APIServerServiceStatus{Name: "np-karmada-apiserver", ServiceType: corev1.ServiceTypeNodePort,
		Port: 5443, NodePort: nodePort}, *k.Status.APIServerService)
	assert.Equal(t, &operatorv1alpha1.LocalSecretReference{Namespace: ns, Name: "np-karmada-admin-config"}, k.Status.SecretRef)
	assert.Equal(t, k.Generation, k.Status.ObservedGeneration)
	assert.Equal(t, prov.DefaultKarmadaVersion, k.Status.KarmadaVersion)
	assert.Equal(t, prov.DefaultKubernetesVersion, k.Status.KubernetesVersion)

	checkControlPlane(t, ns, name, nodePort)
	checkHistoryHasNoSecrets(t, ns, name)
	checkDeletion(t, ns, name)
	if replay.Recording() {
		n, err := replay.Record(ctx, temporal, id, "karmada-nodeport-worker-killed")
		require.NoError(t, err)
		t.Logf("recorded %d events of %s", n, id)
	}
}

func readyReason(k *operatorv1alpha1.Karmada) string {
	for _, c := range k.Status.Conditions {
		if c.Type == operatorv1alpha1.ConditionReady {
			return c.Reason
		}
	}
	return ""
}

// checkControlPlane reads, through the admin kubeconfig the workflow wrote (endpoint it
// computed, TLS verified against the CA it generated), what InitControlPlane created.
func checkControlPlane(t *testing.T, ns, name string, nodePort int32) {
	ctx := context.Background()
	secret, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, prov.NamesFor(name).Of(prov.SuffixAdminConfig), metav1.GetOptions{})
	require.NoError(t, err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[prov.KeyKubeconfig])
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("https://%s:%d", testEnv.Host.NodeIP, nodePort), cfg.Host)
	assert.False(t, cfg.Insecure)
	assert.NotEmpty(t, cfg.CAData)
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	get := func(gvr schema.GroupVersionResource, namespace, name string) {
		t.Helper()
		_, err := client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		assert.NoError(t, err, "%s %s in the new control plane", gvr.Resource, name)
	}
	get(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "karmada-system")
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	get(crds, "", "works.work.karmada.io")
	get(crds, "", "multiclusterservices.networking.karmada.io")
	admission := "admissionregistration.k8s.io"
	get(schema.GroupVersionResource{Group: admission, Version: "v1", Resource: "mutatingwebhookconfigurations"}, "", prov.MutatingWebhookConfiguration)
	get(schema.GroupVersionResource{Group: admission, Version: "v1", Resource: "validatingwebhookconfigurations"}, "", prov.ValidatingWebhookConfiguration)
	get(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, "", "v1alpha1.cluster.karmada.io")
	get(schema.GroupVersionResource{Version: "v1", Resource: "services"}, "karmada-system", "karmada-aggregated-apiserver")
	for _, role := range []string{prov.ClusterRoleView, prov.ClusterRoleEdit, prov.ClusterRoleProxyAdmin} {
		get(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "", role)
	}
}

// checkHistoryHasNoSecrets exports the workflow's history and looks for any private key,
// kubeconfig or token in it.
func checkHistoryHasNoSecrets(t *testing.T, ns, name string) {
	ctx := context.Background()
	exported := historyJSON(t, history(t, wf.WorkflowID(ns, name)))
	require.Contains(t, exported, prov.StepInitControlPlane, "the history is the install's")
	for _, marker := range []string{"PRIVATE KEY", "BEGIN CERTIFICATE", "client-key-data", "client-certificate-data",
		"certificate-authority-data", "current-context", "token"} {
		assert.NotContains(t, strings.ToLower(exported), strings.ToLower(marker))
	}
	names := prov.NamesFor(name)
	for _, secretName := range []string{names.Of(prov.SuffixCert), names.Of(prov.SuffixEtcdCert), names.Of(prov.SuffixWebhookCert), names.Of(prov.SuffixAdminConfig)} {
		secret, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		require.NoError(t, err)
		for key, value := range secret.Data {
			for _, encoded := range []string{string(value), base64.StdEncoding.EncodeToString(value)} {
				// Any 40-character run of the value would do; the middle avoids PEM headers.
				if len(encoded) > 120 {
					assert.NotContains(t, exported, encoded[60:100], "%s/%s[%s] in the history", ns, secretName, key)
				}
			}
		}
	}
	t.Logf("history of %d bytes holds no key, certificate, kubeconfig or token", len(exported))
}

// checkDeletion deletes the instance: everything with its labels goes, an unlabelled Secret
// in the same namespace stays, then the finalizer is released.
func checkDeletion(t *testing.T, ns, name string) {
	ctx := context.Background()
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-karmada-user-secret", Namespace: ns,
		Labels: map[string]string{prov.LabelInstance: name}}, StringData: map[string]string{"a": "b"}}
	_, err := testEnv.Host.Client().CoreV1().Secrets(ns).Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	before := instanceObjects(t, ns, name)
	for _, want := range []string{"deployments/np-karmada-apiserver", "statefulsets/np-karmada-etcd", "services/np-karmada-apiserver",
		"secrets/np-karmada-cert", "secrets/np-karmada-admin-config", "deployments/np-karmada-scheduler"} {
		assert.True(t, slices.Contains(before, want), "%s missing from %v", want, before)
	}
	deleteKarmada(t, ns, name)
	assert.Empty(t, instanceObjects(t, ns, name), "objects of the instance left after deletion")
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	assert.NoError(t, temporal.GetWorkflow(waitCtx, wf.WorkflowID(ns, name), "").Get(waitCtx, nil), "the workflow finishes with its object")
	_, err = testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, other.Name, metav1.GetOptions{})
	assert.NoError(t, err, "a Secret without our managed-by label was touched")
	assert.False(t, apierrors.IsNotFound(err))
	t.Logf("deletion removed %d objects", len(before))
}
