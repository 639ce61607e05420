package proxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// streamRequest is a request for a pod's subresource as kubectl sends it: over WebSocket a GET
// asking to upgrade, over SPDY a POST asking to upgrade.
func streamRequest(subresource string, websocket bool, token string) *http.Request {
	method, protocol := http.MethodPost, "SPDY/3.1"
	if websocket {
		method, protocol = http.MethodGet, "websocket"
	}
	r := httptest.NewRequest(method, BasePath+"/api/v1/namespaces/default/pods/web/"+subresource+"?command=pwd", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", protocol)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// TestStreamsIntoPodsAreAuthorizedAsCreate: exec, attach and port-forward are authorized as
// create on proxying/proxy over WebSocket (a GET) as over SPDY (a POST), as kube-apiserver
// authorizes them: a caller allowed only get is refused 403 before any server is asked, and
// may still read through the proxy; a caller allowed create is reviewed for create.
func TestStreamsIntoPodsAreAuthorizedAsCreate(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s, func(c *Config) {
		c.Kind = func(schema.GroupVersionResource) (string, error) { return "", errors.New("not registered") } // to the control plane
	})
	for _, subresource := range []string{"exec", "attach", "portforward"} {
		for _, websocket := range []bool{true, false} {
			w := httptest.NewRecorder()
			p.ServeHTTP(w, streamRequest(subresource, websocket, "reader-token"))
			require.Equal(t, http.StatusForbidden, w.Code, "%s websocket=%v: %s", subresource, websocket, w.Body.String())
			assert.Contains(t, w.Body.String(), `user \"reader\" cannot create resource \"proxying/proxy\"`)
		}
	}
	w := httptest.NewRecorder()
	p.ServeHTTP(w, func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, BasePath+"/api/v1/namespaces/default/pods/web/log", nil)
		r.Header.Set("Authorization", "Bearer reader-token")
		return r
	}())
	assert.Equal(t, http.StatusOK, w.Code, "a log is read with get: %s", w.Body.String())

	w = httptest.NewRecorder()
	p.ServeHTTP(w, streamRequest("exec", true, "alice-token"))
	assert.NotEqual(t, http.StatusForbidden, w.Code, w.Body.String())
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Contains(t, s.asked, "alice create", "alice's exec over WebSocket was not reviewed for create")
	assert.NotContains(t, s.asked, "alice get")
}

func TestRequestVerb(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/default/pods/web/exec":             "create",
		"/api/v1/namespaces/default/pods/web/attach":           "create",
		"/api/v1/namespaces/default/pods/web/portforward":      "create",
		"/api/v1/namespaces/default/pods/web/log":              "get",
		"/api/v1/namespaces/default/pods/web":                  "get",
		"/apis/example.io/v1/namespaces/default/pods/web/exec": "get", // not a Pod
	} {
		assert.Equal(t, want, RequestVerb(httptest.NewRequest(http.MethodGet, BasePath+path, nil)), path)
	}
	assert.Equal(t, "delete", RequestVerb(httptest.NewRequest(http.MethodDelete, BasePath+"/api/v1/namespaces/default/pods/web", nil)))
}
