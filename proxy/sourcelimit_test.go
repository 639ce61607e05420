package proxy

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// callFrom is call with the request coming from source (host:port).
func callFrom(p *Server, token, source string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, BasePath+"/version", nil)
	r.RemoteAddr = source
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	return w
}

// TestTokenFloodFromOneSourceSpendsItsOwnBudget: while one address sends random bad tokens
// whose reviews the control plane holds, it gets no more reviews than its burst and the rest of
// its flood is answered 429 at once, naming the flags; a caller the proxy never saw, from
// another address, is reviewed and served (before the limit, the flood held every review slot
// and the new caller was answered 429); a caller known good is served from the flooding
// address itself.
func TestTokenFloodFromOneSourceSpendsItsOwnBudget(t *testing.T) {
	const flooder, elsewhere = "127.0.0.2:40000", "127.0.0.3:40000"
	s := newReviewServer(t)
	p := newTestServer(t, s, func(c *Config) {
		c.Reviews = ReviewOptions{SourceQPS: 0.001, SourceBurst: 4} // no refill within the test
	})
	require.Equal(t, http.StatusOK, callFrom(p, "alice-token", "127.0.0.4:40000").Code)

	s.holdUnknownOnly.Store(true)
	s.hold(true, false)
	var flood []<-chan *httptest.ResponseRecorder
	for range 30 {
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() { answer <- callFrom(p, "bad-"+rand.Text(), flooder) }()
		flood = append(flood, answer)
	}
	require.Eventually(t, func() bool { return s.tokenReviews.Load() >= 1+4 }, 10*time.Second, 10*time.Millisecond)
	refused := 0
	for _, a := range flood {
		select {
		case w := <-a:
			require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
			assert.Equal(t, "1", w.Header().Get("Retry-After"))
			var status metav1.Status
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &status))
			assert.Equal(t, metav1.StatusReasonTooManyRequests, status.Reason)
			assert.Contains(t, status.Message, "--proxy-auth-source-qps")
			refused++
		case <-time.After(100 * time.Millisecond): // held in its review
		}
	}
	assert.Equal(t, 30-4, refused, "the flood beyond its source's burst")

	w := answered(t, func() <-chan *httptest.ResponseRecorder {
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() { answer <- callFrom(p, "bob-token", elsewhere) }()
		return answer
	}())
	assert.Equal(t, http.StatusOK, w.Code, "a new caller from elsewhere during the flood: %s", w.Body.String())
	w = callFrom(p, "alice-token", flooder)
	assert.Equal(t, http.StatusOK, w.Code, "a known caller from the flooding address: %s", w.Body.String())
	assert.EqualValues(t, 1+4+1, s.tokenReviews.Load())

	s.release()
	s.holdUnknownOnly.Store(false)
}

func TestSourceLimiterForgetsFullBuckets(t *testing.T) {
	l := newSourceLimiter(1000, 2, time.Minute)
	assert.True(t, l.allow("a"))
	assert.True(t, l.allow("a"))
	assert.False(t, l.allow("a"), "beyond the burst at once")
	assert.True(t, l.allow("b"), "another source has its own budget")
	time.Sleep(l.refill + 10*time.Millisecond)
	assert.True(t, l.allow("a"))
	assert.Equal(t, []any{"a"}, l.sources.Keys(), "b's bucket, full again, is forgotten")
}

// TestOneTokenIsCountedOnce: a token counted is not counted again while its answer is
// remembered, so that a new caller's first requests, sent at once, cost one; a token refused
// is counted again when it comes back.
func TestOneTokenIsCountedOnce(t *testing.T) {
	l := newSourceLimiter(0.001, 2, time.Minute)
	for range 10 {
		assert.True(t, l.allowToken("a", "token-1"))
	}
	assert.True(t, l.allowToken("a", "token-2"))
	assert.False(t, l.allowToken("a", "token-3"), "a third token beyond the burst of 2")
	assert.False(t, l.allowToken("a", "token-3"), "a refused token is not remembered as counted")
	assert.True(t, l.allowToken("a", "token-1"))
	assert.True(t, l.allowToken("b", "token-3"), "from another address")
}
