package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

const podsPath = "/api/v1/namespaces/default/pods"

// holdWatches makes the fixture's members answer a watch with a stream that stays open until
// the caller goes, counting the watches opened; a list is answered as before.
func holdWatches(f *limitsFixture) *atomic.Int64 {
	var opened atomic.Int64
	for _, m := range f.members {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("watch") != "true" {
				writeRaw(w, []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
				return
			}
			opened.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		m.list.Store(&h)
	}
	return &opened
}

// openWatch serves a watch of pods as caller until its cancel; done receives its answer.
func openWatch(f *limitsFixture, caller string) (cancel func(), done <-chan *httptest.ResponseRecorder) {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		f.proxy.ServeAs(w, newRequest(http.MethodGet, podsPath+"?watch=true", nil).WithContext(ctx),
			Caller{Name: caller, Groups: []string{"system:authenticated"}})
		out <- w
	}()
	return cancel, out
}

// TestLongRunningRequestsPerCallerLimit: a caller with as many watches open as one caller may
// is answered 429 with Retry-After and a Status naming the flag; another caller's watch and
// list, and the first caller's list, are served; a closed watch gives its slot back.
func TestLongRunningRequestsPerCallerLimit(t *testing.T) {
	f := newLimitsFixture(t, Limits{MaxLongRunningRequestsPerCaller: 3})
	opened := holdWatches(f)
	var cancels []func()
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
	})
	var dones []<-chan *httptest.ResponseRecorder
	for range 3 {
		cancel, done := openWatch(f, "alice")
		cancels, dones = append(cancels, cancel), append(dones, done)
	}
	require.Eventually(t, func() bool { return opened.Load() == 6 }, 10*time.Second, 10*time.Millisecond, "3 watches of 2 members")
	assert.Equal(t, 3, f.proxy.callerSlots.inFlight("alice"))

	// Without the limit this watch would stream: it gives up after a while instead of hanging.
	over, overCancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer overCancel()
	w := f.serve(newRequest(http.MethodGet, podsPath+"?watch=true", nil).WithContext(over))
	require.Equal(t, http.StatusTooManyRequests, w.Code, head(w))
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	s := statusOf(t, w)
	assert.Equal(t, metav1.StatusReasonTooManyRequests, s.Reason)
	assert.Contains(t, s.Message, "--proxy-max-long-running-requests-per-caller")
	assert.Contains(t, s.Message, `"alice"`)
	require.NotNil(t, s.Details)
	assert.Equal(t, int32(1), s.Details.RetryAfterSeconds)
	w = f.serve(newRequest(http.MethodGet, "/api/v1/namespaces/default/pods/web/log", nil))
	assert.Equal(t, http.StatusTooManyRequests, w.Code, "a log is long-running too: %s", head(w))

	assert.Equal(t, http.StatusOK, f.serve(newRequest(http.MethodGet, podsPath, nil)).Code, "alice's list")
	bobCancel, bobDone := openWatch(f, "bob")
	cancels = append(cancels, bobCancel)
	require.Eventually(t, func() bool { return opened.Load() == 8 }, 10*time.Second, 10*time.Millisecond, "bob's watch")
	w = httptest.NewRecorder()
	f.proxy.ServeAs(w, newRequest(http.MethodGet, podsPath, nil), Caller{Name: "bob"})
	assert.Equal(t, http.StatusOK, w.Code, "bob's list")

	cancels[0]()
	assert.Equal(t, http.StatusOK, (<-dones[0]).Code)
	require.Eventually(t, func() bool { return f.proxy.callerSlots.inFlight("alice") == 2 }, 10*time.Second, 10*time.Millisecond)
	cancel, done := openWatch(f, "alice")
	cancels = append(cancels, cancel)
	require.Eventually(t, func() bool { return opened.Load() == 10 }, 10*time.Second, 10*time.Millisecond, "a watch once a slot is free")

	for _, c := range cancels {
		c()
	}
	for _, d := range append(dones[1:], bobDone, done) {
		assert.Equal(t, http.StatusOK, (<-d).Code)
	}
	assert.Equal(t, 0, f.proxy.callerSlots.inFlight("alice"), "every slot given back")
	assert.Empty(t, f.proxy.callerSlots.taken)
}

// TestWatchesShareTheMembershipCheck: however many watches are open, the ResourceRegistries and
// Clusters are read once every membershipCheck, not once by each watch; a change of the
// clusters still ends every watch it concerns.
func TestWatchesShareTheMembershipCheck(t *testing.T) {
	f := newLimitsFixture(t, Limits{})
	opened := holdWatches(f)
	registry := searchv1alpha1.ResourceRegistry{Spec: searchv1alpha1.ResourceRegistrySpec{
		ResourceSelectors: []searchv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod"}},
	}}
	var reads atomic.Int64
	var mu sync.Mutex
	clusters := []Cluster{{Name: "m1", Ready: true}, {Name: "m2", Ready: true}}
	f.proxy.cfg.State = func() ([]searchv1alpha1.ResourceRegistry, []Cluster) {
		reads.Add(1)
		mu.Lock()
		defer mu.Unlock()
		return []searchv1alpha1.ResourceRegistry{registry}, clusters
	}

	const watches = 50
	var cancels []func()
	var dones []<-chan *httptest.ResponseRecorder
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
	})
	for range watches {
		cancel, done := openWatch(f, "alice")
		cancels, dones = append(cancels, cancel), append(dones, done)
	}
	require.Eventually(t, func() bool { return opened.Load() == 2*watches }, 10*time.Second, 10*time.Millisecond)
	before := reads.Load()
	time.Sleep(2*membershipCheck + membershipCheck/4)
	checks := reads.Load() - before
	t.Logf("%d watches: %d reads of the registries and clusters in %v", watches, checks, 2*membershipCheck+membershipCheck/4)
	assert.LessOrEqual(t, checks, int64(4), "one read per check, whatever the number of watches (before: one per watch and check)")
	for _, d := range dones {
		select {
		case w := <-d:
			t.Fatalf("a watch ended while its clusters did not change: %d %s", w.Code, head(w))
		default:
		}
	}

	mu.Lock()
	clusters = []Cluster{{Name: "m1", Ready: true}, {Name: "m2", Ready: false}}
	mu.Unlock()
	for _, d := range dones {
		select {
		case w := <-d:
			assert.Equal(t, http.StatusOK, w.Code)
		case <-time.After(3 * membershipCheck):
			t.Fatal("a watch did not end once a cluster left")
		}
	}
	require.Eventually(t, func() bool {
		f.proxy.membership.mu.Lock()
		defer f.proxy.membership.mu.Unlock()
		return !f.proxy.membership.running && len(f.proxy.membership.watches) == 0
	}, 3*membershipCheck, 10*time.Millisecond, "the check stops with the last watch")
}
