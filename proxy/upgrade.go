package proxy

import (
	"net/http"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	upgradeproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/rest"

	"github.com/karmadaflow/karmadaflow/internal/members"
)

// upgrade passes a request that asks to switch protocols (exec, attach and port-forward over
// SPDY or WebSocket) to cfg's server as the caller is known there (as), with apimachinery's
// upgrade-aware handler.
// The connection to the server speaks HTTP/1.1: the proxy's usual transport negotiates
// HTTP/2, which has no Upgrade. Once the server switches, bytes flow both ways unchanged.
func (s *Server) upgrade(req *request, cfg *rest.Config, name string, as Caller) {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = as.impersonation()
	location, err := url.Parse(cfg.Host)
	if err == nil {
		// The target's path as the caller escaped it: "a%2Fb" stays one segment.
		err = setEscapedPath(location, strings.TrimSuffix(location.EscapedPath(), "/")+req.target.Path)
	}
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	location.RawQuery = req.r.URL.RawQuery
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	// The handler dials the server itself and ignores a transport's Proxy: the dialer opens
	// the connection through the member's forward proxy, if it has one.
	dial, err := members.Dialer(cfg)
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	// The connection carries the TLS configuration (server CA, client certificate) and how to
	// dial; the request round tripper only writes the credentials and impersonation headers.
	connection := &http.Transport{TLSClientConfig: tlsConfig, DialContext: dial}
	headers, err := rest.HTTPWrappersForConfig(cfg, upgradeproxy.MirrorRequest)
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	h := upgradeproxy.NewUpgradeAwareHandler(location, connection, false, true, unreachable(name))
	h.UpgradeTransport = upgradeproxy.NewUpgradeRequestRoundTripper(connection, headers)
	out := req.r.Clone(req.r.Context())
	stripCredentials(out.Header)
	h.ServeHTTP(req.w, out)
}

// unreachable answers that name could not be reached.
type unreachable string

func (name unreachable) Error(w http.ResponseWriter, _ *http.Request, err error) {
	writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, string(name)+" is unreachable: "+err.Error())
}
