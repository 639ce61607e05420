package provisioninge2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prov "github.com/karmadaflow/karmadaflow/activities/provisioning"
	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// TestRemoteHostCluster installs into a remote host cluster (the environment's member1, its
// kubeconfig in a Secret named by spec.hostCluster.secretRef): the workloads and Secrets go
// there, status and a local copy of the admin kubeconfig stay beside the Karmada object, and
// deletion removes both.
func TestRemoteHostCluster(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-remote")
	remote := testEnv.Member("member1")
	kubeconfig, err := os.ReadFile(remote.Kubeconfig)
	require.NoError(t, err)
	_, err = testEnv.Host.Client().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "member1-kubeconfig", Namespace: ns},
		Data:       map[string][]byte{prov.KeyKubeconfig: kubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	const name = "remote"
	createKarmada(t, &operatorv1alpha1.Karmada{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{
			HostCluster: &operatorv1alpha1.HostCluster{SecretRef: &operatorv1alpha1.LocalSecretReference{Name: "member1-kubeconfig"}},
			Components: &operatorv1alpha1.KarmadaComponents{KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{
				ServiceType: corev1.ServiceTypeNodePort}},
		},
	})
	names := prov.NamesFor(name)
	var nodePort int32
	eventually(t, 2*time.Minute, func() error {
		svc, err := remote.Client().CoreV1().Services(ns).Get(ctx, names.Of(prov.SuffixAPIServer), metav1.GetOptions{})
		if err != nil {
			return err
		}
		nodePort = svc.Spec.Ports[0].NodePort
		k, _, err := getKarmada(ns, name)
		if err != nil {
			return err
		}
		if s := k.Status.APIServerService; s == nil || s.NodePort != nodePort || nodePort == 0 {
			return fmt.Errorf("apiServerService %+v, remote node port %d", s, nodePort)
		}
		if k.Status.SecretRef == nil {
			return fmt.Errorf("no secretRef yet")
		}
		// Status is written as the install goes: the aggregated API server comes after the
		// admin kubeconfig, so wait for its Deployment too.
		for _, d := range []string{names.Of(prov.SuffixAPIServer), names.Of(prov.SuffixAggregatedAPIServer)} {
			if _, err := remote.Client().AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("Deployment %s in the remote host cluster: %w", d, err)
			}
		}
		return nil
	})
	_, err = remote.Client().AppsV1().StatefulSets(ns).Get(ctx, names.Of(prov.SuffixEtcd), metav1.GetOptions{})
	assert.NoError(t, err)
	_, err = remote.Client().CoreV1().Secrets(ns).Get(ctx, names.Of(prov.SuffixCert), metav1.GetOptions{})
	assert.NoError(t, err)
	_, err = testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, names.Of(prov.SuffixCert), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "certificates stay in the remote host cluster")
	local := instanceObjects(t, ns, name)
	assert.Equal(t, []string{"secrets/" + names.Of(prov.SuffixAdminConfig)}, local, "only the admin kubeconfig is copied locally")

	deleteKarmada(t, ns, name)
	assert.Empty(t, instanceObjects(t, ns, name))
	for _, gvr := range instanceResources {
		list, err := remote.Dynamic().Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: prov.InstanceSelector(name)})
		require.NoError(t, err)
		assert.Empty(t, list.Items, "%s left in the remote host cluster", gvr.Resource)
	}
	_, err = testEnv.Host.Client().CoreV1().Secrets(ns).Get(ctx, "member1-kubeconfig", metav1.GetOptions{})
	assert.NoError(t, err, "the user's kubeconfig Secret is not ours")
}
