package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

// TestMCSForeignObjectIsNeitherAdoptedNorDeleted: a consumer holds, before dispatch, an
// EndpointSlice of the name a provider's slice is dispatched under, which someone else
// created. karmadaflow leaves it as it is, says so in EndpointSliceApplied, and leaves it in
// place when the MultiClusterService is deleted.
func TestMCSForeignObjectIsNeitherAdoptedNorDeleted(t *testing.T) {
	standaloneOnly(t)
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	ctx := context.Background()

	// The provider's slice, of a name the test chooses (the member's controller names its own
	// at random).
	_, err := testEnv.Member(m1).Client().DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-manual", Labels: map[string]string{
			networkingv1alpha1.LabelServiceName: app, networkingv1alpha1.LabelEndpointSliceManagedBy: "e2e.test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// Someone else's slice in the consumer, under the name that slice is dispatched as.
	foreignName := naming.DispatchedSliceName(m1, app+"-manual")
	_, err = testEnv.Member(m2).Client().DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: foreignName, Labels: map[string]string{"owner": "someone-else"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	createService(t, testEnv.ControlPlane, ns, app)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "False", m2, foreignName, "not created by karmadaflow")

	unchanged := func() {
		t.Helper()
		got, err := testEnv.Member(m2).Client().DiscoveryV1().EndpointSlices(ns).Get(ctx, foreignName, metav1.GetOptions{})
		require.NoError(t, err, "the foreign slice stays")
		require.Equal(t, map[string]string{"owner": "someone-else"}, got.Labels, "not adopted")
		require.Empty(t, got.Annotations)
		require.Len(t, got.Endpoints, 1)
		require.Equal(t, []string{"10.9.9.9"}, got.Endpoints[0].Addresses)
		for _, f := range got.ManagedFields {
			require.NotEqual(t, naming.FieldManager, f.Manager, "karmadaflow wrote none of it")
		}
	}
	unchanged()

	require.NoError(t, testEnv.ControlPlane.Dynamic().Resource(kube.MultiClusterServices).Namespace(ns).Delete(ctx, app, metav1.DeleteOptions{}))
	eventually(t, 60*time.Second, func() error {
		if _, err := getMCS(ns, app); err == nil {
			return fmt.Errorf("MultiClusterService still exists")
		}
		if works, err := worksOf(ns, app); err != nil || len(works) > 0 {
			return fmt.Errorf("works remain: %v (%v)", works, err)
		}
		return nil
	})
	unchanged()
}
