package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

var (
	propagationPolicies = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	resourceBindings    = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"}
)

// Marks of a Work Karmada's binding controller wrote from a ResourceBinding.
const (
	labelResourceBindingID        = "resourcebinding.karmada.io/permanent-id"
	annotationResourceBindingName = "resourcebinding.karmada.io/name"
)

// A PropagationPolicy that selects a MultiClusterService's Service does not propagate it:
// the MultiClusterService claims the Service (resourcetemplate.karmada.io/claimed-by), so
// Karmada's detector leaves it alone, no ResourceBinding is made for it and Karmada's binding
// controller writes no Work of the name karmadaflow's Service Work has. The policy is seen:
// a Service of no MultiClusterService it selects too is propagated. Over 60 idle seconds and
// across a full pass (the resync the safety timer also runs), nothing changes.
func TestMCSServiceClaimedFromPropagationPolicies(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	// Not fatal: without the claim, what the policy does next is the point.
	assert.NoError(t, within(30*time.Second, func() error { return claimed(ns) }), "the Service is claimed before the policy exists")
	if svc, err := testEnv.ControlPlane.Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{}); err == nil {
		t.Logf("before the policy, Service %s/%s has labels %v and annotations %v", ns, app, svc.Labels, svc.Annotations)
	}
	if !servesPropagationPolicies(t) {
		t.Skip("the control plane serves no PropagationPolicy (standalone: karmadaflow installs no policy.karmada.io CRD, and no detector runs); the claim is checked")
	}

	// A Service of no MultiClusterService, selected by the same policy: its propagation shows
	// that Karmada's detector, scheduler and binding controller saw the policy.
	const unclaimed = "bar"
	createService(t, testEnv.ControlPlane, ns, unclaimed)
	createPropagationPolicy(t, ns, "services", []string{app, unclaimed}, []string{m2, m3})
	for _, cluster := range []string{m2, m3} {
		eventually(t, 60*time.Second, func() error {
			w, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).Namespace(naming.ExecutionNamespace(cluster)).
				Get(context.Background(), naming.WorkName("Service", unclaimed, ns), metav1.GetOptions{})
			if err == nil {
				t.Logf("the policy propagated Service %s: Work %s/%s, ResourceBinding %s", unclaimed, w.GetNamespace(), w.GetName(),
					w.GetAnnotations()[annotationResourceBindingName])
			}
			return err
		})
	}

	expectOneWriter(t, ns, m1, m2, m3)
	// Idle: no Work, member Service or slice changes, and the claim's own write (a change of
	// the Service's labels, which the starter signals) set off no loop of reconciles.
	id := mcs.WorkflowID(ns, app)
	settled, idle := ownedVersions(t, ns, m1, m2), mcsStateOf(t, id)
	time.Sleep(60 * time.Second)
	assert.Equal(t, settled, ownedVersions(t, ns, m1, m2), "nothing may change while nothing happens")
	assert.Equal(t, idle.Reconciles, mcsStateOf(t, id).Reconciles, "reconciles while nothing happens")
	expectOneWriter(t, ns, m1, m2, m3)

	// A full pass, as the safety resync runs one: it reads and writes nothing new.
	before := mcsStateOf(t, id)
	c, err := testEnv.Temporal.Dial(context.Background())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SignalWorkflow(context.Background(), id, "", mcs.SignalResync, mcs.ResyncRequest{}))
	eventually(t, 30*time.Second, func() error {
		after := mcsStateOf(t, id)
		if !after.LastFullRun.After(before.LastFullRun) || after.Reconciles <= before.Reconciles {
			return fmt.Errorf("no full pass since %s (reconciles %d, now %d)", before.LastFullRun, before.Reconciles, after.Reconciles)
		}
		if after.Phase != mcs.PhaseReady {
			return fmt.Errorf("phase %s after the full pass", after.Phase)
		}
		t.Logf("full pass: reconcile %d, at %s (the one before: %d, at %s)", after.Reconciles, after.LastFullRun, before.Reconciles, before.LastFullRun)
		return nil
	})
	time.Sleep(5 * time.Second) // an echo of the pass, if any, has arrived
	assert.Equal(t, settled, ownedVersions(t, ns, m1, m2), "a full pass may change nothing")
	expectOneWriter(t, ns, m1, m2, m3)
}

