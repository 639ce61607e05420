// member2 behind a forward proxy. The case runs among the disruptive cases, before the member
// frozen (disruptive_test.go).

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

// testMemberBehindForwardProxy: with member2 behind a forward proxy (spec.proxyURL, and for an
// HTTP proxy the header it requires in spec.proxyHeader), under a name only the proxy resolves,
// the global proxy lists member2's pods through it, and exec (WebSocket and SPDY), attach and
// port-forward reach web-2 through it; with the forward proxy stopped, member2 is reported
// unreachable. Each change of member2's Cluster restarts the workers and the starter.
func testMemberBehindForwardProxy(t *testing.T) {
	ctx := context.Background()
	member := testEnv.Member("member2")
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
	for _, scheme := range []string{"http", "https", "socks5"} {
		t.Run(scheme, func(t *testing.T) { testMemberBehindForwardProxyOf(t, scheme, patch) })
	}
}

// testMemberBehindForwardProxyOf runs testMemberBehindForwardProxy with a forward proxy of one
// scheme (http, https or socks5); patch sets member2's Cluster spec.
func testMemberBehindForwardProxyOf(t *testing.T, scheme string, patch func(spec string)) {
	member := testEnv.Member("member2")
	server, err := url.Parse(member.Server)
	require.NoError(t, err)
	proxyCtx, stopProxy := context.WithCancel(context.Background())
	defer stopProxy()
	// The member's serving certificate names kubernetes.default.svc, which nothing resolves.
	const name = "kubernetes.default.svc"
	opts := forwardproxy.Options{Scheme: scheme, Name: name, Target: server.Host}
	header := `null`
	if scheme != "socks5" {
		opts.Header = http.Header{"X-Karmadaflow-Tenant": {"proxy-e2e"}}
		header = `{"X-Karmadaflow-Tenant":"proxy-e2e"}`
	}
	if scheme == "https" {
		opts.TLS, err = member.ServingTLS()
		require.NoError(t, err)
	}
	proxy, err := forwardproxy.Start(proxyCtx, opts)
	require.NoError(t, err)
	patch(`{"apiEndpoint":"https://` + net.JoinHostPort(name, server.Port()) + `","proxyURL":"` + proxy.URL +
		`","proxyHeader":` + header + `}`)

	expectBothMembersListed(t)
	out, err := kubectlAs("alice", "get", "pod", "web-2", "-o", "name")
	require.NoError(t, err, out)
	assert.Positive(t, proxy.Tunnels())
	// The member's transport is kept across requests: 20 requests open no tunnel each (client-go
	// caches no transport with a proxy; one built per request left a connection behind each).
	before := proxy.Tunnels()
	for range 20 {
		out, err := kubectlAs("alice", "get", "pod", "web-2", "-o", "name")
		require.NoError(t, err, out)
	}
	assert.LessOrEqual(t, proxy.Tunnels()-before, int64(3), "tunnels opened by 20 requests through the global proxy")

	// Upgraded requests are dialled apart from the member's transport: they too reach the
	// name only the forward proxy resolves.
	expectExecInWeb2AsDirectly(t)
	expectAttachToWeb2AsDirectly(t)
	expectPortForwardRoundTripToWeb2(t, kubeconfigs["alice"])
	assert.Zero(t, proxy.Refused(), "every connection carried the proxy's header and name")

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
