package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// recorder is a fake API server that records the requests it receives: the path as the
// request line spelled it, and the headers.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newRecorder(t *testing.T, answer http.HandlerFunc) *recorder {
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Clone(context.Background()))
		rec.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) requests() []*http.Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]*http.Request(nil), rec.seen...)
}

// segments are the segments of a request's path as its request line spelled it, each
// unescaped, and then escaped again in one spelling (url.PathEscape's): "%2E%2E%2F" and
// "..%2F" are the same segment.
func segments(t *testing.T, r *http.Request) string {
	p, _, _ := strings.Cut(r.RequestURI, "?")
	parts := strings.Split(p, "/")
	for i, part := range parts {
		s, err := url.PathUnescape(part)
		require.NoError(t, err, r.RequestURI)
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// hardeningFixture is a proxy (behind an HTTP server, as the caller "alice") in front of a
// recording control plane and one recording member, m1, which serves pods and has every pod
// asked for.
type hardeningFixture struct {
	url    string
	cp, m1 *recorder
}

func newHardeningFixture(t *testing.T) *hardeningFixture {
	f := &hardeningFixture{}
	f.cp = newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeRaw(w, []byte(`{}`)) })
	f.m1 = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeRaw(w, []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","resourceVersion":"1"}}`))
	})
	registry := searchv1alpha1.ResourceRegistry{Spec: searchv1alpha1.ResourceRegistrySpec{
		ResourceSelectors: []searchv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod"}},
	}}
	p := NewServer(Config{
		ControlPlane: &rest.Config{Host: f.cp.URL},
		Member: func(context.Context, string) (*rest.Config, error) {
			return &rest.Config{Host: f.m1.URL}, nil
		},
		State: func() ([]searchv1alpha1.ResourceRegistry, []Cluster) {
			return []searchv1alpha1.ResourceRegistry{registry}, []Cluster{{Name: "m1", Ready: true}}
		},
		Kind: func(gvr schema.GroupVersionResource) (string, error) {
			if gvr.Resource == "pods" {
				return "Pod", nil
			}
			return "", fmt.Errorf("no kind for %v", gvr)
		},
		Timeout: 10 * time.Second,
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.ServeAs(w, r, Caller{Name: "alice", Groups: []string{"system:authenticated"}})
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL + BasePath
	return f
}

// send sends a request with the headers through the proxy and returns its status.
func (f *hardeningFixture) send(t *testing.T, method, path string, header http.Header) int {
	t.Helper()
	r, err := http.NewRequest(method, f.url+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		r.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestCallerIdentityHeadersAreNotForwarded: identity headers the caller sets itself
// (front-proxy X-Remote-* and impersonation headers) reach neither the control plane nor a
// member, by the plain path or the upgrade path; only the proxy's impersonation of the caller
// does.
func TestCallerIdentityHeadersAreNotForwarded(t *testing.T) {
	forged := http.Header{
		"X-Remote-User":          {"system:admin"},
		"X-Remote-Uid":           {"0"},
		"X-Remote-Group":         {"system:masters"},
		"X-Remote-Extra-Scopes":  {"all"},
		"x-remote-extra-lower":   {"x"},
		"Impersonate-User":       {"system:admin"},
		"Impersonate-Group":      {"system:masters"},
		"Impersonate-Uid":        {"0"},
		"Impersonate-Extra-Keys": {"k"},
	}
	upgrade := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}
	for k, v := range forged {
		upgrade[k] = v
	}
	f := newHardeningFixture(t)
	f.send(t, http.MethodGet, "/version", forged)                                            // control plane
	f.send(t, http.MethodGet, "/api/v1/namespaces/default/services/s/proxy", upgrade)        // control plane, upgrade
	f.send(t, http.MethodPost, "/api/v1/namespaces/default/pods/p/exec?command=sh", upgrade) // member, upgrade
	f.send(t, http.MethodDelete, "/api/v1/namespaces/default/pods/p", forged)                // member
	f.send(t, http.MethodGet, "/api/v1/namespaces/default/pods/p", forged)                   // member, fetched
	seen := append(f.cp.requests(), f.m1.requests()...)
	require.Len(t, seen, 7, "each request, and the lookups of the member's")
	for _, r := range seen {
		what := r.Method + " " + r.RequestURI
		for k, v := range r.Header {
			lk := strings.ToLower(k)
			assert.False(t, strings.HasPrefix(lk, "x-remote-"), "%s: %s: %v reached the server", what, k, v)
			assert.NotContains(t, v, "system:admin", "%s: %s", what, k)
			assert.NotContains(t, v, "system:masters", "%s: %s", what, k)
			if strings.HasPrefix(lk, "impersonate-") {
				assert.Contains(t, []string{"Impersonate-User", "Impersonate-Group"}, k, "%s: %s: %v reached the server", what, k, v)
			}
		}
		assert.Equal(t, []string{"alice"}, r.Header.Values("Impersonate-User"), what)
		assert.Equal(t, []string{"system:authenticated"}, r.Header.Values("Impersonate-Group"), what)
	}
}

// TestEscapedSegmentsStayOneSegment: a name with an escaped "/", "?", "#", space or "..",
// however the proxy reaches the server (a fetch, a passed request, an upgrade), reaches it as
// the one segment the caller sent; "." and ".." segments are refused.
func TestEscapedSegmentsStayOneSegment(t *testing.T) {
	for _, name := range []string{"a%2Fb", "..%2F", "..%2F..%2Fsecrets", "a%3Fb", "a%23b", "a%20b", "%2E%2E%2F", "a%2F..%2F..", "%25"} {
		t.Run(name, func(t *testing.T) {
			decoded, err := url.PathUnescape(name)
			require.NoError(t, err)
			want := url.PathEscape(decoded)
			f := newHardeningFixture(t)
			f.send(t, http.MethodGet, "/api/v1/namespaces/default/pods/"+name, nil)                 // fetched from the member
			f.send(t, http.MethodDelete, "/api/v1/namespaces/default/pods/"+name, nil)              // passed to the member
			f.send(t, http.MethodGet, "/api/v1/namespaces/default/configmaps/"+name, nil)           // passed to the control plane
			f.send(t, http.MethodGet, "/api/v1/namespaces/default/pods/"+name+"/exec", http.Header{ // upgraded at the member
				"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}})
			paths := map[string]bool{}
			for _, r := range append(f.m1.requests(), f.cp.requests()...) {
				paths[segments(t, r)] = true
				assert.Empty(t, r.URL.RawQuery, "%s: the name leaked into the query", r.RequestURI)
			}
			assert.Equal(t, map[string]bool{
				"/api/v1/namespaces/default/pods/" + want:           true,
				"/api/v1/namespaces/default/pods/" + want + "/exec": true,
				"/api/v1/namespaces/default/configmaps/" + want:     true,
			}, paths)
		})
	}
	f := newHardeningFixture(t)
	for _, name := range []string{"%2E%2E", "%2e", ".."} {
		assert.Equal(t, http.StatusNotFound, f.send(t, http.MethodGet, "/api/v1/namespaces/default/configmaps/"+name+"/x", nil), name)
	}
	assert.Empty(t, f.cp.requests())
}

func TestParsePathUnescapesEachSegment(t *testing.T) {
	got, err := ParsePath(BasePath + "/api/v1/namespaces/n%2Fs/pods/a%2F..%2Fb%3F%23%20/log")
	require.NoError(t, err)
	assert.Equal(t, Target{Path: "/api/v1/namespaces/n%2Fs/pods/a%2F..%2Fb%3F%23%20/log", IsResource: true, Version: "v1",
		Namespace: "n/s", Resource: "pods", Name: "a/../b?# ", Subresource: "log"}, got)
	assert.Equal(t, "/api/v1/namespaces/n%2Fs/pods/a%2F..%2Fb%3F%23%20/log", got.ObjectPath())
}
