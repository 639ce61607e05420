package proxye2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenReviews is how many TokenReviews the control plane's kube-apiserver has answered, from
// its apiserver_request_total.
func tokenReviews(t *testing.T) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := testEnv.ControlPlane.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	require.NoError(t, err)
	var total float64
	lines := bufio.NewScanner(bytes.NewReader(raw))
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="tokenreviews"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		require.NoError(t, err, line)
		total += v
	}
	require.NoError(t, lines.Err())
	return total
}

func randomToken() string { return "bad-" + rand.Text() }

// get sends the proxy a GET of path with token and reads the answer.
func get(c *http.Client, token, path string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, proxyURL+path, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// TestRepeatedBadTokenCostsOneTokenReview: a bad token sent 50 times costs the control plane
// one TokenReview (two should the failure's TTL end meanwhile), not 50.
func TestRepeatedBadTokenCostsOneTokenReview(t *testing.T) {
	c := client(t)
	token := randomToken()
	before := tokenReviews(t)
	for i := range 50 {
		resp, body, err := get(c, token, "/api/v1/namespaces/default/pods")
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "request %d: %s", i, body)
	}
	reviews := tokenReviews(t) - before
	t.Logf("TokenReviews the control plane answered for one bad token sent 50 times: %v", reviews)
	assert.LessOrEqual(t, reviews, 2.0)
}

// TestTokenFloodLeavesKnownCallersServed: while random bad tokens are sent at 200/s from up to
// 64 connections at once, for longer than the proxy remembers a token's answer, a caller the
// proxy knows already is served every time (its token is reviewed again on slots the flood
// cannot take), and the flood is answered 401 or, beyond the reviews in flight, 429 with
// Retry-After; never 5xx. The latencies are logged, not asserted.
func TestTokenFloodLeavesKnownCallersServed(t *testing.T) {
	const (
		flooders  = 64
		floodRate = 200              // bad tokens a second, as measured in the issue
		flood     = 14 * time.Second // beyond the token cache's 10 s: the steady caller's answer expires meanwhile
		path      = "/api/v1/namespaces/default/pods"
	)
	ctx := context.Background()
	// A caller of its own, so that its answers are remembered from the warm-up on, not from
	// another test.
	cp := testEnv.ControlPlane.Client()
	require.NoError(t, create(ctx, func() error {
		_, err := cp.CoreV1().ServiceAccounts(callerNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "steady"}}, metav1.CreateOptions{})
		return err
	}))
	require.NoError(t, bindCluster(ctx, cp, "steady-proxy", "proxy-user", "steady"))
	for _, m := range testEnv.Members {
		require.NoError(t, bindCluster(ctx, m.Client(), "steady-view", "view", "steady"))
	}
	exp := int64(3600)
	tr, err := cp.CoreV1().ServiceAccounts(callerNamespace).CreateToken(ctx, "steady",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	require.NoError(t, err)
	steady := tr.Status.Token

	steadyClient := client(t)
	// Warm-up: the steady caller is reviewed once, and its rights in the members are in place.
	require.Eventually(t, func() bool {
		resp, _, err := get(steadyClient, steady, path)
		return err == nil && resp.StatusCode == http.StatusOK
	}, 30*time.Second, 200*time.Millisecond)

	floodClient := client(t)
	floodClient.Transport.(*http.Transport).MaxIdleConnsPerHost = flooders
	floodClient.Timeout = time.Minute
	var mu sync.Mutex
	codes := map[int]int{}
	var floodErrs []error
	var latencies = map[int][]time.Duration{}
	var badRetryAfter []string

	reviewsBefore := tokenReviews(t)
	deadline := time.Now().Add(flood)
	// A bad token every 1/floodRate s, to the first of the flooders that is free; when none is,
	// the token is not sent (counted).
	sends := make(chan struct{})
	var skipped int
	var flooding sync.WaitGroup
	flooding.Go(func() {
		defer close(sends)
		tick := time.NewTicker(time.Second / floodRate)
		defer tick.Stop()
		for now := range tick.C {
			if now.After(deadline) {
				return
			}
			select {
			case sends <- struct{}{}:
			default:
				skipped++
			}
		}
	})
	for range flooders {
		flooding.Go(func() {
			for range sends {
				begin := time.Now()
				resp, body, err := get(floodClient, randomToken(), path)
				took := time.Since(begin)
				mu.Lock()
				if err != nil {
					floodErrs = append(floodErrs, err)
				} else {
					codes[resp.StatusCode]++
					latencies[resp.StatusCode] = append(latencies[resp.StatusCode], took)
					if resp.StatusCode == http.StatusTooManyRequests {
						var status metav1.Status
						if resp.Header.Get("Retry-After") == "" || json.Unmarshal(body, &status) != nil ||
							status.Reason != metav1.StatusReasonTooManyRequests {
							badRetryAfter = append(badRetryAfter, resp.Header.Get("Retry-After")+" "+string(body))
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	// The steady caller, meanwhile.
	steadyCodes := map[int]int{}
	var during []time.Duration
	for time.Now().Before(deadline) {
		begin := time.Now()
		resp, body, err := get(steadyClient, steady, path)
		during = append(during, time.Since(begin))
		require.NoError(t, err)
		steadyCodes[resp.StatusCode]++
		assert.Equal(t, http.StatusOK, resp.StatusCode, "the steady caller during the flood: %s", body)
	}
	flooding.Wait()
	reviewsDuring := tokenReviews(t) - reviewsBefore

	// Without the flood (after it).
	time.Sleep(time.Second) // reviews the flood left in flight end
	var quiet []time.Duration
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		begin := time.Now()
		resp, body, err := get(steadyClient, steady, path)
		quiet = append(quiet, time.Since(begin))
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "the steady caller after the flood: %s", body)
	}

	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range codes {
		total += n
	}
	t.Logf("flood: %d/s from up to %d connections for %v: %d answers (%.0f/s): %v, %d not sent for want of a free connection; TokenReviews the control plane answered meanwhile: %v",
		floodRate, flooders, flood, total, float64(total)/flood.Seconds(), codes, skipped, reviewsDuring)
	for code, l := range latencies {
		t.Logf("flood answers %d: p50 %v, p99 %v", code, percentile(l, 0.50), percentile(l, 0.99))
	}
	t.Logf("steady caller during the flood: %d requests %v, p50 %v, p99 %v", len(during), steadyCodes, percentile(during, 0.50), percentile(during, 0.99))
	t.Logf("steady caller without the flood: %d requests, p50 %v, p99 %v", len(quiet), percentile(quiet, 0.50), percentile(quiet, 0.99))

	assert.Empty(t, floodErrs, "requests of the flood that got no answer")
	for code := range codes {
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, code, "the flood was answered %d", code)
	}
	assert.NotZero(t, codes[http.StatusUnauthorized], "no token of the flood was reviewed")
	assert.NotZero(t, codes[http.StatusTooManyRequests], "the flood was never refused 429: its reviews queued")
	assert.Empty(t, badRetryAfter, "429s without Retry-After or a TooManyRequests Status")
}

// percentile is the q-quantile of ds (nearest rank).
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)].Round(100 * time.Microsecond)
}
