package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// limitsFixture is a proxy in front of a fake control plane and fake members m1 and m2, which
// serve pods (a ResourceRegistry selects them in both).
type limitsFixture struct {
	proxy   *Server
	members map[string]*fakeMember
	cp      *httptest.Server
	// cpHandler answers the control plane's requests (nil: 200 with an empty object).
	cpHandler atomic.Pointer[http.HandlerFunc]
}

// fakeMember serves a list of pods (and m1 the pod "web"), and counts the PUTs it receives.
type fakeMember struct {
	srv     *httptest.Server
	list    atomic.Pointer[http.HandlerFunc] // nil: a list of one pod
	putSeen atomic.Int64                     // PUTs received
}

func newLimitsFixture(t *testing.T, limits Limits) *limitsFixture {
	t.Helper()
	f := &limitsFixture{members: map[string]*fakeMember{}}
	f.cp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := f.cpHandler.Load(); h != nil {
			(*h)(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		writeRaw(w, []byte(`{}`))
	}))
	t.Cleanup(f.cp.Close)
	for _, name := range []string{"m1", "m2"} {
		m := &fakeMember{}
		m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/pods":
				if h := m.list.Load(); h != nil {
					(*h)(w, r)
					return
				}
				writeRaw(w, []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"pod-`+name+`"}}]}`))
			case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/pods/web" && name == "m1":
				writeRaw(w, []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","resourceVersion":"7"}}`))
			case r.Method == http.MethodPut:
				m.putSeen.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				writeRaw(w, []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"}}`))
			default:
				writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "not found")
			}
		}))
		t.Cleanup(m.srv.Close)
		f.members[name] = m
	}
	registry := searchv1alpha1.ResourceRegistry{Spec: searchv1alpha1.ResourceRegistrySpec{
		ResourceSelectors: []searchv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod"}},
	}}
	f.proxy = NewServer(Config{
		ControlPlane: &rest.Config{Host: f.cp.URL},
		Member: func(_ context.Context, cluster string) (*rest.Config, error) {
			return &rest.Config{Host: f.members[cluster].srv.URL}, nil
		},
		State: func() ([]searchv1alpha1.ResourceRegistry, []Cluster) {
			return []searchv1alpha1.ResourceRegistry{registry}, []Cluster{{Name: "m1", Ready: true}, {Name: "m2", Ready: true}}
		},
		Kind: func(gvr schema.GroupVersionResource) (string, error) {
			if gvr.Resource == "pods" {
				return "Pod", nil
			}
			return "", fmt.Errorf("no kind for %v", gvr)
		},
		Timeout: 10 * time.Second,
		Limits:  limits,
	})
	return f
}

// serve sends a request through the proxy as an authenticated caller and returns the answer.
func (f *limitsFixture) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	f.proxy.ServeAs(w, r, Caller{Name: "alice", Groups: []string{"system:authenticated"}})
	return w
}

func newRequest(method, path string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, BasePath+path, body)
	r.Header.Set("Content-Type", "application/json")
	return r
}

// head is the start of an answer, for messages.
func head(w *httptest.ResponseRecorder) string {
	return w.Body.String()[:min(w.Body.Len(), 300)]
}

// statusOf reads the Status of an answer.
func statusOf(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var s metav1.Status
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &s), head(w))
	assert.Equal(t, "Status", s.Kind)
	assert.Equal(t, int32(w.Code), s.Code)
	return s
}

// endless is a request body of n bytes made as it is read, counting what was read.
type endless struct {
	left, read int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), e.left)
	for i := range p[:n] {
		p[i] = ' '
	}
	e.left -= n
	e.read += n
	return int(n), nil
}

