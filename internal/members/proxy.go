package members

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"golang.org/x/net/proxy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/third_party/forked/golang/netutil"
	"k8s.io/client-go/rest"

	"github.com/karmadaflow/karmadaflow/internal/redact"
)

// clusterProxy is how a Cluster is reached through a forward proxy: spec.proxyURL (http,
// https or socks5) and spec.proxyHeader, the headers the proxy requires. Karmada sends those
// headers with the CONNECT request that opens the tunnel; a value holding commas is several
// values of one header.
type clusterProxy struct {
	url    *url.URL
	header http.Header
	// clientTLS, when set, is the TLS configuration of the connection to an https proxy that
	// requires a client certificate (useClientCertificate).
	clientTLS *tls.Config
}

// The keys of a credentials Secret for an https forward proxy that requires a client
// certificate, as apiserver-network-proxy's front end does: the certificate and its key (PEM),
// and the CA bundle that verifies the proxy (the member's caBundle when absent).
const (
	proxyClientCertKey = "proxyClientCert"
	proxyClientKeyKey  = "proxyClientKey"
	proxyCABundleKey   = "proxyCABundle"
)

// useClientCertificate makes the connections to an https proxy present the client certificate
// of secret's proxyClientCert and proxyClientKey, and verify the proxy with its proxyCABundle,
// else its caBundle, else the system's roots. A Secret without those keys, no proxy, or a
// proxy that is not https leave p as it is.
func (p *clusterProxy) useClientCertificate(secret *corev1.Secret) error {
	cert, key := secret.Data[proxyClientCertKey], secret.Data[proxyClientKeyKey]
	if p == nil || p.url.Scheme != "https" || len(cert) == 0 && len(key) == 0 {
		return nil
	}
	if len(cert) == 0 || len(key) == 0 {
		return fmt.Errorf("secret %s/%s must hold both %s and %s, or neither", secret.Namespace, secret.Name, proxyClientCertKey, proxyClientKeyKey)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return fmt.Errorf("secret %s/%s: the forward proxy's client certificate (%s, %s): %w", secret.Namespace, secret.Name, proxyClientCertKey, proxyClientKeyKey, err)
	}
	caKey := proxyCABundleKey
	if len(secret.Data[caKey]) == 0 {
		caKey = "caBundle"
	}
	var roots *x509.CertPool // nil: the system's
	if ca := secret.Data[caKey]; len(ca) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			return fmt.Errorf("secret %s/%s: %s holds no PEM certificate", secret.Namespace, secret.Name, caKey)
		}
	}
	p.clientTLS = &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, MinVersion: tls.VersionTLS12}
	return nil
}

// proxyOf reads the proxy settings of a Cluster object; nil when it names no proxy.
func proxyOf(cluster *unstructured.Unstructured) (*clusterProxy, error) {
	raw, _, _ := unstructured.NestedString(cluster.Object, "spec", "proxyURL")
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("spec.proxyURL does not parse as a URL")
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return nil, fmt.Errorf("spec.proxyURL %s: the scheme must be http, https or socks5", redact.URL(raw))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("spec.proxyURL %s has no host", redact.URL(raw))
	}
	headers, _, _ := unstructured.NestedStringMap(cluster.Object, "spec", "proxyHeader")
	p := &clusterProxy{url: u}
	if len(headers) > 0 {
		p.header = http.Header{}
		for name, values := range headers {
			for _, v := range strings.Split(values, ",") {
				p.header.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(v))
			}
		}
	}
	return p, nil
}

