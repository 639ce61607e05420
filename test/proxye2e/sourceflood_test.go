package proxye2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNewCallersServedDuringAFloodFromOneSource: while 127.0.0.2 sends random bad tokens, up to
// 400 a second from 64 connections, callers the proxy has never seen (each with a new
// token) connecting from 127.0.0.3 are served every time, and the flood is answered 429 with
// Retry-After naming --proxy-auth-source-qps once past its own budget; the control plane reviews
// no more of the flood's tokens than that budget allows. Before the per-source budget, the flood
// held every review slot and a new caller was answered 429.
func TestNewCallersServedDuringAFloodFromOneSource(t *testing.T) {
	const (
		flooders  = 64
		floodRate = 400 // bad tokens a second at most, from all flooders together
		newcomers = 20
		path      = "/api/v1/namespaces/default/pods"
	)
	newCaller(t, "newcomer", []string{"get"}, "view")
	var fresh []string
	for range newcomers {
		fresh = append(fresh, newToken(t, "newcomer"))
	}
	// The newcomer's rights in the members are in place before the flood (a token of its own,
	// from elsewhere).
	warm := clientFrom(t, "127.0.0.4", 1)
	warmToken := newToken(t, "newcomer")
	require.Eventually(t, func() bool {
		resp, _, err := get(warm, warmToken, path)
		return err == nil && resp.StatusCode == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond)

	floodClient := clientFrom(t, "127.0.0.2", flooders)
	var mu sync.Mutex
	codes := map[int]int{}
	var sourceRefusals, otherRefusals int
	var floodErrs []error
	reviewsBefore := tokenReviews(t)
	floodStart := time.Now()
	stop := make(chan struct{})
	var flooding sync.WaitGroup
	for range flooders {
		flooding.Go(func() {
			pace := time.NewTicker(time.Second * flooders / floodRate)
			defer pace.Stop()
			for {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				resp, body, err := get(floodClient, randomToken(), path)
				mu.Lock()
				if err != nil {
					floodErrs = append(floodErrs, err)
				} else {
					codes[resp.StatusCode]++
					if resp.StatusCode == http.StatusTooManyRequests {
						var status metav1.Status
						if resp.Header.Get("Retry-After") == "1" && json.Unmarshal(body, &status) == nil &&
							status.Reason == metav1.StatusReasonTooManyRequests && strings.Contains(status.Message, "--proxy-auth-source-qps") {
							sourceRefusals++
						} else {
							otherRefusals++
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	// New callers, one every 300 ms from 127.0.0.3, each a token the proxy never saw.
	time.Sleep(2 * time.Second) // the flood is on, past its source's burst
	newClient := clientFrom(t, "127.0.0.3", 4)
	var served []time.Duration
	for i, token := range fresh {
		begin := time.Now()
		resp, body, err := get(newClient, token, path)
		took := time.Since(begin)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "new caller %d during the flood: %s", i, body)
		served = append(served, took)
		time.Sleep(300 * time.Millisecond)
	}
	close(stop)
	flooding.Wait()
	flood := time.Since(floodStart)
	reviews := tokenReviews(t) - reviewsBefore

	mu.Lock()
	defer mu.Unlock()
	t.Logf("flood from 127.0.0.2 for %v from %d connections: %v (429 of its own budget: %d, other 429: %d); TokenReviews meanwhile: %v",
		flood.Round(time.Millisecond), flooders, codes, sourceRefusals, otherRefusals, reviews)
	t.Logf("new callers from 127.0.0.3: %d first requests, p50 %v, p99 %v", len(served), percentile(served, 0.5), percentile(served, 0.99))
	assert.Empty(t, floodErrs, "requests of the flood that got no answer")
	assert.NotZero(t, sourceRefusals, "the flood was never refused 429 for its source")
	for code := range codes {
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, code, "the flood was answered %d", code)
	}
	// The flood's budget (the worker's defaults: 20 at once, 10 a second) and the new callers'
	// tokens, with room for a TTL or two of the warm-up's.
	assert.LessOrEqual(t, reviews, 20+10*(flood.Seconds()+1)+newcomers+5, "TokenReviews during the flood")
}
