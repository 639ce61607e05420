package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/karmadaflow/karmadaflow/test/env"
)

func clientOf(t *testing.T, kubeconfig string, impersonate string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate}
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// TestServiceRunsAsTheChartsServiceAccounts: the worker and the starter run with tokens of the
// chart's own ServiceAccounts in both API servers, bound by the chart's RBAC, and not as
// system:masters. What the chart does not grant them is refused: Secrets outside the
// namespaces of cluster credentials and Karmada instances, and impersonation while the proxy is
// off.
func TestServiceRunsAsTheChartsServiceAccounts(t *testing.T) {
	ctx := context.Background()
	for _, component := range []string{"worker", "starter"} {
		host, karmada := svc.Kubeconfigs(component)
		account := "system:serviceaccount:karmadaflow-system:karmadaflow-" + component
		for _, kubeconfig := range []string{host, karmada} {
			c := clientOf(t, kubeconfig, "")
			review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, account, review.Status.UserInfo.Username, kubeconfig)
			assert.NotContains(t, review.Status.UserInfo.Groups, "system:masters", kubeconfig)

			_, err = c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
			assert.True(t, apierrors.IsForbidden(err), "%s lists Secrets of kube-system with %s: %v", component, kubeconfig, err)
			_, err = clientOf(t, kubeconfig, "alice").CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			assert.True(t, apierrors.IsForbidden(err), "%s impersonates with the proxy off, with %s: %v", component, kubeconfig, err)
		}
		// The credentials of member clusters are theirs to read, one by one.
		_, err := clientOf(t, karmada, "").CoreV1().Secrets(env.ClusterSecretNamespace).Get(ctx, "member1", metav1.GetOptions{})
		assert.NoError(t, err, "%s cannot read the cluster credentials", component)
	}
}