// A MultiClusterService that stops propagating its Service releases it: when its type is no
// longer CrossCluster (standalone only: the change is refused beside Karmada) and when it is
// deleted, the claim goes and nothing else of the Service does. A claim removed by hand comes
// back.
func TestMCSServiceClaimReleased(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	exposeFromMember1(t, ns, 1)
	services := testEnv.ControlPlane.Client().CoreV1().Services(ns)
	userMeta := []byte(`{"metadata":{"labels":{"team":"blue"},"annotations":{"owner":"blue@example.com"}}}`)
	_, err := services.Patch(context.Background(), app, types.MergePatchType, userMeta, metav1.PatchOptions{})
	require.NoError(t, err)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectClaimed(t, ns)

	// Removed by hand, the claim is put back.
	unclaim := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, naming.LabelClaimedBy)
	_, err = services.Patch(context.Background(), app, types.MergePatchType, []byte(unclaim), metav1.PatchOptions{})
	require.NoError(t, err)
	expectClaimed(t, ns)

	// spec.types is immutable (the CRD's rule, and karmada-webhook's beside Karmada): only
	// standalone, where the CRD is karmadaflow's, is it changed, with the rule lifted for the
	// while, as by a MultiClusterService stored before the rule.
	if !besideKarmada() {
		withoutMCSSchema(t, func() {
			updateMCSSpec(t, ns, app, map[string]any{"types": []any{"LoadBalancer"}})
			expectCondition(t, ns, app, networkingv1alpha1.ConditionServiceApplied, "False", "LoadBalancer")
			expectReleased(t, ns)

			updateMCSSpec(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
			expectClaimed(t, ns)
		})
	}

	require.NoError(t, testEnv.ControlPlane.Dynamic().Resource(kube.MultiClusterServices).Namespace(ns).Delete(context.Background(), app, metav1.DeleteOptions{}))
	waitMCSRemoved(t, ns, app, 60*time.Second)
	expectReleased(t, ns)
	svc, err := services.Get(context.Background(), app, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "blue", svc.Labels["team"], "the user's label stays")
	assert.Equal(t, "blue@example.com", svc.Annotations["owner"], "the user's annotation stays")
	assert.NotEmpty(t, svc.Spec.Ports, "the Service's spec stays")
}

// expectClaimed waits for the control plane's Service to carry the claim of its
// MultiClusterService, and no policy's.
func expectClaimed(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error { return claimed(ns) })
}

// within retries check until it returns nil or timeout passes, and returns its last error.
func within(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// claimed fails unless the control plane's Service carries the claim of its
// MultiClusterService, and no policy's.
func claimed(ns string) error {
	svc, err := testEnv.ControlPlane.Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
	if err != nil {
		return err
	}
	m, err := getMCS(ns, app)
	if err != nil {
		return err
	}
	want := map[string]string{naming.LabelClaimedBy: naming.ClaimedByMultiClusterService}
	if id := m.Labels[networkingv1alpha1.LabelMCSPermanentID]; id != "" {
		want[networkingv1alpha1.LabelMCSPermanentID] = id
	} else if besideKarmada() {
		return fmt.Errorf("karmada-webhook gave MultiClusterService %s/%s no permanent ID", ns, app)
	}
	for k, v := range want {
		if svc.Labels[k] != v {
			return fmt.Errorf("Service label %s is %q, want %q (labels %v)", k, svc.Labels[k], v, svc.Labels)
		}
	}
	if svc.Annotations[networkingv1alpha1.AnnotationMCSName] != app || svc.Annotations[networkingv1alpha1.AnnotationMCSNamespace] != ns {
		return fmt.Errorf("Service annotations %v do not name MultiClusterService %s/%s", svc.Annotations, ns, app)
	}
	for _, k := range []string{naming.LabelPropagationPolicyPermanentID, naming.LabelClusterPropagationPolicyPermanentID} {
		if _, ok := svc.Labels[k]; ok {
			return fmt.Errorf("Service still carries a policy's claim %s", k)
		}
	}
	return nil
}

// expectReleased waits for the control plane's Service to carry no claim of a
// MultiClusterService.
func expectReleased(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		svc, err := testEnv.ControlPlane.Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, k := range []string{naming.LabelClaimedBy, networkingv1alpha1.LabelMCSPermanentID} {
			if _, ok := svc.Labels[k]; ok {
				return fmt.Errorf("Service still carries label %s (labels %v)", k, svc.Labels)
			}
		}
		for _, k := range []string{networkingv1alpha1.AnnotationMCSName, networkingv1alpha1.AnnotationMCSNamespace} {
			if _, ok := svc.Annotations[k]; ok {
				return fmt.Errorf("Service still carries annotation %s", k)
			}
		}
		return nil
	})
}

