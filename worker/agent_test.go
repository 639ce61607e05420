package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
)

// The agent's two Work triggers split the Works of its namespace: the Service of a collect
// request or of a collected slice goes to the collector, every other Work to the executor.
func TestAgentWorkKeys(t *testing.T) {
	collected := mcsactivities.AgentCollectedWork("member3", &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "foo-abc", Namespace: "demo", Labels: map[string]string{networkingv1alpha1.LabelServiceName: "foo"}}})
	request := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"workload": map[string]any{"manifests": []any{
		map[string]any{"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService"}}}}}}
	request.SetNamespace("karmada-es-member3")
	request.SetName("foo-mcs")
	request.SetLabels(map[string]string{networkingv1alpha1.LabelMCSNamespace: "demo", networkingv1alpha1.LabelMCSName: "foo"})
	other := &unstructured.Unstructured{Object: map[string]any{}}
	other.SetNamespace("karmada-es-member3")
	other.SetName("web-deployment")

	executor := &agentWorkExecutor{}
	for _, tc := range []struct {
		work                   any
		executorKey, collector string
	}{
		{collected, "", "demo/foo"},
		{cache.DeletedFinalStateUnknown{Obj: collected}, "", "demo/foo"},
		{request, "", "demo/foo"},
		{other, "karmada-es-member3/web-deployment", ""},
	} {
		key, err := executor.key(tc.work)
		assert.NoError(t, err)
		assert.Equal(t, tc.executorKey, key)
		key, err = collectKey(tc.work)
		assert.NoError(t, err)
		assert.Equal(t, tc.collector, key)
	}
}

func TestRetryDelayDoublesUpToAMinute(t *testing.T) {
	assert.Equal(t, time.Second, retryDelay(1))
	assert.Equal(t, 4*time.Second, retryDelay(3))
	assert.Equal(t, time.Minute, retryDelay(7))
	assert.Equal(t, time.Minute, retryDelay(100))
}
