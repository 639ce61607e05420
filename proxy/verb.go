package proxy

import "net/http"

// streamingPodSubresources are the subresources of a Pod that start a stream into it. A
// client asks for them with POST over SPDY and with GET over WebSocket; kube-apiserver
// authorizes both as create (the AuthorizePodWebsocketUpgradeCreatePermission check, on by
// default since Kubernetes 1.35), so that the right to read (get) never opens a shell.
var streamingPodSubresources = map[string]bool{"exec": true, "attach": true, "portforward": true}

// RequestVerb is the verb r is authorized with on proxying/proxy: the verb of its HTTP method,
// but create for exec, attach and port-forward whatever the method, as kube-apiserver
// authorizes them.
func RequestVerb(r *http.Request) string {
	if t, err := ParsePath(r.URL.EscapedPath()); err == nil && t.IsResource && t.Group == "" &&
		t.Resource == "pods" && streamingPodSubresources[t.Subresource] {
		return "create"
	}
	return verbOf(r.Method)
}

// verbOf is the authorization verb of an HTTP method.
func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}
