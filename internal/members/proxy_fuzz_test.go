package members

import (
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// canary stands for a proxy URL's password and query in FuzzProxyOf: no error may show it.
const canary = "Zq7canaryZq7"

// FuzzProxyOf reads the forward proxy of a Cluster of any spec.proxyURL and spec.proxyHeader:
// an error that shows neither the URL's password nor its query, or a proxy with an http,
// https or socks5 URL with a host, the headers canonical and trimmed, and a Dialer.
func FuzzProxyOf(f *testing.F) {
	f.Add("http://proxy.example.com:3128", "proxy-authorization", "Basic abc")
	f.Add("socks5://u:p@127.0.0.1:1080", "", "")
	f.Add("https://[::1]:8443/path?q=1", "X-Tenant", "a, b,,c")
	f.Add("ftp://u:secret@proxy:21", "x", "y")
	f.Add("http://", "", "")
	f.Add("::not a url", "", "")
	f.Add("proxy.example.com:3128", "", "")
	f.Fuzz(func(t *testing.T, raw, headerName, headerValue string) {
		check := func(raw string) (*clusterProxy, error) {
			cluster := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"proxyURL": raw}}}
			if headerName != "" {
				cluster.Object["spec"].(map[string]any)["proxyHeader"] = map[string]any{headerName: headerValue}
			}
			p, err := proxyOf(cluster)
			if err != nil {
				if p != nil {
					t.Fatalf("%q: an error (%v) and a proxy", raw, err)
				}
				return nil, err
			}
			if raw == "" {
				if p != nil {
					t.Fatal("a proxy without spec.proxyURL")
				}
				return nil, nil
			}
			switch p.url.Scheme {
			case "http", "https", "socks5":
			default:
				t.Fatalf("%q accepted with scheme %q", raw, p.url.Scheme)
			}
			if p.url.Host == "" {
				t.Fatalf("%q accepted without a host", raw)
			}
			if headerName != "" {
				key := textproto.CanonicalMIMEHeaderKey(headerName)
				if len(p.header) != 1 || len(p.header[key]) != strings.Count(headerValue, ",")+1 {
					t.Fatalf("header %q: %q became %v", headerName, headerValue, p.header)
				}
				for _, v := range p.header[key] {
					if v != strings.TrimSpace(v) {
						t.Fatalf("header value %q not trimmed", v)
					}
				}
			}
			cfg := &rest.Config{Host: "https://member.example.com:6443"}
			p.configure(cfg)
			dial, err := Dialer(cfg)
			if err != nil || dial == nil {
				t.Fatalf("%q accepted, but no Dialer: %v", raw, err)
			}
			return p, nil
		}
		_, _ = check(raw)
		if strings.Contains(raw, canary) {
			return
		}
		// The same URL with a password and a query: refused, it shows neither.
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Opaque != "" {
			return
		}
		u.User = url.UserPassword(u.User.Username(), canary)
		u.RawQuery = "sig=" + canary
		if _, err := check(u.String()); err != nil && strings.Contains(err.Error(), canary) {
			t.Fatalf("%q: the error shows the URL's secrets: %v", u.String(), err)
		}
	})
}
