package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// TestDeployManifestsApplyOnServer applies deploy/ to the host cluster and deploy/controlplane
// to the control plane as a server-side dry run: the API servers validate every manifest
// (schemas, RBAC, the Karmada CRD) without keeping anything.
func TestDeployManifestsApplyOnServer(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	kubectl := filepath.Join(repo, "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		kubectl, err = exec.LookPath("kubectl")
		require.NoError(t, err, "kubectl is neither in bin/ nor on PATH")
	}

	for _, tc := range []struct {
		name    string
		dir     string
		cluster *env.Cluster
		want    []string
	}{
		{
			name: "host", dir: "deploy", cluster: testEnv.Host,
			want: []string{
				"customresourcedefinition.apiextensions.k8s.io/karmadas.operator.karmada.io",
				"deployment.apps/karmadaflow-worker", "deployment.apps/karmadaflow-starter",
				"service/karmadaflow-worker-metrics", "clusterrole.rbac.authorization.k8s.io/karmadaflow-worker",
				"role.rbac.authorization.k8s.io/karmadaflow-starter-leader-election",
			},
		},
		{
			name: "control plane", dir: filepath.Join("deploy", "controlplane"), cluster: testEnv.ControlPlane,
			want: []string{"serviceaccount/karmadaflow-worker", "clusterrolebinding.rbac.authorization.k8s.io/karmadaflow-starter"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// A dry run creates nothing, so the namespaced objects need their namespace to
			// exist already; creating it for real is harmless.
			_, err := tc.cluster.Client().CoreV1().Namespaces().Create(ctx,
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "karmadaflow-system"}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}

			// Server-side apply: the Karmada CRD is too large for client-side apply.
			cmd := exec.CommandContext(ctx, kubectl, "apply", "--server-side", "--dry-run=server",
				"--kubeconfig", tc.cluster.Kubeconfig, "-k", filepath.Join(repo, tc.dir))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "kubectl apply -k %s on the %s:\n%s", tc.dir, tc.name, out)
			for _, object := range tc.want {
				require.True(t, strings.Contains(string(out), object+" serverside-applied (server dry run)"),
					"%s missing from the output:\n%s", object, out)
			}
		})
	}
}
