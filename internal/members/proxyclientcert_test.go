package members

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/karmadaflow/karmadaflow/internal/pki"
	"github.com/karmadaflow/karmadaflow/test/forwardproxy"
)

// proxyWithClientAuth is an https forward proxy on 127.0.0.1 that requires a client
// certificate of its own CA, as apiserver-network-proxy's front end does, in front of a TLS
// server known to it alone as example.com.
type proxyWithClientAuth struct {
	proxy *forwardproxy.Proxy
	// endpoint is the server's URL, under the name only the proxy resolves.
	endpoint string
	// memberCA verifies the server; proxyCA the proxy. client is a certificate of proxyCA.
	memberCA, proxyCA []byte
	client            pki.KeyPair
}

func startProxyWithClientAuth(t *testing.T) *proxyWithClientAuth {
	t.Helper()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "member")
	}))
	t.Cleanup(server.Close)
	_, port, err := net.SplitHostPort(server.Listener.Addr().String())
	require.NoError(t, err)

	ca, err := pki.NewAuthority("forward-proxy-ca")
	require.NoError(t, err)
	serving, err := ca.Issue(pki.LeafSpec{CommonName: "forward-proxy", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}, pki.DefaultLeafValidity)
	require.NoError(t, err)
	client, err := ca.Issue(pki.LeafSpec{CommonName: "forward-proxy-client", Client: true}, pki.DefaultLeafValidity)
	require.NoError(t, err)
	servingPair, err := tls.X509KeyPair(serving.Cert, serving.Key)
	require.NoError(t, err)
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(ca.Certificate())

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const name = "example.com" // httptest's certificate's name
	proxy, err := forwardproxy.Start(ctx, forwardproxy.Options{
		Scheme: "https", Name: name, Target: server.Listener.Addr().String(),
		TLS: &tls.Config{Certificates: []tls.Certificate{servingPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs},
	})
	require.NoError(t, err)
	return &proxyWithClientAuth{
		proxy:    proxy,
		endpoint: "https://" + net.JoinHostPort(name, port),
		memberCA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}),
		proxyCA:  ca.Pair().Cert,
		client:   client,
	}
}

// config is the configuration of the member behind p, as configFrom builds it from a Cluster
// naming p with spec.proxyURL and from secret.
func (p *proxyWithClientAuth) config(t *testing.T, secret *corev1.Secret) (*rest.Config, error) {
	t.Helper()
	cfg, err := RESTConfig(p.endpoint, secret, false)
	require.NoError(t, err)
	proxy, err := proxyOf(clusterWith(map[string]any{"proxyURL": p.proxy.URL}))
	require.NoError(t, err)
	if err := proxy.useClientCertificate(secret); err != nil {
		return nil, err
	}
	proxy.configure(cfg)
	return cfg, nil
}

