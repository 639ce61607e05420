package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	mcsactivities "github.com/karmadaflow/karmadaflow/activities/mcs"
	networkingv1alpha1 "github.com/karmadaflow/karmadaflow/api/networking/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/env"
)

// One writer per member object: once a MultiClusterService has converged, nothing changes
// while nothing happens, and a burst of 200 updates (100 of the Service, 100 of the provider's
// endpoints) reaches every member without a single write being refused. Beside Karmada, a
// write karmadaflow made behind the back of Karmada's execution controller, or a manifest
// without Karmada's marks, shows here as a changed object or a refused sync.
func TestMCSOneOwnerIdleAndBusy(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, m3 := members(t)
	exposeFromMember1(t, ns, 1)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2, m3}))
	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	expectRemote(t, testEnv.Member(m3), ns, app, map[string]int{m1: 1})
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "True")
	since := time.Now()

	// Idle: 60 s without a change of any Work of the MultiClusterService or of any object it
	// put into a member.
	settled := ownedVersions(t, ns, m1, m2, m3)
	time.Sleep(60 * time.Second)
	assert.Equal(t, settled, ownedVersions(t, ns, m1, m2, m3), "nothing may change while nothing happens")

	// Busy: 200 updates as fast as the API server takes them.
	services := testEnv.ControlPlane.Client().CoreV1().Services(ns)
	for i := 1; i <= 100; i++ {
		svc, err := services.Get(context.Background(), app, metav1.GetOptions{})
		require.NoError(t, err)
		metav1.SetMetaDataAnnotation(&svc.ObjectMeta, "e2e.karmadaflow.io/update", strconv.Itoa(i))
		_, err = services.Update(context.Background(), svc, metav1.UpdateOptions{})
		require.NoError(t, err)
		scale(t, testEnv.Member(m1), ns, app, int32(1+i%2)) // ends at 1
	}
	for _, consumer := range []string{m2, m3} {
		eventually(t, 60*time.Second, func() error {
			svc, err := testEnv.Member(consumer).Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := svc.Annotations["e2e.karmadaflow.io/update"]; got != "100" {
				return fmt.Errorf("%s holds update %q of the Service, want 100", consumer, got)
			}
			return nil
		})
		expectRemote(t, testEnv.Member(consumer), ns, app, map[string]int{m1: 1})
	}
	expectCondition(t, ns, app, networkingv1alpha1.ConditionEndpointSliceApplied, "True")
	expectCondition(t, ns, app, networkingv1alpha1.ConditionServiceApplied, "True")
	eventually(t, 30*time.Second, func() error { return worksApplied(ns) })
	for _, cluster := range []string{m1, m2, m3} {
		assert.Empty(t, refusedSyncs(t, ns, cluster, since), "writes refused for Works in %s", cluster)
	}
}

// ownedVersions are the resourceVersions of the MultiClusterService's Works and of the
// Services and dispatched slices of the Service in the given members, by kind, cluster and name.
func ownedVersions(t *testing.T, ns string, clusters ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	works, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{networkingv1alpha1.LabelMCSName: app, networkingv1alpha1.LabelMCSNamespace: ns}.String(),
	})
	require.NoError(t, err)
	for _, w := range works.Items {
		out["Work "+w.GetNamespace()+"/"+w.GetName()] = w.GetResourceVersion()
	}
	for _, name := range clusters {
		member := testEnv.Member(name)
		svc, err := member.Client().CoreV1().Services(ns).Get(context.Background(), app, metav1.GetOptions{})
		require.NoError(t, err)
		out["Service "+name] = svc.ResourceVersion
		slices, err := dispatched(member, ns, app)
		require.NoError(t, err)
		for _, s := range slices {
			out["EndpointSlice "+name+"/"+s.Name] = s.ResourceVersion
		}
	}
	require.NotEmpty(t, works.Items)
	return out
}

// worksApplied fails while a Work the MultiClusterService has members apply is not applied
// at its generation.
func worksApplied(ns string) error {
	works, err := testEnv.ControlPlane.Dynamic().Resource(kube.Works).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.Set{networkingv1alpha1.LabelMCSName: app, networkingv1alpha1.LabelMCSNamespace: ns}.String(),
	})
	if err != nil {
		return err
	}
	for _, w := range works.Items {
		if suspended, _, _ := unstructured.NestedBool(w.Object, "spec", "suspendDispatching"); suspended {
			continue
		}
		if applied, message := mcsactivities.WorkApplied(&w); !applied {
			return fmt.Errorf("Work %s/%s is not applied: %q", w.GetNamespace(), w.GetName(), message)
		}
	}
	return nil
}

// refusedSyncs are the Warning Events, since the given time, about the MultiClusterService's
// Works in the cluster's execution namespace: Karmada's execution controller records one for
// each sync a member refused.
func refusedSyncs(t *testing.T, ns, cluster string, since time.Time) []string {
	t.Helper()
	events, err := testEnv.ControlPlane.Client().CoreV1().Events(env.ExecutionNamespacePrefix+cluster).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=Work,type=" + corev1.EventTypeWarning})
	require.NoError(t, err)
	works, err := worksOf(ns, app)
	require.NoError(t, err)
	mine := map[string]bool{}
	for _, w := range works {
		mine[w] = true
	}
	var out []string
	for _, e := range events.Items {
		if e.LastTimestamp.Time.Before(since.Add(-time.Second)) || !mine[e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name] {
			continue
		}
		out = append(out, e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
	}
	return out
}
