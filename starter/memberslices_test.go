package main

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/karmadaflow/karmadaflow/internal/options"
)

func memberSlice(name, service string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: service}}}
}

// A member's EndpointSlice watch runs on a standby too: its informer syncs, and its changes are
// queued but signal nothing. Once the replica leads, the MultiClusterService of every Service
// is signalled, those whose slices changed or went while it stood by included; when the
// leadership ends, nothing more is.
func TestMemberSlicesSignalOnlyWhileLeading(t *testing.T) {
	member := kubefake.NewClientset(memberSlice("a-1", "a"), memberSlice("b-1", "b"))
	synced := prometheus.NewGauge(prometheus.GaugeOpts{Name: "synced"})
	deps := dependencies{Options: options.Default(options.Starter), Logger: zap.NewNop(),
		ControlPlane: &options.Clients{}, memberInformersSynced: synced, leadership: newLeadership()}
	var mu sync.Mutex
	var signalled []string
	s := newMemberSlices(deps, func(_ context.Context, cluster, key string) error {
		mu.Lock()
		defer mu.Unlock()
		signalled = append(signalled, cluster+" "+key)
		return nil
	})
	s.connect = func(context.Context, string) (kubernetes.Interface, error) { return member, nil }
	signals := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(signalled))
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s.ensure(ctx, "member1", decodeUnstructured(clusterJSON("member1", "True")))
	require.Eventually(t, func() bool { return testutil.ToFloat64(synced) == 1 }, 5*time.Second, 10*time.Millisecond)

	// Standing by: changes are queued, not handled.
	slicesOf := member.DiscoveryV1().EndpointSlices("demo")
	_, err := slicesOf.Create(ctx, memberSlice("c-1", "c"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, slicesOf.Delete(ctx, "a-1", metav1.DeleteOptions{}))
	require.Never(t, func() bool { return len(signals()) > 0 }, 300*time.Millisecond, 10*time.Millisecond)

	leading, stopLeading := context.WithCancel(ctx)
	deps.leadership.lead(leading)
	want := []string{"member1 demo/a", "member1 demo/b", "member1 demo/c"}
	require.Eventually(t, func() bool { return slices.Equal(signals(), want) }, 5*time.Second, 10*time.Millisecond)

	// A replica that lost the Lease exits: its watches end with the leadership.
	stopLeading()
	require.Eventually(t, func() bool { return testutil.ToFloat64(synced) == 0 }, 5*time.Second, 10*time.Millisecond)
	_, err = slicesOf.Create(ctx, memberSlice("d-1", "d"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Never(t, func() bool { return len(signals()) > len(want) }, 300*time.Millisecond, 10*time.Millisecond)
}