// getThrough GETs the member's / with the configuration's own client, or with a transport
// that dials with Dialer, as upgrades (exec, attach, port-forward) do.
func getThrough(t *testing.T, cfg *rest.Config, way string) (string, error) {
	t.Helper()
	var client *http.Client
	switch way {
	case "client":
		var err error
		client, err = rest.HTTPClientFor(cfg)
		require.NoError(t, err)
	case "dialer":
		dial, err := Dialer(cfg)
		require.NoError(t, err)
		require.NotNil(t, dial, "a configuration with a proxy dials through it")
		tlsConfig, err := rest.TLSConfigFor(cfg)
		require.NoError(t, err)
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, DialContext: dial}}
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get(cfg.Host + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TestProxyClientCertificate reaches a member behind an https proxy that requires a client
// certificate: with the certificate of the Secret's proxyClientCert and proxyClientKey, the
// proxy verified with proxyCABundle or else caBundle; without it, or with a CA that does not
// verify the proxy, the member is not reached.
func TestProxyClientCertificate(t *testing.T) {
	p := startProxyWithClientAuth(t)
	secretWith := func(data map[string][]byte) *corev1.Secret {
		data["token"] = []byte("t0ken")
		return &corev1.Secret{Data: data}
	}
	bundle := func(pems ...[]byte) []byte {
		var all []byte
		for _, p := range pems {
			all = append(all, p...)
		}
		return all
	}
	reached := map[string]*corev1.Secret{
		"proxyCABundle": secretWith(map[string][]byte{
			"caBundle": p.memberCA, "proxyCABundle": p.proxyCA, "proxyClientCert": p.client.Cert, "proxyClientKey": p.client.Key,
		}),
		"caBundle": secretWith(map[string][]byte{
			"caBundle": bundle(p.memberCA, p.proxyCA), "proxyClientCert": p.client.Cert, "proxyClientKey": p.client.Key,
		}),
	}
	unreached := map[string]struct {
		secret *corev1.Secret
		err    string
	}{
		"no client certificate": {secretWith(map[string][]byte{"caBundle": bundle(p.memberCA, p.proxyCA)}), "certificate required"},
		"the proxy unverified": {secretWith(map[string][]byte{
			"caBundle": p.memberCA, "proxyClientCert": p.client.Cert, "proxyClientKey": p.client.Key,
		}), "certificate signed by unknown authority"},
		"proxyCABundle verifies the proxy, not the member": {secretWith(map[string][]byte{
			"caBundle": p.memberCA, "proxyCABundle": p.memberCA, "proxyClientCert": p.client.Cert, "proxyClientKey": p.client.Key,
		}), "certificate signed by unknown authority"},
	}
	for _, way := range []string{"client", "dialer"} {
		for name, secret := range reached {
			t.Run(way+"/verified with "+name, func(t *testing.T) {
				tunnels := p.proxy.Tunnels()
				cfg, err := p.config(t, secret)
				require.NoError(t, err)
				body, err := getThrough(t, cfg, way)
				require.NoError(t, err)
				assert.Equal(t, "member", body)
				assert.Equal(t, tunnels+1, p.proxy.Tunnels(), "the proxy opened the tunnel")
			})
		}
		for name, c := range unreached {
			t.Run(way+"/"+name, func(t *testing.T) {
				tunnels := p.proxy.Tunnels()
				cfg, err := p.config(t, c.secret)
				require.NoError(t, err)
				_, err = getThrough(t, cfg, way)
				if assert.Error(t, err) {
					assert.Contains(t, err.Error(), c.err)
				}
				assert.Equal(t, tunnels, p.proxy.Tunnels(), "no tunnel")
			})
		}
	}
}

// TestProxyClientCertificateRefused: a Secret with half of the pair, or a key of another
// certificate, is refused, and the error shows no key.
func TestProxyClientCertificateRefused(t *testing.T) {
	p := startProxyWithClientAuth(t)
	ca, err := pki.NewAuthority("another-ca")
	require.NoError(t, err)
	other, err := ca.Issue(pki.LeafSpec{CommonName: "another-client", Client: true}, pki.DefaultLeafValidity)
	require.NoError(t, err)
	for name, data := range map[string]map[string][]byte{
		"certificate only":        {"proxyClientCert": p.client.Cert},
		"key only":                {"proxyClientKey": p.client.Key},
		"key of another":          {"proxyClientCert": p.client.Cert, "proxyClientKey": other.Key},
		"no PEM in proxyCABundle": {"proxyClientCert": p.client.Cert, "proxyClientKey": p.client.Key, "proxyCABundle": []byte("not PEM")},
	} {
		t.Run(name, func(t *testing.T) {
			data["token"] = []byte("t0ken")
			_, err := p.config(t, &corev1.Secret{Data: data})
			if assert.Error(t, err) {
				assert.NotContains(t, err.Error(), string(p.client.Key))
				assert.NotContains(t, err.Error(), string(other.Key))
			}
		})
	}
}

// TestProxyClientCertificateOnlyForHTTPS: the keys change nothing for an http or socks5 proxy,
// which has no TLS to present a certificate in.
func TestProxyClientCertificateOnlyForHTTPS(t *testing.T) {
	secret := &corev1.Secret{Data: map[string][]byte{"proxyClientCert": []byte("x"), "proxyClientKey": []byte("y")}}
	for _, raw := range []string{"http://127.0.0.1:3128", "socks5://127.0.0.1:1080"} {
		p, err := proxyOf(clusterWith(map[string]any{"proxyURL": raw}))
		require.NoError(t, err)
		require.NoError(t, p.useClientCertificate(secret), raw)
		cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
		p.configure(cfg)
		assert.Nil(t, cfg.Dial, raw)
	}
	var none *clusterProxy
	assert.NoError(t, none.useClientCertificate(secret), "no proxy")
}