// TestRequestBodyOverLimitIsRefused: a 300 MiB body, declared or not, is answered 413
// RequestEntityTooLarge as kube-apiserver answers it, having read no more than the limit, and
// nothing of it reaches a member or the control plane.
func TestRequestBodyOverLimitIsRefused(t *testing.T) {
	const limit = 1 << 20
	f := newLimitsFixture(t, Limits{MaxRequestBodyBytes: limit})
	cpBodies := atomic.Int64{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		cpBodies.Add(n)
		writeRaw(w, []byte(`{}`))
	})
	f.cpHandler.Store(&h)
	for _, tc := range []struct {
		name, path string
		declared   bool
	}{
		{"member object, declared length", "/api/v1/namespaces/default/pods/web", true},
		{"member object, streamed", "/api/v1/namespaces/default/pods/web", false},
		{"control plane, declared length", "/api/v1/namespaces/default/configmaps/big", true},
		{"control plane, streamed", "/api/v1/namespaces/default/configmaps/big", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &endless{left: 300 << 20}
			r := newRequest(http.MethodPut, tc.path, body)
			r.ContentLength = -1
			if tc.declared {
				r.ContentLength = body.left
			}
			w := f.serve(r)
			require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, head(w))
			s := statusOf(t, w)
			assert.Equal(t, metav1.StatusReasonRequestEntityTooLarge, s.Reason)
			assert.Contains(t, s.Message, "--proxy-max-request-body-bytes")
			if tc.declared {
				assert.Zero(t, body.read, "a body declared too large is not read")
			} else {
				assert.LessOrEqual(t, body.read, int64(limit+64<<10), "read of the body")
			}
		})
	}
	assert.Zero(t, f.members["m1"].putSeen.Load()+f.members["m2"].putSeen.Load(), "PUTs that reached a member")
	assert.Less(t, cpBodies.Load(), int64(limit+64<<10), "bytes that reached the control plane")

	// A body within the limit goes through.
	w := f.serve(newRequest(http.MethodPut, "/api/v1/namespaces/default/pods/web",
		strings.NewReader(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"}}`)))
	assert.Equal(t, http.StatusOK, w.Code, head(w))
	assert.Equal(t, int64(1), f.members["m1"].putSeen.Load())
}

// bigList answers a list of n bytes, with or without a Content-Length.
func bigList(n int, declared bool) *http.HandlerFunc {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		prefix := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"big","annotations":{"a":"`
		suffix := `"}}}]}`
		w.Header().Set("Content-Type", "application/json")
		if declared {
			w.Header().Set("Content-Length", fmt.Sprint(n))
		}
		_, _ = io.WriteString(w, prefix)
		_, _ = io.Copy(w, &endless{left: int64(n - len(prefix) - len(suffix))})
		_, _ = io.WriteString(w, suffix)
	})
	return &h
}

// TestMemberAnswerOverLimitFailsTheRequest: a member's answer larger than the limit fails the
// whole list with a Status naming the cluster and the flag: the list is neither cut short nor
// answered without the member.
func TestMemberAnswerOverLimitFailsTheRequest(t *testing.T) {
	const limit = 1 << 20
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("declared=%v", declared), func(t *testing.T) {
			f := newLimitsFixture(t, Limits{MaxResponseBodyBytes: limit})
			f.members["m2"].list.Store(bigList(limit+1, declared))
			w := f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil))
			require.Equal(t, http.StatusInternalServerError, w.Code, head(w))
			s := statusOf(t, w)
			assert.Equal(t, metav1.StatusReasonInternalError, s.Reason)
			assert.Contains(t, s.Message, "cluster m2")
			assert.Contains(t, s.Message, "--proxy-max-response-body-bytes")
			assert.NotContains(t, w.Body.String(), "pod-m1", "a list without the member")

			// Exactly the limit is served whole.
			f.members["m2"].list.Store(bigList(limit, declared))
			w = f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil))
			require.Equal(t, http.StatusOK, w.Code, head(w))
			assert.Contains(t, w.Body.String(), "pod-m1")
			assert.Equal(t, int64(0), f.proxy.budget.used.Load(), "budget held after the requests ended")
		})
	}
}

