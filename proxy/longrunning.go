package proxy

import (
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/streaming/pkg/httpstream"
)

// kube-apiserver's long-running requests: its verbs and subresources (the arguments it gives
// k8s.io/apiserver's BasicLongRunningRequestCheck), and how it reads a request's path.
var (
	longRunningCheck = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
)

// isLongRunning tells the requests that last as long as the caller wants, as kube-apiserver
// tells them: watches, logs, exec, attach, port-forward, proxy (and any other upgrade). Such a
// request has its own slots and no body deadline.
func isLongRunning(r *http.Request) bool {
	if httpstream.IsUpgradeRequest(r) {
		return true
	}
	t, err := ParsePath(r.URL.EscapedPath())
	if err != nil {
		return false
	}
	if t.Watch || isTrue(r.URL.Query().Get("watch")) {
		return true // the proxy watches whatever asks to (route), a named object's too
	}
	path, err := url.PathUnescape(t.Path)
	if err != nil {
		return false
	}
	inner := *r
	innerURL := *r.URL
	innerURL.Path, innerURL.RawPath = path, t.Path
	inner.URL = &innerURL
	info, err := requestInfos.NewRequestInfo(&inner)
	if err != nil {
		return false
	}
	return longRunningCheck(&inner, info)
}