// servesPropagationPolicies tells whether the control plane serves Karmada's
// PropagationPolicy API.
func servesPropagationPolicies(t *testing.T) bool {
	t.Helper()
	resources, err := testEnv.ControlPlane.Client().Discovery().ServerResourcesForGroupVersion(propagationPolicies.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == propagationPolicies.Resource })
}

// createPropagationPolicy creates a PropagationPolicy of the namespace that propagates the
// named Services to the clusters.
func createPropagationPolicy(t *testing.T, ns, name string, serviceNames, clusters []string) {
	t.Helper()
	var selectors, clusterNames []any
	for _, s := range serviceNames {
		selectors = append(selectors, map[string]any{"apiVersion": "v1", "kind": "Service", "name": s})
	}
	for _, c := range clusters {
		clusterNames = append(clusterNames, c)
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"resourceSelectors": selectors,
			"placement":         map[string]any{"clusterAffinity": map[string]any{"clusterNames": clusterNames}},
		},
	}}
	created, err := testEnv.ControlPlane.Dynamic().Resource(propagationPolicies).Namespace(ns).Create(context.Background(), policy, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Logf("PropagationPolicy %s/%s created: labels %v, finalizers %v", ns, name, created.GetLabels(), created.GetFinalizers())
}

// expectOneWriter checks that karmadaflow alone writes the Service's Works: no
// ResourceBinding exists for the Service, no Work of its name is in a cluster only the policy
// places it in (outsider), and the Service Works of the MultiClusterService bear no mark of
// Karmada's binding controller and were written by karmadaflow alone (status aside).
func expectOneWriter(t *testing.T, ns, provider, consumer, outsider string) {
	t.Helper()
	ctx := context.Background()
	_, err := testEnv.ControlPlane.Dynamic().Resource(resourceBindings).Namespace(ns).Get(ctx, app+"-service", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "ResourceBinding %s/%s-service: want none, got err %v", ns, app, err)
	workName := naming.WorkName("Service", app, ns)
	works := testEnv.ControlPlane.Dynamic().Resource(kube.Works)
	_, err = works.Namespace(naming.ExecutionNamespace(outsider)).Get(ctx, workName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "Work %s in %s, where only the policy places the Service: want none, got err %v", workName, outsider, err)
	for _, cluster := range []string{provider, consumer} {
		w, err := works.Namespace(naming.ExecutionNamespace(cluster)).Get(ctx, workName, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotContains(t, w.GetLabels(), labelResourceBindingID, "Work %s/%s", w.GetNamespace(), workName)
		assert.NotContains(t, w.GetAnnotations(), annotationResourceBindingName, "Work %s/%s", w.GetNamespace(), workName)
		for _, entry := range w.GetManagedFields() {
			if entry.Subresource == "" {
				assert.Equal(t, naming.FieldManager, entry.Manager, "a writer of Work %s/%s other than karmadaflow", w.GetNamespace(), workName)
			}
		}
	}
}
