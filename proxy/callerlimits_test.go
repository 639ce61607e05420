package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRequestsPerCallerLimit: a caller with as many requests in flight as one caller may (here
// writes whose bodies do not end) is answered 429 with Retry-After and a Status naming the
// flag; another caller is served meanwhile, within a global limit the first caller alone
// would have filled; a request that ends gives its slot back.
func TestRequestsPerCallerLimit(t *testing.T) {
	f := newLimitsFixture(t, Limits{MaxRequestsPerCaller: 2, MaxRequestsInFlight: 3})
	var writers []*io.PipeWriter
	var dones []chan *httptest.ResponseRecorder
	for range 2 {
		body, writer := io.Pipe()
		writers = append(writers, writer)
		done := make(chan *httptest.ResponseRecorder, 1)
		dones = append(dones, done)
		go func() { done <- f.serve(newRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", body)) }()
	}
	t.Cleanup(func() {
		for _, w := range writers {
			w.Close()
		}
	})
	require.Eventually(t, func() bool { return f.proxy.callerRequests.inFlight("alice") == 2 }, 10*time.Second, 10*time.Millisecond)

	w := f.serve(newRequest(http.MethodGet, podsPath, nil))
	require.Equal(t, http.StatusTooManyRequests, w.Code, head(w))
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	s := statusOf(t, w)
	assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason)
	assert.Contains(t, s.Message, `user "alice"`)
	assert.Contains(t, s.Message, "--proxy-max-requests-per-caller")

	w = httptest.NewRecorder()
	f.proxy.ServeAs(w, newRequest(http.MethodGet, podsPath, nil), Caller{Name: "bob"})
	assert.Equal(t, http.StatusOK, w.Code, "bob's list while alice holds two requests: %s", head(w))

	writers[0].Close()
	assert.Equal(t, http.StatusOK, (<-dones[0]).Code)
	assert.Equal(t, http.StatusOK, f.serve(newRequest(http.MethodGet, podsPath, nil)).Code, "alice's list once a slot is free")
	writers[1].Close()
	<-dones[1]
	assert.Empty(t, f.proxy.callerRequests.taken, "every slot given back")
	assert.Empty(t, f.proxy.callerBytes.byName, "every budget forgotten")
}

// TestBufferedBytesPerCallerLimit: the answers one caller's requests hold at once are bounded
// by its own budget: a list whose answers alone exceed it fails naming the flag, and while
// another request of the caller holds its budget the next is answered 429; another caller is
// served from the rest of the proxy's budget meanwhile.
func TestBufferedBytesPerCallerLimit(t *testing.T) {
	f := newLimitsFixture(t, Limits{MaxBufferedBytesPerCaller: 4 << 10, MaxBufferedBytes: 1 << 20, MaxResponseBodyBytes: 64 << 10})
	f.members["m1"].list.Store(bigList(3<<10, true))
	f.members["m2"].list.Store(bigList(3<<10, true))
	w := f.serve(newRequest(http.MethodGet, podsPath, nil))
	require.Equal(t, http.StatusInternalServerError, w.Code, head(w))
	assert.Contains(t, statusOf(t, w).Message, "--proxy-max-buffered-bytes-per-caller")

	// One member's answer held by a request of alice (its member is slow to end its answer).
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	held := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"`+strings.Repeat("a", 3<<10)+`"}}`)
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, `]}`)
	})
	f.members["m1"].list.Store(&held)
	f.members["m2"].list.Store(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.serve(newRequest(http.MethodGet, podsPath, nil).WithContext(ctx))
	require.Eventually(t, func() bool {
		f.proxy.callerBytes.mu.Lock()
		defer f.proxy.callerBytes.mu.Unlock()
		b := f.proxy.callerBytes.byName["alice"]
		return b != nil && b.used.Load() >= 3<<10
	}, 10*time.Second, 10*time.Millisecond, "alice's first list holds its answer")
	f.members["m1"].list.Store(bigList(2<<10, true))
	w = f.serve(newRequest(http.MethodGet, podsPath, nil))
	require.Equal(t, http.StatusTooManyRequests, w.Code, head(w))
	assert.Contains(t, statusOf(t, w).Message, "--proxy-max-buffered-bytes-per-caller")

	w = httptest.NewRecorder()
	f.proxy.ServeAs(w, newRequest(http.MethodGet, podsPath, nil), Caller{Name: "bob"})
	assert.Equal(t, http.StatusOK, w.Code, "bob's list: %s", head(w))
}