// TestBufferedBytesBudget: answers held at once across requests are bounded: a request that
// would go past the budget while others hold it gets 429 with Retry-After, one that alone
// would go past it fails, and the budget is given back when requests end.
func TestBufferedBytesBudget(t *testing.T) {
	const budget = 1 << 20
	f := newLimitsFixture(t, Limits{MaxBufferedBytes: budget, MaxResponseBodyBytes: 4 << 20})

	// Alone beyond the budget: no retry helps.
	f.members["m2"].list.Store(bigList(budget+1, false))
	w := f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil))
	require.Equal(t, http.StatusInternalServerError, w.Code, head(w))
	assert.Contains(t, statusOf(t, w).Message, "--proxy-max-buffered-bytes")
	assert.Zero(t, f.proxy.budget.used.Load())

	// A list holding 600 KiB until released; another one needing as much meanwhile gets 429.
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	stalled := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"slow","annotations":{"a":"`)
		_, _ = io.Copy(w, &endless{left: 600 << 10})
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, `"}}}]}`)
	})
	f.members["m2"].list.Store(&stalled)
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)) }()
	require.Eventually(t, func() bool { return f.proxy.budget.used.Load() >= 600<<10 }, 10*time.Second, 10*time.Millisecond)

	f.members["m2"].list.Store(bigList(600<<10, true))
	w = f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil))
	require.Equal(t, http.StatusTooManyRequests, w.Code, head(w))
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	s := statusOf(t, w)
	assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason)
	require.NotNil(t, s.Details)
	assert.Equal(t, int32(1), s.Details.RetryAfterSeconds)

	once.Do(func() { close(release) })
	w = <-first
	assert.Equal(t, http.StatusOK, w.Code, head(w))
	assert.Zero(t, f.proxy.budget.used.Load(), "budget held after the requests ended")
	w = f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil))
	assert.Equal(t, http.StatusOK, w.Code, "after the first list ended")
}

// TestRequestsInFlightLimit: beyond the requests in flight, a request is answered 429
// TooManyRequests with Retry-After, before its caller is authenticated; long-running requests
// (watches) have slots of their own, so they neither take nor are refused the others' slots.
func TestRequestsInFlightLimit(t *testing.T) {
	f := newLimitsFixture(t, Limits{MaxRequestsInFlight: 1, MaxLongRunningRequestsInFlight: 1})
	arrived := make(chan string, 10)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second): // a request that should have been refused ends too
		}
		_, _ = io.WriteString(w, `{}`)
	})
	f.cpHandler.Store(&h)
	configmaps := "/api/v1/namespaces/default/configmaps"

	held := make(chan *httptest.ResponseRecorder, 2)
	go func() { held <- f.serve(newRequest(http.MethodGet, configmaps, nil)) }()
	require.Equal(t, "", <-arrived)
	go func() { held <- f.serve(newRequest(http.MethodGet, configmaps+"?watch=true", nil)) }()
	require.Equal(t, "watch=true", <-arrived, "a watch is served while the other slots are taken")

	expect429 := func(w *httptest.ResponseRecorder, what string) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, w.Code, "%s: %s", what, head(w))
		assert.Equal(t, "1", w.Header().Get("Retry-After"), what)
		s := statusOf(t, w)
		assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason, what)
		require.NotNil(t, s.Details, what)
		assert.Equal(t, int32(1), s.Details.RetryAfterSeconds, what)
	}
	expect429(f.serve(newRequest(http.MethodGet, configmaps, nil)), "a second request")
	expect429(f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)), "a list of members")
	expect429(f.serve(newRequest(http.MethodGet, configmaps+"?watch=true", nil)), "a second watch")
	// The direct URL refuses before authenticating (this request carries no credentials).
	w := httptest.NewRecorder()
	f.proxy.ServeHTTP(w, newRequest(http.MethodGet, configmaps, nil))
	expect429(w, "a request to the direct URL")

	once.Do(func() { close(release) })
	for range 2 {
		assert.Equal(t, http.StatusOK, (<-held).Code)
	}
	assert.Equal(t, http.StatusOK, f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)).Code,
		"a request once the slot is free")
}