// configure makes every connection of cfg go through the proxy. The headers ride on the
// CONNECT of an http or https proxy. Dialer reads the proxy back from cfg for connections
// opened apart from its transports.
//
// net/http dials the proxy itself, and does the TLS handshake with an https one with the
// member's TLS configuration, which has no certificate for the proxy: a proxy that requires a
// client certificate is reached by cfg.Dial instead, which opens the tunnel (TLS with the
// proxy, then CONNECT) and hands it to the transport as if it were a direct connection to the
// member. The transport then does the member's TLS inside it, as it would behind any proxy.
func (p *clusterProxy) configure(cfg *rest.Config) {
	if p == nil {
		return
	}
	if p.clientTLS != nil {
		cfg.Proxy = noProxy // nor one of the environment (HTTPS_PROXY), which client-go would use
		cfg.Dial = tunnel{proxy: p.url, header: p.header, tls: p.clientTLS}.dial
		return
	}
	cfg.Proxy = http.ProxyURL(p.url)
	if len(p.header) == 0 {
		return
	}
	header := p.header
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		t, ok := rt.(*http.Transport)
		if !ok {
			return rt
		}
		t = t.Clone()
		t.ProxyConnectHeader = header.Clone()
		return t
	})
}

// noProxy sends every request without a proxy.
func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

// DialFunc opens a connection to addr.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer returns how to reach cfg's server for a caller that opens its connections itself
// instead of sending requests through cfg's transport, as apimachinery's upgrade-aware handler
// does for exec, attach and port-forward (it dials directly, whatever the transport's Proxy):
// with cfg's own Dial when it has one (a tunnel configure set up), else through the forward
// proxy cfg names, with the CONNECT headers cfg's transports carry. Nil when cfg names neither:
// dial directly.
func Dialer(cfg *rest.Config) (DialFunc, error) {
	if cfg.Dial != nil {
		return cfg.Dial, nil
	}
	if cfg.Proxy == nil {
		return nil, nil
	}
	server, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	proxyURL, err := cfg.Proxy(&http.Request{URL: server})
	if err != nil || proxyURL == nil {
		return nil, err
	}
	if proxyURL.Scheme == "socks5" {
		d, err := proxy.FromURL(proxyURL, &net.Dialer{})
		if err != nil {
			return nil, err
		}
		return d.(proxy.ContextDialer).DialContext, nil
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	// The CONNECT headers are those cfg's wrappers give its transports, as configure's does.
	t := &http.Transport{}
	if cfg.WrapTransport != nil {
		if wrapped, ok := cfg.WrapTransport(t).(*http.Transport); ok {
			t = wrapped
		}
	}
	return tunnel{proxy: proxyURL, header: t.ProxyConnectHeader, tls: tlsConfig}.dial, nil
}

// tunnel opens connections through an HTTP forward proxy with CONNECT, over TLS to an https
// proxy, as net/http does for a transport's requests.
type tunnel struct {
	proxy  *url.URL
	header http.Header
	// tls is the configuration of the handshake with an https proxy: the cluster's, as net/http
	// uses the transport's, or the one presenting the proxy's client certificate.
	tls *tls.Config
}

func (t tunnel) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, netutil.CanonicalAddr(t.proxy))
	if err != nil {
		return nil, err
	}
	// Until the tunnel is open, ending ctx ends the attempt.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	tunnelled, err := t.connect(conn, addr)
	if !stop() && err == nil {
		tunnelled.Close()
		return nil, ctx.Err()
	}
	return tunnelled, err
}

// connect asks the proxy at the other end of conn for a tunnel to addr; it closes conn when
// the proxy refuses.
func (t tunnel) connect(conn net.Conn, addr string) (net.Conn, error) {
	if t.proxy.Scheme == "https" {
		cfg := &tls.Config{}
		if t.tls != nil {
			cfg = t.tls.Clone()
		}
		cfg.ServerName = t.proxy.Hostname()
		conn = tls.Client(conn, cfg)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: t.header.Clone()}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if user := t.proxy.User; user != nil && req.Header.Get("Proxy-Authorization") == "" {
		password, _ := user.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+password)))
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	// The server at addr speaks only when spoken to (TLS, HTTP): the reader holds nothing past
	// the proxy's answer and may be dropped, as net/http drops its own.
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("forward proxy %s refused a tunnel to %s: %s", t.proxy.Redacted(), addr, resp.Status)
	}
	return conn, nil
}
