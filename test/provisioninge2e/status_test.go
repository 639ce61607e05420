package provisioninge2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// kmsAPIServer is seed 003's example: a KMS plugin sidecar sharing a socket volume with the
// API server, which reads its encryption configuration from a ConfigMap.
func kmsAPIServer() *operatorv1alpha1.KarmadaAPIServer {
	return &operatorv1alpha1.KarmadaAPIServer{
		ServiceType: corev1.ServiceTypeClusterIP,
		ExtraArgs:   map[string]string{"encryption-provider-config": "/etc/kubernetes/encryption-config.yaml"},
		ExtraVolumes: []corev1.Volume{
			{Name: "encryption-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "encryption-config"}}}},
			{Name: "kms-socket", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
		ExtraVolumeMounts: []corev1.VolumeMount{
			{Name: "encryption-config", MountPath: "/etc/kubernetes/encryption-config.yaml", SubPath: "encryption-config.yaml"},
			{Name: "kms-socket", MountPath: "/var/run/kmsplugin"},
		},
		SidecarContainers: []corev1.Container{{Name: "kms-plugin", Image: "custom-kms-plugin:latest",
			VolumeMounts: []corev1.VolumeMount{{Name: "kms-socket", MountPath: "/var/run/kmsplugin"}}}},
	}
}

func apiServerDeployment(t *testing.T, ns, name string) (*appsv1.Deployment, error) {
	return testEnv.Host.Client().AppsV1().Deployments(ns).Get(context.Background(), prov.NamesFor(name).Of(prov.SuffixAPIServer), metav1.GetOptions{})
}

func containerNames(d *appsv1.Deployment) []string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// TestClusterIPSidecarsSuspendAndKeep: a ClusterIP instance with seed 003's KMS sidecar. The
// status names the Service; the sidecar follows kube-apiserver with the socket volume; a spec
// change re-runs only the API server's steps and removing the sidecar removes it; suspend
// holds a change back until resumed; resync re-runs every step; with the
// disable-cascading-deletion label, deleting the object leaves everything in place.
func TestClusterIPSidecarsSuspendAndKeep(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-cip")
	const name = "cip-karmada" // names "<cr>-<suffix>"
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{operatorv1alpha1.LabelDisableCascadingDeletion: "true"}},
		Spec:       operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: kmsAPIServer()}},
	})

	// apiServerService as soon as the Service exists (the in-cluster endpoint is not
	// reachable from this machine, so the install does not finish here).
	eventually(t, 2*time.Minute, func() error {
		k, _, err := getKarmada(ns, name)
		if err != nil {
			return err
		}
		want := operatorv1alpha1.APIServerServiceStatus{Name: "cip-karmada-apiserver", ServiceType: corev1.ServiceTypeClusterIP, Port: 5443}
		if k.Status.APIServerService == nil || *k.Status.APIServerService != want {
			return fmt.Errorf("apiServerService %+v", k.Status.APIServerService)
		}
		if c := meta.FindStatusCondition(k.Status.Conditions, operatorv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready %+v", c)
		}
		return nil
	})
	var d *appsv1.Deployment
	eventually(t, time.Minute, func() error {
		var err error
		d, err = apiServerDeployment(t, ns, name)
		return err
	})
	assert.Equal(t, []string{"kube-apiserver", "kms-plugin"}, containerNames(d))
	main := d.Spec.Template.Spec.Containers[0]
	assert.Contains(t, main.Command, "--encryption-provider-config=/etc/kubernetes/encryption-config.yaml")
	assert.Contains(t, main.VolumeMounts, corev1.VolumeMount{Name: "kms-socket", MountPath: "/var/run/kmsplugin"})
	assert.Equal(t, []corev1.VolumeMount{{Name: "kms-socket", MountPath: "/var/run/kmsplugin"}}, d.Spec.Template.Spec.Containers[1].VolumeMounts)
	var volumes []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes = append(volumes, v.Name)
	}
	assert.Equal(t, []string{"certs", "etcd-certs", "encryption-config", "kms-socket"}, volumes)

	// Removing the sidecar re-runs the API server's steps only and removes the container.
	before := waitState(t, ns, name, func(s wf.State) bool { return s.Progress.Done[prov.StepWaitAPIServerReady] != "" })
	updateKarmada(t, ns, name, func(k *operatorv1alpha1.Karmada) { k.Spec.Components.KarmadaAPIServer.SidecarContainers = nil })
	eventually(t, time.Minute, func() error {
		d, err := apiServerDeployment(t, ns, name)
		if err != nil {
			return err
		}
		if got := containerNames(d); !slices.Equal(got, []string{"kube-apiserver"}) {
			return fmt.Errorf("containers %v", got)
		}
		return nil
	})
	after := waitState(t, ns, name, func(s wf.State) bool {
		return s.Progress.Runs[prov.StepWaitAPIServerReady] > before.Progress.Runs[prov.StepWaitAPIServerReady]
	})
	for _, step := range []string{prov.StepGenerateCertificates, prov.StepEnsureNamespace, prov.StepInstallEtcd, prov.StepWaitEtcdReady} {
		assert.Equal(t, before.Progress.Runs[step], after.Progress.Runs[step], "%s re-ran for an API server change", step)
	}
	assert.Greater(t, after.Progress.Runs[prov.StepInstallAPIServer], before.Progress.Runs[prov.StepInstallAPIServer])

	// Suspended: a change waits until resumed.
	updateKarmada(t, ns, name, func(k *operatorv1alpha1.Karmada) { k.Spec.Suspend = ptr.To(true) })
	waitState(t, ns, name, func(s wf.State) bool { return s.Phase == wf.PhaseSuspended })
	updateKarmada(t, ns, name, func(k *operatorv1alpha1.Karmada) { k.Spec.Components.KarmadaAPIServer.ExtraArgs["v"] = "4" })
	time.Sleep(3 * time.Second)
	d, err := apiServerDeployment(t, ns, name)
	require.NoError(t, err)
	assert.NotContains(t, d.Spec.Template.Spec.Containers[0].Command, "--v=4", "applied while suspended")
	assert.Equal(t, wf.PhaseSuspended, waitState(t, ns, name, func(wf.State) bool { return true }).Phase)
	updateKarmada(t, ns, name, func(k *operatorv1alpha1.Karmada) { k.Spec.Suspend = nil })
	eventually(t, time.Minute, func() error {
		d, err := apiServerDeployment(t, ns, name)
		if err != nil {
			return err
		}
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Command, "--v=4") {
			return fmt.Errorf("extraArgs not applied after resume")
		}
		return nil
	})

	// resync re-runs every step, certificates included (which are not regenerated).
	certs, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, "cip-karmada-cert", metav1.GetOptions{})
	require.NoError(t, err)
	resynced := waitState(t, ns, name, func(wf.State) bool { return true })
	require.NoError(t, temporal.SignalWorkflow(ctx, wf.WorkflowID(ns, name), "", wf.SignalResync, nil))
	waitState(t, ns, name, func(s wf.State) bool {
		// Every step again, up to the first one this environment cannot pass (the in-cluster
		// endpoint of a ClusterIP Service does not resolve here): nothing more is created.
		return s.Progress.Runs[prov.StepInstallEtcd] > resynced.Progress.Runs[prov.StepInstallEtcd] &&
			s.Progress.Runs[prov.StepInitControlPlane] > resynced.Progress.Runs[prov.StepInitControlPlane]
	})
	again, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, "cip-karmada-cert", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, certs.Data, again.Data)

	// Keep on delete.
	objects := instanceObjects(t, ns, name)
	deleteKarmada(t, ns, name)
	assert.Equal(t, objects, instanceObjects(t, ns, name), "disable-cascading-deletion left everything in place")
	require.NoError(t, testEnv.Host.Client().CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
}

