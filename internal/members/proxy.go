package members

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// clusterProxy is how a Cluster is reached through a forward proxy: spec.proxyURL (http,
// https or socks5) and spec.proxyHeader, the headers the proxy requires. Karmada sends those
// headers with the CONNECT request that opens the tunnel; a value holding commas is several
// values of one header.
type clusterProxy struct {
	url    *url.URL
	header http.Header
}

// proxyOf reads the proxy settings of a Cluster object; nil when it names no proxy.
func proxyOf(cluster *unstructured.Unstructured) (*clusterProxy, error) {
	raw, _, _ := unstructured.NestedString(cluster.Object, "spec", "proxyURL")
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("spec.proxyURL %q: %w", raw, err)
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return nil, fmt.Errorf("spec.proxyURL %q: the scheme must be http, https or socks5", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("spec.proxyURL %q has no host", raw)
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

// configure makes every connection of cfg go through the proxy. A socks5 proxy is dialled by
// net/http itself; the headers ride on the CONNECT of an http or https proxy.
func (p *clusterProxy) configure(cfg *rest.Config) {
	if p == nil {
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
