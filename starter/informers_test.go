package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/internal/options"
)

// The starter's informers, as newTriggers sets them up, store trimmed objects, and its
// handlers read the same from those stores as from full ones.
func TestInformersStoreTrimmedObjects(t *testing.T) {
	karmadaWork := decodeUnstructured(karmadaWorkJSON(1, "member2"))
	dispatched := decodeUnstructured(dispatchedWorkJSON(1)) // demo/svc-1 in member2, applied
	collected := decodeUnstructured(dispatchedWorkJSON(2))
	collected.SetNamespace("karmada-es-member1")
	labels := collected.GetLabels()
	labels["karmadaflow.io/work-role"] = "collected"
	collected.SetLabels(labels)
	controlPlaneObjects := []*unstructured.Unstructured{
		karmadaWork, dispatched, collected,
		decodeUnstructured(mcsJSON(1, "[]", "[]", networkingv1alpha1.ReasonEndpointSliceAppliedFailed)),
		decodeUnstructured(mcsJSON(2, `[{"name": "member1"}]`, `[{"name": "member2"}]`, networkingv1alpha1.ReasonEndpointSliceAppliedSuccess)),
		decodeUnstructured(clusterJSON("member1", "True")), decodeUnstructured(clusterJSON("member2", "True")),
		decodeUnstructured(clusterJSON("member3", "False")),
	}
	karmada := decodeUnstructured(karmadaJSON("demo", `{"operator.karmada.io/disable-cascading-deletion": "true"}`))
	service := decodeService(serviceJSON(1))

	for _, execution := range []bool{true, false} {
		opts := options.Default(options.Starter)
		opts.EnableWorkExecution = execution
		var objs []runtime.Object
		for _, u := range controlPlaneObjects {
			objs = append(objs, u.DeepCopy())
		}
		deps := dependencies{
			Options: opts, Logger: zap.NewNop(),
			ControlPlane: &options.Clients{
				Kube: kubefake.NewClientset(service.DeepCopy()),
				Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
					kube.Works: "WorkList", kube.MultiClusterServices: "MultiClusterServiceList", kube.Clusters: "ClusterList",
				}, objs...),
			},
			Host: &options.Clients{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, karmada.DeepCopy())},
		}
		deps.newInformerFactories()
		// What newTriggers does, keeping the MultiClusterService triggers' informers.
		m, _, err := newMCSTriggers(deps)
		require.NoError(t, err)
		_, err = newKarmadaTrigger(deps)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		for _, f := range deps.informerFactories() {
			f.Start(ctx.Done())
		}
		require.True(t, waitForFactories(ctx, deps))

		stored := func(informer cache.SharedIndexInformer, transform cache.TransformFunc, want ...*unstructured.Unstructured) {
			t.Helper()
			var keys []string
			for _, u := range want {
				trimmed, _ := transform(u)
				obj, exists, err := informer.GetStore().Get(u)
				require.NoError(t, err)
				if assert.True(t, exists, "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName()) {
					assert.Equal(t, trimmed, obj)
				}
				keys = append(keys, objectKey(t, u))
			}
			assert.ElementsMatch(t, keys, informer.GetStore().ListKeys())
		}
		if execution {
			stored(m.worksInformer, transformWork, karmadaWork, dispatched, collected)
		} else {
			stored(m.worksInformer, transformWork, dispatched)
		}
		stored(m.mcs, transformMCS, controlPlaneObjects[3:5]...)
		stored(m.clusters, transformCluster, controlPlaneObjects[5:]...)
		stored(deps.HostDynamic.ForResource(kube.Karmadas).Informer(), transformKarmada, karmada)
		svc, exists, err := deps.ControlPlaneKube.Core().V1().Services().Informer().GetStore().GetByKey("demo/svc-1")
		require.NoError(t, err)
		require.True(t, exists)
		assert.Empty(t, svc.(*corev1.Service).ManagedFields)
		assert.NotContains(t, svc.(*corev1.Service).Annotations, corev1.LastAppliedConfigAnnotation)
		assert.Equal(t, service.Spec, svc.(*corev1.Service).Spec)

		// The handlers' reads of the stores.
		assert.Equal(t, []string{"member3"}, m.unreadyClusters())
		assert.True(t, m.appliedDisagrees("demo/svc-1"), "its Work is applied, its condition says failed")
		assert.False(t, m.appliedDisagrees("demo/svc-2"))
		var involved []string
		for _, obj := range m.mcs.GetStore().List() {
			if u := obj.(*unstructured.Unstructured); involves(u, "member3") {
				involved = append(involved, u.GetName())
			}
		}
		assert.Equal(t, []string{"svc-1"}, involved)

		cancel()
		for _, f := range deps.informerFactories() {
			f.Shutdown()
		}
	}
}
