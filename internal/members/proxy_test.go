package members

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/karmadaflow/karmadaflow/test/forwardproxy"
)

func clusterWith(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
}

func TestProxyOf(t *testing.T) {
	p, err := proxyOf(clusterWith(map[string]any{"apiEndpoint": "https://127.0.0.1:6443"}))
	require.NoError(t, err)
	assert.Nil(t, p, "no proxyURL, no proxy")

	p, err = proxyOf(clusterWith(map[string]any{
		"proxyURL":    "http://127.0.0.1:3128",
		"proxyHeader": map[string]any{"proxy-authorization": "Basic eDp5", "x-tenant": "a, b"},
	}))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:3128", p.url.Host)
	assert.Equal(t, []string{"Basic eDp5"}, p.header.Values("Proxy-Authorization"))
	assert.Equal(t, []string{"a", "b"}, p.header.Values("X-Tenant"), "a comma separates values of one header")

	for _, bad := range []string{"ftp://127.0.0.1:21", "http://", "://x"} {
		_, err := proxyOf(clusterWith(map[string]any{"proxyURL": bad}))
		assert.Error(t, err, bad)
	}
	// The errors reach Events and conditions: never with the proxy's password.
	for _, bad := range []string{"ftp://u:p4ss@127.0.0.1:21", "http://u:p4ss@", "://u:p4ss@x"} {
		_, err := proxyOf(clusterWith(map[string]any{"proxyURL": bad}))
		if assert.Error(t, err, bad) {
			assert.NotContains(t, err.Error(), "p4ss")
		}
	}
}

// TestConfiguredClientGoesThroughProxy reaches a TLS server under a name only the proxy knows,
// through each kind of proxy, with the headers the proxy requires: with the configuration's
// own client, and with a transport that dials with Dialer, as upgrades do.
func TestConfiguredClientGoesThroughProxy(t *testing.T) {
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "member")
	}))
	defer server.Close()
	_, port, err := net.SplitHostPort(server.Listener.Addr().String())
	require.NoError(t, err)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	// httptest's certificate names example.com. The client never resolves it: it hands the
	// name to the proxy, which alone knows where it is.
	const name = "example.com"
	required := http.Header{"X-Tenant": {"a", "b"}}

	clients := map[string]func(*rest.Config) *http.Client{
		"client": func(cfg *rest.Config) *http.Client {
			client, err := rest.HTTPClientFor(cfg)
			require.NoError(t, err)
			return client
		},
		"dialer": func(cfg *rest.Config) *http.Client {
			dial, err := Dialer(cfg)
			require.NoError(t, err)
			require.NotNil(t, dial, "a configuration with a proxy dials through it")
			tlsConfig, err := rest.TLSConfigFor(cfg)
			require.NoError(t, err)
			return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, DialContext: dial}}
		},
	}
	for _, scheme := range []string{"http", "https", "socks5"} {
		for way, newClient := range clients {
			t.Run(scheme+"/"+way, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				opts := forwardproxy.Options{Scheme: scheme, Name: name, Target: server.Listener.Addr().String(), TLS: server.TLS}
				if scheme != "socks5" {
					opts.Header = required
				}
				proxy, err := forwardproxy.Start(ctx, opts)
				require.NoError(t, err)

				get := func(spec map[string]any) (string, error) {
					p, err := proxyOf(clusterWith(spec))
					require.NoError(t, err)
					cfg := &rest.Config{Host: "https://" + net.JoinHostPort(name, port), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
					p.configure(cfg)
					resp, err := newClient(cfg).Get(cfg.Host + "/")
					if err != nil {
						return "", err
					}
					defer resp.Body.Close()
					body, err := io.ReadAll(resp.Body)
					return string(body), err
				}

				body, err := get(map[string]any{"proxyURL": proxy.URL, "proxyHeader": map[string]any{"X-Tenant": "a,b"}})
				require.NoError(t, err)
				assert.Equal(t, "member", body)
				assert.EqualValues(t, 1, proxy.Tunnels())

				if scheme != "socks5" {
					_, err = get(map[string]any{"proxyURL": proxy.URL})
					assert.Error(t, err, "a CONNECT without the required header is refused")
					assert.EqualValues(t, 1, proxy.Refused())
				}
			})
		}
	}
}

func TestDialerIsNilWithoutProxy(t *testing.T) {
	dial, err := Dialer(&rest.Config{Host: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	assert.Nil(t, dial, "no proxy: the caller dials directly")
}
