package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmadaflow/karmadaflow/test/env"
	"github.com/karmadaflow/karmadaflow/test/service"
)

// TestDeployChartRBACRefusesOutside installs the chart's ServiceAccounts and RBAC (and nothing
// else) for real, with each case's values, on the control plane and on the host, and asks each API server's authorizer
// what the worker and the starter may do: Secrets only in the namespaces that hold cluster
// credentials and Karmada instances, what a Karmada instance is made of only in the latter,
// the Lease only in karmadaflow's namespace, impersonation only with the proxy on.
func TestDeployChartRBACRefusesOutside(t *testing.T) {
	ensureNamespaces(t, testEnv.Host, "karmadaflow-system", "karmada-system")
	ensureNamespaces(t, testEnv.ControlPlane, "karmadaflow-system", env.ClusterSecretNamespace)

	type check struct {
		component, verb, group, resource, namespace, name string
		allowed                                           bool
	}
	for _, tc := range []struct {
		name    string
		values  []string
		cluster *env.Cluster
		checks  []check
	}{
		{
			name: "control plane", values: []string{"target=controlPlane"}, cluster: testEnv.ControlPlane,
			checks: []check{
				{"worker", "get", "", "secrets", env.ClusterSecretNamespace, "member1", true},
				{"starter", "get", "", "secrets", env.ClusterSecretNamespace, "member1", true},
				{"worker", "get", "", "secrets", "kube-system", "", false},
				{"starter", "list", "", "secrets", env.ClusterSecretNamespace, "", false},
				{"worker", "impersonate", "", "users", "", "", false},
				{"worker", "update", "cluster.karmada.io", "clusters/status", "", "member1", true},
				{"worker", "create", "work.karmada.io", "works", "karmada-es-member1", "", true},
				{"starter", "create", "work.karmada.io", "works", "karmada-es-member1", "", false},
				{"worker", "patch", "", "services", "demo", "foo", true}, // the claim of a MultiClusterService
				{"worker", "update", "", "services", "demo", "foo", false},
				{"starter", "patch", "", "services", "demo", "foo", false},
			},
		},
		{
			name: "control plane with the proxy", values: []string{"target=controlPlane", "proxy.enabled=true"}, cluster: testEnv.ControlPlane,
			checks: []check{
				{"worker", "impersonate", "", "users", "", "", true},
				{"starter", "impersonate", "", "users", "", "", false},
			},
		},
		{
			name: "host", values: []string{"target=host", "provisioning.namespaces={karmada-system,karmada-tenant2}"}, cluster: testEnv.Host,
			checks: []check{
				{"worker", "create", "", "secrets", "karmada-system", "", true},
				{"worker", "get", "", "secrets", "default", "", false},
				// A control plane's objects: only in provisioning.namespaces.
				{"worker", "create", "", "services", "karmada-tenant2", "", true},
				{"worker", "delete", "apps", "statefulsets", "karmada-tenant2", "", true},
				{"worker", "create", "", "services", "default", "", false},
				{"worker", "create", "apps", "deployments", "default", "", false},
				{"worker", "update", "apps", "statefulsets", "default", "", false},
				{"worker", "create", "policy", "poddisruptionbudgets", "default", "", false},
				{"worker", "list", "", "pods", "default", "", false},
				{"worker", "update", "operator.karmada.io", "karmadas", "default", "", false},
				{"worker", "update", "operator.karmada.io", "karmadas", "karmada-tenant2", "", true},
				{"worker", "create", "", "namespaces", "", "", false},
				// Cluster-wide: reading any Karmada and reporting on it (a refusal too), and the
				// nodes a NodePort is reached at.
				{"worker", "get", "operator.karmada.io", "karmadas", "default", "", true},
				{"worker", "update", "operator.karmada.io", "karmadas/status", "default", "", true},
				{"worker", "create", "", "events", "default", "", true},
				{"worker", "list", "", "nodes", "", "", true},
				{"starter", "get", "", "secrets", "karmada-system", "", false},
				{"starter", "update", "coordination.k8s.io", "leases", "karmadaflow-system", "karmadaflow-starter", true},
				{"starter", "update", "coordination.k8s.io", "leases", "default", "karmadaflow-starter", false},
				{"worker", "update", "coordination.k8s.io", "leases", "karmadaflow-system", "karmadaflow-starter", false},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, service.ApplyChartIdentities(ctx, tc.cluster, tc.values))
			// The service runs under these ServiceAccounts: what this case changed is put back
			// as the service installed it.
			t.Cleanup(func() { assert.NoError(t, svc.InstallIdentities(context.Background())) })

			for _, c := range tc.checks {
				user := "system:serviceaccount:karmadaflow-system:karmadaflow-" + c.component
				resource, subresource, _ := strings.Cut(c.resource, "/")
				review, err := tc.cluster.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
					Spec: authorizationv1.SubjectAccessReviewSpec{
						User:   user,
						Groups: []string{"system:serviceaccounts", "system:serviceaccounts:karmadaflow-system", "system:authenticated"},
						ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: resource,
							Subresource: subresource, Namespace: c.namespace, Name: c.name},
					},
				}, metav1.CreateOptions{})
				require.NoError(t, err)
				assert.Equal(t, c.allowed, review.Status.Allowed, "%s %s %s in %q (%s): %s", c.component, c.verb, c.resource,
					c.namespace, review.Status.Reason, review.Status.EvaluationError)
			}
		})
	}
}
