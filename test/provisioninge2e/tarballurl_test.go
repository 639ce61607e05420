package provisioninge2e

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// serveTarballs serves handler on tarballAddress until the test ends and returns the URL
// prefix the workers allow, http://<tarballAddress>/tarballs/.
func serveTarballs(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	l, err := net.Listen("tcp", tarballAddress)
	require.NoError(t, err)
	server := httptest.NewUnstartedServer(handler)
	server.Listener.Close()
	server.Listener = l
	server.Start()
	t.Cleanup(server.Close)
	return server.URL + "/tarballs/"
}

// TestCRDTarballOutsideTheAllowlistIsRefused: a Karmada whose spec.crdTarball names a URL
// outside the workers' --crd-tarball-allowed-url-prefixes (another host, or the allowed host
// and port under another path), or a proxy they do not list, is Ready=False/ValidationError
// naming the field, and the worker never connects there.
func TestCRDTarballOutsideTheAllowlistIsRefused(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.3:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	var connections atomic.Int32
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			_ = conn.Close()
		}
	}()
	outside := "http://" + listener.Addr().String()
	allowed := "http://" + tarballAddress + "/tarballs/"

	ns := hostNamespace(t, "tenant-fetch")
	cases := []struct{ name, url, proxy, field string }{
		{"outside", outside + "/crds.tar.gz", "", "spec.crdTarball.httpSource.url"},
		{"beside", "http://" + tarballAddress + "/tarballs-old/crds.tar.gz", "", "spec.crdTarball.httpSource.url"},
		{"climbing", allowed + "../crds.tar.gz", "", "spec.crdTarball.httpSource.url"},
		{"proxied", allowed + "crds.tar.gz", outside, "spec.crdTarball.httpSource.proxy.proxyURL"},
	}
	for _, c := range cases {
		source := &operatorv1alpha1.HTTPSource{URL: c.url}
		if c.proxy != "" {
			source.Proxy = &operatorv1alpha1.ProxyConfig{ProxyURL: c.proxy}
		}
		createKarmada(t, &operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
			Spec: operatorv1alpha1.KarmadaSpec{CRDTarball: &operatorv1alpha1.CRDTarball{HTTPSource: source}}})
	}
	for _, c := range cases {
		cond := waitValidationError(t, ns, c.name, c.field)
		assert.Contains(t, cond.Message, "(the worker's --crd-tarball-allowed-", c.name)
		t.Logf("%s: %s", c.name, cond.Message)
	}
	time.Sleep(2 * time.Second) // a connection on its way would have arrived
	assert.Zero(t, connections.Load(), "connections to %s", outside)
	for _, c := range cases {
		deleteKarmada(t, ns, c.name)
	}
}
