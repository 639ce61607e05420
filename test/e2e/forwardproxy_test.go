package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmadaflow/karmadaflow/internal/kube"
	"github.com/karmadaflow/karmadaflow/test/forwardproxy"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
)

// behindProxyName is the name member3's API server is reached under while it sits behind a
// forward proxy. Its serving certificate names it; nothing on the machine resolves it but the
// proxy, so every connection that reaches the member under it went through the proxy.
const behindProxyName = "kubernetes.default.svc"

// TestMemberBehindForwardProxy puts member3 behind a forward proxy (spec.proxyURL, with the
// header it requires in spec.proxyHeader) under a name only the proxy resolves, and restarts
// the service so that no connection made before remains. The starter's EndpointSlice watch
// and the worker's collection (member3 provides), Work execution (member3 consumes) and the
// health probes (member3 turns not Ready when the proxy stops) all go through it.
func TestMemberBehindForwardProxy(t *testing.T) {
	for _, scheme := range []string{"https", "socks5"} {
		t.Run(scheme, func(t *testing.T) { testMemberBehindForwardProxy(t, scheme) })
	}
}

func testMemberBehindForwardProxy(t *testing.T, scheme string) {
	ctx := context.Background()
	m1, _, m3 := members(t)
	member := testEnv.Member(m3)
	server, err := url.Parse(member.Server)
	require.NoError(t, err)

	proxyCtx, stopProxy := context.WithCancel(ctx)
	defer stopProxy()
	opts := forwardproxy.Options{Scheme: scheme, Name: behindProxyName, Target: server.Host}
	header := map[string]any{}
	if scheme != "socks5" {
		opts.Header = http.Header{"X-Karmadaflow-Tenant": {"e2e", "proxyurl"}}
		header["X-Karmadaflow-Tenant"] = "e2e,proxyurl"
	}
	if scheme == "https" {
		opts.TLS, err = member.ServingTLS()
		require.NoError(t, err)
	}
	proxy, err := forwardproxy.Start(proxyCtx, opts)
	require.NoError(t, err)

	clusters := testEnv.ControlPlane.Dynamic().Resource(kube.Clusters)
	patchCluster := func(spec string) {
		_, err := clusters.Patch(ctx, m3, types.MergePatchType, []byte(`{"spec":`+spec+`}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	var restoreOnce sync.Once
	restore := func() {
		restoreOnce.Do(func() {
			patchCluster(`{"apiEndpoint":"` + member.Server + `","proxyURL":null,"proxyHeader":null}`)
			require.NoError(t, svc.Restart(ctx, nil, nil))
		})
	}
	t.Cleanup(restore)
	behind := "https://" + net.JoinHostPort(behindProxyName, server.Port())
	headerJSON, err := json.Marshal(header)
	require.NoError(t, err)
	patchCluster(`{"apiEndpoint":"` + behind + `","proxyURL":"` + proxy.URL + `","proxyHeader":` + string(headerJSON) + `}`)
	// Member clients built before the change would still reach member3 directly.
	require.NoError(t, svc.Restart(ctx, nil, nil))

	ns := testNamespace(t)
	logStateOnFailure(t, mcs.WorkflowID(ns, app))
	deployApp(t, testEnv.Member(m1), ns, app, 1)
	deployApp(t, member, ns, app, 2)
	createService(t, testEnv.ControlPlane, ns, app)
	createMCS(t, ns, app, mcsSpec([]string{m1, m3}, []string{m1, m3}))
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 2}) // collected from member3
	expectRemote(t, member, ns, app, map[string]int{m1: 1})             // applied into member3
	scale(t, member, ns, app, 3)
	expectRemote(t, testEnv.Member(m1), ns, app, map[string]int{m3: 3}) // member3's watch signalled
	require.Positive(t, proxy.Tunnels())
	require.Zero(t, proxy.Refused(), "every connection carried the proxy's header and name")

	expectClusterReady(t, m3, "True")
	stopProxy()
	// The probes fail through the stopped proxy: Ready turns False after the failure threshold.
	eventually(t, testFailureThreshold+30*time.Second, func() error { return clusterReadyIs(m3, "False") })
	restore()
	expectClusterReady(t, m3, "True")
}
