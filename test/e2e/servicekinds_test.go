package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/karmadaflow/karmadaflow/test/env"
)

// TestMCSHeadlessService: a headless Service reaches the consumer headless (clusterIP None),
// and the dispatched slices keep the hostnames of the provider's StatefulSet pods, so that
// db-0.db.<ns>.svc names a pod in another cluster, as with Karmada's own propagation.
func TestMCSHeadlessService(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	const name = "db"
	ctx := context.Background()
	headless := func(cluster *env.Cluster) {
		_, err := cluster.Client().CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "sql", Port: 5432, TargetPort: intstr.FromInt32(5432)}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	labels := map[string]string{"app": name}
	_, err := testEnv.Member(m1).Client().AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:test", Ports: []corev1.ContainerPort{{ContainerPort: 5432}}}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	headless(testEnv.Member(m1))
	headless(testEnv.ControlPlane)
	createMCS(t, ns, name, mcsSpec([]string{m1}, []string{m2}))

	expectRemote(t, testEnv.Member(m2), ns, name, map[string]int{m1: 2})
	consumer, err := testEnv.Member(m2).Client().CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ClusterIPNone, consumer.Spec.ClusterIP, "the consumer's Service is headless")
	eventually(t, 30*time.Second, func() error {
		got, err := dispatched(testEnv.Member(m2), ns, name)
		if err != nil {
			return err
		}
		var hostnames []string
		for _, s := range got {
			for _, ep := range s.Endpoints {
				hostnames = append(hostnames, ptr.Deref(ep.Hostname, ""))
			}
		}
		slices.Sort(hostnames)
		if !slices.Equal(hostnames, []string{"db-0", "db-1"}) {
			return fmt.Errorf("hostnames of the dispatched endpoints: %q", hostnames)
		}
		return nil
	})
}

// TestMCSIPFamilyPolicy: the Service's IP family policy reaches the consumer as written; it
// used to be cleared, which turns a dual-stack Service into a single-stack one. (The
// environment's clusters are single-stack, where PreferDualStack is allowed and a
// RequireDualStack Service cannot be created.)
func TestMCSIPFamilyPolicy(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	ctx := context.Background()
	deployApp(t, testEnv.Member(m1), ns, app, 1)
	prefer := corev1.IPFamilyPolicyPreferDualStack
	_, err := testEnv.ControlPlane.Client().CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app}, IPFamilyPolicy: &prefer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))

	expectRemote(t, testEnv.Member(m2), ns, app, map[string]int{m1: 1})
	consumer, err := testEnv.Member(m2).Client().CoreV1().Services(ns).Get(ctx, app, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, prefer, ptr.Deref(consumer.Spec.IPFamilyPolicy, ""), "the consumer's IP family policy")
}

// TestMCSConsumerServiceDropsWhatTheServiceDrops: a port and a selector key taken out of the
// Service are taken out of the consumer's copy too. The copy was created, and a create records
// the fields it set as updated, not applied: the next write takes them over as applied, so that
// the apply removes what it no longer sets.
func TestMCSConsumerServiceDropsWhatTheServiceDrops(t *testing.T) {
	ns := testNamespace(t)
	m1, m2, _ := members(t)
	ctx := context.Background()
	services := testEnv.ControlPlane.Client().CoreV1().Services(ns)
	_, err := services.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app, "tier": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090)},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createMCS(t, ns, app, mcsSpec([]string{m1}, []string{m2}))

	consumerHas := func(selector map[string]string, ports ...string) func() error {
		return func() error {
			svc, err := testEnv.Member(m2).Client().CoreV1().Services(ns).Get(ctx, app, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var names []string
			for _, p := range svc.Spec.Ports {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, ports) || !maps.Equal(svc.Spec.Selector, selector) {
				return fmt.Errorf("the consumer's Service has ports %q and selector %v", names, svc.Spec.Selector)
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, consumerHas(map[string]string{"app": app, "tier": "web"}, "http", "metrics"))

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := services.Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Spec.Selector = map[string]string{"app": app}
		svc.Spec.Ports = svc.Spec.Ports[:1]
		_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
		return err
	}))
	eventually(t, 60*time.Second, consumerHas(map[string]string{"app": app}, "http"))
}