// TestLoadBalancerStatus: the workflow waits, heartbeating, for the load balancer; once the
// test writes the ingress as a cloud controller would, the status carries it with the
// allocated node port and the certificate and kubeconfig name the address.
func TestLoadBalancerStatus(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-lb")
	const name = "lb"
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{
			ServiceType: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("example.com/lb"),
			ServiceAnnotations: map[string]string{"example.com/lb-scheme": "internal"},
		}}},
	})
	waitState(t, ns, name, func(s wf.State) bool { return s.Step == prov.StepWaitLoadBalancer })
	services := testEnv.Host.Client().CoreV1().Services(ns)
	svc, err := services.Get(ctx, "lb-karmada-apiserver", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "example.com/lb", ptr.Deref(svc.Spec.LoadBalancerClass, ""))
	assert.Equal(t, "internal", svc.Annotations["example.com/lb-scheme"])

	// Still the first attempt after more than a heartbeat timeout: it heartbeats, not fails.
	time.Sleep(12 * time.Second)
	desc, err := temporal.DescribeWorkflowExecution(ctx, wf.WorkflowID(ns, name), "")
	require.NoError(t, err)
	require.Len(t, desc.PendingActivities, 1)
	pending := desc.PendingActivities[0]
	assert.Equal(t, prov.StepWaitLoadBalancer, pending.GetActivityType().GetName())
	assert.Equal(t, int32(1), pending.GetAttempt())
	assert.WithinDuration(t, time.Now(), pending.GetLastHeartbeatTime().AsTime(), 5*time.Second)
	k, _, err := getKarmada(ns, name)
	require.NoError(t, err)
	assert.Equal(t, operatorv1alpha1.ReasonProgressing, readyReason(k))
	require.NotNil(t, k.Status.APIServerService)
	assert.Equal(t, corev1.ServiceTypeLoadBalancer, k.Status.APIServerService.ServiceType)
	assert.Equal(t, svc.Spec.Ports[0].NodePort, k.Status.APIServerService.NodePort)

	// The cloud controller's part (a loopback address where nothing listens: nothing leaves
	// the machine).
	const address = "127.0.0.2"
	svc, err = services.Get(ctx, "lb-karmada-apiserver", metav1.GetOptions{})
	require.NoError(t, err)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: address}}
	svc, err = services.UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)

	eventually(t, time.Minute, func() error {
		k, _, err := getKarmada(ns, name)
		if err != nil {
			return err
		}
		s := k.Status.APIServerService
		if s == nil || s.LoadBalancerStatus == nil || len(s.LoadBalancerStatus.Ingress) == 0 {
			return fmt.Errorf("apiServerService %+v", s)
		}
		want := operatorv1alpha1.APIServerServiceStatus{Name: "lb-karmada-apiserver", ServiceType: corev1.ServiceTypeLoadBalancer, Port: 5443,
			NodePort: svc.Spec.Ports[0].NodePort, LoadBalancerStatus: &svc.Status.LoadBalancer}
		if !assert.ObjectsAreEqual(want, *s) {
			return fmt.Errorf("apiServerService %+v, want %+v", *s, want)
		}
		return nil
	})
	eventually(t, time.Minute, func() error {
		secret, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, "lb-karmada-admin-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[prov.KeyKubeconfig])
		if err != nil {
			return err
		}
		if cfg.Host != "https://"+address+":5443" {
			return fmt.Errorf("admin kubeconfig server %s", cfg.Host)
		}
		return nil
	})
	certs, err := testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, "lb-karmada-cert", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, certIPs(t, certs.Data[prov.KeyAPIServerCert]), address, "the serving certificate names the load balancer")
	deleteKarmada(t, ns, name)
	assert.Empty(t, instanceObjects(t, ns, name))
}

// waitState waits until the workflow's state satisfies ok and returns it.
func waitState(t *testing.T, ns, name string, ok func(wf.State) bool) wf.State {
	t.Helper()
	var s wf.State
	eventually(t, 2*time.Minute, func() error {
		var err error
		if s, err = state(ns, name); err != nil {
			return err
		}
		if !ok(s) {
			return fmt.Errorf("state %+v", s)
		}
		return nil
	})
	return s
}