func TestIsLongRunning(t *testing.T) {
	for _, path := range []string{
		"/api/v1/pods?watch=true",
		"/api/v1/pods?watch=1",
		"/api/v1/watch/pods",
		"/api/v1/namespaces/default/pods/web?watch=true", // the proxy watches it (route)
		"/api/v1/namespaces/default/pods/web/log?follow=true",
		"/api/v1/namespaces/default/pods/web/exec?command=sh",
		"/api/v1/namespaces/default/pods/web/attach",
		"/api/v1/namespaces/default/pods/web/portforward",
		"/api/v1/namespaces/default/services/web/proxy/healthz",
	} {
		assert.True(t, isLongRunning(httptest.NewRequest(http.MethodGet, BasePath+path, nil)), path)
	}
	for _, path := range []string{
		"/api/v1/pods",
		"/api/v1/pods?watch=false",
		"/api/v1/namespaces/default/pods/web",
		"/api/v1/namespaces/default/pods/web/status",
		"/api/v1/namespaces/default/pods/web/ephemeralcontainers",
		"/apis/apps/v1/namespaces/default/deployments/web/scale",
		"/version",
	} {
		assert.False(t, isLongRunning(httptest.NewRequest(http.MethodGet, BasePath+path, nil)), path)
	}
	assert.False(t, isLongRunning(httptest.NewRequest(http.MethodGet, "/elsewhere?watch=true", nil)), "a path outside the proxy's")
	upgrade := httptest.NewRequest(http.MethodPost, BasePath+"/api/v1/namespaces/default/pods/web/foo", nil)
	upgrade.Header.Set("Connection", "Upgrade")
	upgrade.Header.Set("Upgrade", "websocket")
	assert.True(t, isLongRunning(upgrade), "an upgrade")
}

// TestTranslateBody: a PUT's object read through the proxy gets its cluster's own
// resourceVersion back and loses the proxy's annotation; everything else is kept.
func TestTranslateBody(t *testing.T) {
	rv := EncodeResourceVersion(map[string]string{"m1": "11", "m2": "22"})
	body := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","resourceVersion":"` + rv + `",` +
		`"annotations":{"keep":"<me>","` + AnnotationCachedFrom + `":"m2"}},"spec":{"z":1.50,"a":[1,{"b":null}]}}`
	r := newRequest(http.MethodPut, "/api/v1/namespaces/default/pods/web", strings.NewReader(body))
	require.NoError(t, translateBody(r, "m2", &hold{budget: &budget{max: 1 << 20}}))
	out, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	assert.Equal(t, int64(len(out)), r.ContentLength)
	assert.JSONEq(t, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","resourceVersion":"22","annotations":{"keep":"<me>"}},"spec":{"z":1.50,"a":[1,{"b":null}]}}`, string(out))
	assert.Contains(t, string(out), `1.50`, "numbers are kept as written")

	for _, bad := range []string{`[1,2]`, `{"a":`, `{"a":1} {"b":2}`, ``} {
		r := newRequest(http.MethodPut, "/api/v1/namespaces/default/pods/web", strings.NewReader(bad))
		assert.Error(t, translateBody(r, "m2", &hold{budget: &budget{max: 1 << 20}}), bad)
	}
}

// TestTranslateBodyCostsAFewTimesTheBody: a body within the limit cannot make the proxy
// allocate many times its size (decoded into maps, 3 MiB of numbers took over 170 MiB).
func TestTranslateBodyCostsAFewTimesTheBody(t *testing.T) {
	body := `{"metadata":{"name":"web"},"a":[` + strings.TrimSuffix(strings.Repeat("0,", 3<<20/2), ",") + `]}`
	r := newRequest(http.MethodPut, "/api/v1/namespaces/default/pods/web", strings.NewReader(body))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.NoError(t, translateBody(r, "m1", &hold{budget: &budget{max: 8 << 20}}))
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8*len(body)), "bytes allocated for a body of %d", len(body))
}
