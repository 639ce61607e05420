package execution

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/members"
	"github.com/karmadaflow/karmadaflow/internal/naming"
)

var endpointSlices = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}

// memberWith is a member whose API server holds objs and whose watch cache (reads at
// resourceVersion "0") has not seen any of them yet.
func memberWith(objs ...runtime.Object) (*members.Member, *dynamicfake.FakeDynamicClient) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{endpointSlices: "EndpointSliceList", kube.Services: "ServiceList"}, objs...)
	client.PrependReactor("get", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if get, ok := action.(k8stesting.GetActionImpl); ok && get.GetOptions.ResourceVersion == "0" {
			return true, nil, apierrors.NewNotFound(get.GetResource().GroupResource(), get.Name)
		}
		return false, nil, nil
	})
	discovery := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "discovery.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "endpointslices", Kind: "EndpointSlice", Namespaced: true}},
	}}}}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery))
	return &members.Member{Name: "member2", Dynamic: client, Mapper: mapper}, client
}

func slice(name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("discovery.k8s.io/v1")
	u.SetKind("EndpointSlice")
	u.SetNamespace("demo")
	u.SetName(name)
	u.SetLabels(lbls)
	u.Object["addressType"] = "IPv4"
	return u
}

// The Works client (nil) is read only for an object stamped with a later generation, which
// none of these is.

func TestStaleNotFoundNeverAdoptsAnotherCreation(t *testing.T) {
	theirs := slice("member1-foo-abcde", map[string]string{"app": "theirs"})
	member, client := memberWith(theirs.DeepCopy())

	err := apply(context.Background(), member, nil, work("u1", 1), slice("member1-foo-abcde", nil), nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not created by karmadaflow")

	got, err := client.Resource(endpointSlices).Namespace("demo").Get(context.Background(), theirs.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"app": "theirs"}, got.GetLabels(), "not adopted")
	for _, action := range client.Actions() {
		assert.NotEqual(t, "patch", action.GetVerb(), "nothing applied over it")
	}
}

func TestForeignServiceOfAnOverwriteManifestCountsAsApplied(t *testing.T) {
	theirs := slice("foo", nil)
	member, _ := memberWith(theirs.DeepCopy())
	manifest := slice("foo", nil)
	manifest.SetAnnotations(map[string]string{naming.AnnotationConflictResolution: naming.ConflictResolutionOverwrite})
	assert.NoError(t, apply(context.Background(), member, nil, work("u1", 1), manifest, nil, nil), "left as it is, as a provider's own Service")
}

func TestAbsentObjectIsCreated(t *testing.T) {
	member, client := memberWith()
	require.NoError(t, apply(context.Background(), member, nil, work("u1", 1), slice("member1-foo-abcde", nil), nil, nil))
	got, err := client.Resource(endpointSlices).Namespace("demo").Get(context.Background(), "member1-foo-abcde", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "endpointslice-foo", got.GetLabels()[naming.LabelWorkName])
}

func TestFullPassReadsItsObjectsByOneList(t *testing.T) {
	ours := stamped(slice("member1-foo-abcde", nil), work("u1", 1), nil)
	ours.SetResourceVersion("7")
	theirs := slice("member1-foo-fghij", map[string]string{"app": "theirs"})
	member, client := memberWith(ours.DeepCopy(), theirs.DeepCopy())

	listed, err := listWorkObjects(context.Background(), member, "karmada-es-member2", nil)
	require.NoError(t, err)
	require.Len(t, listed, 1, "only the objects labelled with the execution namespace")
	require.NotNil(t, listed.get(slice("member1-foo-abcde", nil)))

	client.ClearActions()
	written := NewWrittenVersions(10)
	written.wrote("member2", ours)
	require.NoError(t, apply(context.Background(), member, nil, work("u1", 1), slice("member1-foo-abcde", nil), listed, written))
	assert.Empty(t, client.Actions(), "a listed object still as written is neither read again nor written")

	err = apply(context.Background(), member, nil, work("u1", 1), slice("member1-foo-fghij", nil), listed, written)
	require.Error(t, err, "an object the list does not hold is read by name")
	assert.Contains(t, err.Error(), "not created by karmadaflow")
}
