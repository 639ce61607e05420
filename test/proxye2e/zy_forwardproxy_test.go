// The name sorts after the other tests, which expect both members reachable directly, and
// before zz_member_down_test.go.

package proxye2e

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/forwardproxy"
)

// TestMemberBehindForwardProxy: with member2 behind an HTTP forward proxy (spec.proxyURL and
// the header it requires in spec.proxyHeader), under a name only the proxy resolves, the
// global proxy lists member2's pods through it; with the forward proxy stopped, member2 is
// reported unreachable.
func TestMemberBehindForwardProxy(t *testing.T) {
	ctx := context.Background()
	member := testEnv.Member("member2")
	server, err := url.Parse(member.Server)
	require.NoError(t, err)
	proxyCtx, stopProxy := context.WithCancel(ctx)
	defer stopProxy()
	// The member's serving certificate names kubernetes.default.svc, which nothing resolves.
	const name = "kubernetes.default.svc"
	proxy, err := forwardproxy.Start(proxyCtx, forwardproxy.Options{
		Scheme: "http", Name: name, Target: server.Host, Header: http.Header{"X-Karmadaflow-Tenant": {"proxy-e2e"}},
	})
	require.NoError(t, err)

	clusters := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters)
	patch := func(spec string) {
		_, err := clusters.Patch(ctx, "member2", types.MergePatchType, []byte(`{"spec":`+spec+`}`), metav1.PatchOptions{})
		require.NoError(t, err)
		// Clients of the member built before the change would still reach it directly.
		require.NoError(t, svc.Restart(ctx, nil, nil))
	}
	t.Cleanup(func() {
		patch(`{"apiEndpoint":"` + member.Server + `","proxyURL":null,"proxyHeader":null}`)
		expectBothMembersListed(t)
	})
	patch(`{"apiEndpoint":"https://` + net.JoinHostPort(name, server.Port()) + `","proxyURL":"` + proxy.URL +
		`","proxyHeader":{"X-Karmadaflow-Tenant":"proxy-e2e"}}`)

	expectBothMembersListed(t)
	out, err := kubectlAs("alice", "get", "pod", "web-2", "-o", "name")
	require.NoError(t, err, out)
	assert.Positive(t, proxy.Tunnels())
	assert.Zero(t, proxy.Refused())

	stopProxy()
	require.Eventually(t, func() bool {
		out, _ := kubectlAs("alice", "get", "pods", "-A", "-o", "name", "--request-timeout=60s")
		return strings.Contains(out, "cluster member2 is unreachable") && !strings.Contains(out, "web-2")
	}, 90*time.Second, time.Second, "member2 stays listed with its forward proxy stopped")
}

// expectBothMembersListed waits until the proxy lists the pods of both members.
func expectBothMembersListed(t *testing.T) {
	t.Helper()
	var out string
	require.Eventually(t, func() bool {
		var err error
		out, err = kubectlAs("alice", "get", "pods", "-A", "-o", "name")
		return err == nil && strings.Contains(out, "web-1") && strings.Contains(out, "web-2")
	}, time.Minute, 500*time.Millisecond, "the proxy does not list both members' pods: %s", out)
}
