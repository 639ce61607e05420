package provisioninge2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	wf "github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// TestKarmadaOutsideProvisioningNamespacesIsRefused: the workers run as the chart's host
// ServiceAccount, which may write a Karmada's objects only in provisioning.namespaces (the
// other tests install into those). A Karmada in another namespace is refused at once with
// Ready=False/ValidationError naming metadata.namespace and a Warning Event, without a retry
// loop, a finalizer, or anything created there.
func TestKarmadaOutsideProvisioningNamespacesIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := hostNamespace(t, "tenant-unlisted")

	// What the workers' own identity may do in a listed namespace and in this one.
	hostKubeconfig, _ := svc.Kubeconfigs("worker")
	cfg, err := clientcmd.BuildConfigFromFlags("", hostKubeconfig)
	require.NoError(t, err)
	worker, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	for _, c := range []struct {
		verb, group, resource, namespace string
		allowed                          bool
	}{
		{"create", "", "secrets", provisioningNamespaces[0], true},
		{"create", "", "services", provisioningNamespaces[0], true},
		{"create", "apps", "statefulsets", provisioningNamespaces[0], true},
		{"create", "", "secrets", ns, false},
		{"create", "", "services", ns, false},
		{"create", "apps", "deployments", ns, false},
		{"create", "apps", "statefulsets", ns, false},
		{"create", "policy", "poddisruptionbudgets", ns, false},
		{"create", "", "namespaces", "", false},
	} {
		review, err := worker.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Namespace: c.namespace}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, c.allowed, review.Status.Allowed, "the worker may %s %s in %q", c.verb, c.resource, c.namespace)
	}

	const name = "refused"
	createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: operatorv1alpha1.KarmadaSpec{Components: &operatorv1alpha1.KarmadaComponents{
			KarmadaAPIServer: &operatorv1alpha1.KarmadaAPIServer{ServiceType: corev1.ServiceTypeNodePort}}}})
	cond := waitValidationError(t, ns, name, "metadata.namespace")
	t.Logf("%s/%s: %s", ns, name, cond.Message)
	assert.Contains(t, cond.Message, "--provisioning-namespaces")
	assert.NotContains(t, cond.Message, provisioningNamespaces[0], "the message names no other tenant's namespace")
	eventually(t, 30*time.Second, func() error {
		events, err := testEnv.Host.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=" + operatorv1alpha1.ReasonValidationError})
		if err != nil {
			return err
		}
		if len(events.Items) != 1 || events.Items[0].Type != corev1.EventTypeWarning || events.Items[0].Message != cond.Message {
			return fmt.Errorf("events %+v", events.Items)
		}
		return nil
	})

	// The refusal was seen (the condition above); a while later nothing more has happened.
	time.Sleep(5 * time.Second)
	counts, _ := scheduled(history(t, wf.WorkflowID(ns, name)))
	assert.Equal(t, map[string]int{"ValidateKarmada": 1, "WriteKarmadaStatus": 1}, counts, "the workflow's activities")
	assert.Empty(t, instanceObjects(t, ns, name), "objects of the refused instance")
	k, _, err := getKarmada(ns, name)
	require.NoError(t, err)
	assert.Empty(t, k.Finalizers, "a refused Karmada holds no finalizer")
	s, err := state(ns, name)
	require.NoError(t, err)
	assert.Equal(t, wf.PhaseInvalid, s.Phase)
	assert.True(t, strings.HasPrefix(s.LastError, "metadata.namespace: "), s.LastError)

	// Nothing holds its deletion.
	deleteKarmada(t, ns, name)
}
