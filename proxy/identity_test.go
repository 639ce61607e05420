package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// reviewServer is a control plane that answers TokenReviews, SubjectAccessReviews and, for
// anything else, {}; it counts the reviews and can hold them.
type reviewServer struct {
	*httptest.Server
	tokenReviews, accessReviews atomic.Int64
	users                       map[string]string   // token → user name
	allowed                     map[string]bool     // user name → may use the proxy
	verbs                       map[string][]string // user name → the only verbs allowed (absent: any)
	asked                       []string            // "user verb" of each SubjectAccessReview, under mu
	fail                        atomic.Bool         // answer reviews 500
	holdUnknownOnly             atomic.Bool         // hold only the reviews of tokens not in users

	mu                     sync.Mutex
	holdTokens, holdAccess chan struct{} // while not nil, reviews wait for them to close
}

func newReviewServer(t *testing.T) *reviewServer {
	s := &reviewServer{
		users:   map[string]string{"alice-token": "alice", "bob-token": "bob", "eve-token": "eve", "reader-token": "reader"},
		allowed: map[string]bool{"alice": true, "bob": true, "reader": true},
		verbs:   map[string][]string{"reader": {"get"}},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.release()
		s.Close()
	})
	return s
}

func (s *reviewServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		s.tokenReviews.Add(1)
		var review authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		if _, known := s.users[review.Spec.Token]; !known || !s.holdUnknownOnly.Load() {
			s.wait(func() chan struct{} { return s.holdTokens })
		}
		if s.fail.Load() {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`, http.StatusInternalServerError)
			return
		}
		review.APIVersion, review.Kind = "authentication.k8s.io/v1", "TokenReview"
		if name, ok := s.users[review.Spec.Token]; ok {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: name, UID: name + "-uid", Groups: []string{"system:authenticated"}}}
		} else {
			review.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		_ = json.NewEncoder(w).Encode(review)
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		s.accessReviews.Add(1)
		s.wait(func() chan struct{} { return s.holdAccess })
		if s.fail.Load() {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`, http.StatusInternalServerError)
			return
		}
		var review authorizationv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		review.APIVersion, review.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
		user, verb := review.Spec.User, review.Spec.ResourceAttributes.Verb
		s.mu.Lock()
		s.asked = append(s.asked, user+" "+verb)
		s.mu.Unlock()
		review.Status.Allowed = s.allowed[user] && (s.verbs[user] == nil || slices.Contains(s.verbs[user], verb))
		_ = json.NewEncoder(w).Encode(review)
	default:
		_, _ = w.Write([]byte(`{}`))
	}
}

func (s *reviewServer) wait(hold func() chan struct{}) {
	s.mu.Lock()
	c := hold()
	s.mu.Unlock()
	if c != nil {
		<-c
	}
}

// hold makes token reviews (and access reviews, when access) wait until release.
func (s *reviewServer) hold(tokens, access bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tokens {
		s.holdTokens = make(chan struct{})
	}
	if access {
		s.holdAccess = make(chan struct{})
	}
}

func (s *reviewServer) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range []*chan struct{}{&s.holdTokens, &s.holdAccess} {
		if *c != nil {
			close(*c)
			*c = nil
		}
	}
}

// newTestServer is a proxy whose control plane is s.
func newTestServer(t *testing.T, s *reviewServer, mutate ...func(*Config)) *Server {
	cfg := &rest.Config{Host: s.URL, QPS: 1000, Burst: 1000, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	c := Config{ControlPlane: cfg, Auth: client, State: func() ([]searchv1alpha1.ResourceRegistry, []Cluster) { return nil, nil }}
	for _, m := range mutate {
		m(&c)
	}
	return NewServer(c)
}

// call sends the proxy a GET of the control plane's /version with token.
func call(p *Server, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, BasePath+"/version", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	return w
}

// callAsync is call in a goroutine; the answer comes on the channel.
func callAsync(p *Server, token string) <-chan *httptest.ResponseRecorder {
	answer := make(chan *httptest.ResponseRecorder, 1)
	go func() { answer <- call(p, token) }()
	return answer
}

// answered waits for an answer, failing the test when none comes in 10 s: the proxy queued
// the caller instead of answering.
func answered(t *testing.T, answer <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-answer:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no answer in 10 s: the caller was queued")
		return nil
	}
}

func TestRepeatedBadTokenCostsOneTokenReview(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s)
	for range 50 {
		w := call(p, "bad-token")
		require.Equal(t, http.StatusUnauthorized, w.Code, w.Body.String())
	}
	assert.EqualValues(t, 1, s.tokenReviews.Load(), "TokenReviews for one bad token sent 50 times")

	// The valid caller too: one review of each kind.
	for range 10 {
		w := call(p, "alice-token")
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	}
	assert.EqualValues(t, 2, s.tokenReviews.Load())
	assert.EqualValues(t, 1, s.accessReviews.Load())
}

func TestConcurrentCallersOfOneTokenShareOneReview(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s)
	s.hold(true, true)
	var answers []<-chan *httptest.ResponseRecorder
	for range 20 {
		answers = append(answers, callAsync(p, "bad-token"), callAsync(p, "alice-token"))
	}
	require.Eventually(t, func() bool { return s.tokenReviews.Load() == 2 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // let every caller join the reviews
	s.release()
	codes := map[int]int{}
	for _, a := range answers {
		codes[answered(t, a).Code]++
	}
	assert.Equal(t, map[int]int{http.StatusUnauthorized: 20, http.StatusOK: 20}, codes)
	assert.EqualValues(t, 2, s.tokenReviews.Load())
	assert.EqualValues(t, 1, s.accessReviews.Load())
}

// TestReviewsBeyondTheLimitAreRefusedAtOnce: with DefaultReviewMaxInFlight TokenReviews held
// by the control plane, a new token is answered 429 with Retry-After at once, while a caller
// already known is served; once reviews end, new tokens are reviewed again (the 429 was not
// remembered).
func TestReviewsBeyondTheLimitAreRefusedAtOnce(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s)
	require.Equal(t, http.StatusOK, call(p, "alice-token").Code)

	s.hold(true, false)
	var held []<-chan *httptest.ResponseRecorder
	for i := range 8 {
		held = append(held, callAsync(p, fmt.Sprintf("bad-token-%d", i)))
	}
	require.Eventually(t, func() bool { return s.tokenReviews.Load() == 1+8 }, 10*time.Second, 10*time.Millisecond)

	w := answered(t, callAsync(p, "bob-token"))
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	var status metav1.Status
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &status))
	assert.Equal(t, metav1.StatusReasonTooManyRequests, status.Reason)
	assert.EqualValues(t, http.StatusTooManyRequests, status.Code)
	require.NotNil(t, status.Details)
	assert.EqualValues(t, 1, status.Details.RetryAfterSeconds)
	assert.Equal(t, "Status", status.Kind)

	// A known caller is not held up by the reviews in flight.
	w = answered(t, callAsync(p, "alice-token"))
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.EqualValues(t, 1+8, s.tokenReviews.Load(), "a review was made beyond the limit, or for a known caller")

	s.release()
	for _, a := range held {
		assert.Equal(t, http.StatusUnauthorized, answered(t, a).Code)
	}
	assert.Equal(t, http.StatusOK, call(p, "bob-token").Code, "bob's 429 was remembered")
}

// TestKnownTokensKeepSlotsOfTheirOwn: while a flood of unknown tokens holds every review
// slot, a caller whose token the control plane authenticated before, and whose answer has
// expired since, is reviewed again rather than refused 429; a token never authenticated is
// still refused.
func TestKnownTokensKeepSlotsOfTheirOwn(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s, func(c *Config) { c.Reviews = ReviewOptions{CacheTTL: 100 * time.Millisecond} })
	require.Equal(t, http.StatusOK, call(p, "alice-token").Code)
	time.Sleep(200 * time.Millisecond) // alice's answer expires

	s.hold(true, false)
	var held []<-chan *httptest.ResponseRecorder
	for i := range DefaultReviewMaxInFlight {
		held = append(held, callAsync(p, fmt.Sprintf("bad-token-%d", i)))
	}
	require.Eventually(t, func() bool { return s.tokenReviews.Load() == 1+8 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, http.StatusTooManyRequests, answered(t, callAsync(p, "bob-token")).Code, "bob was never authenticated")

	alice := callAsync(p, "alice-token")
	require.Eventually(t, func() bool { return s.tokenReviews.Load() == 1+8+1 }, 10*time.Second, 10*time.Millisecond,
		"alice's token is reviewed again beside the flood")
	s.release()
	assert.Equal(t, http.StatusOK, answered(t, alice).Code)
	for _, a := range held {
		assert.Equal(t, http.StatusUnauthorized, answered(t, a).Code)
	}
}

func TestAccessReviewsBeyondTheLimitAreRefusedAtOnce(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s, func(c *Config) { c.Reviews.MaxInFlight = 1 })
	require.Equal(t, http.StatusOK, call(p, "alice-token").Code)
	require.Equal(t, http.StatusUnauthorized, call(p, "bad-token").Code)

	s.hold(false, true)
	held := callAsync(p, "bob-token")
	require.Eventually(t, func() bool { return s.accessReviews.Load() == 2 }, 10*time.Second, 10*time.Millisecond)
	w := answered(t, callAsync(p, "eve-token")) // her token is reviewed; her access would be the second review in flight
	assert.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	assert.Equal(t, http.StatusOK, answered(t, callAsync(p, "alice-token")).Code)
	assert.Equal(t, http.StatusUnauthorized, answered(t, callAsync(p, "bad-token")).Code)

	s.release()
	assert.Equal(t, http.StatusOK, answered(t, held).Code)
	assert.Equal(t, http.StatusForbidden, call(p, "eve-token").Code)
}

func TestFailuresAreRememberedForTheirTTL(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s, func(c *Config) {
		c.Reviews = ReviewOptions{CacheTTL: time.Hour, FailureCacheTTL: 200 * time.Millisecond}
	})
	require.Equal(t, http.StatusUnauthorized, call(p, "bad-token").Code)
	require.Equal(t, http.StatusForbidden, call(p, "eve-token").Code)
	require.Equal(t, http.StatusOK, call(p, "alice-token").Code)
	require.Equal(t, http.StatusUnauthorized, call(p, "bad-token").Code)
	require.Equal(t, http.StatusForbidden, call(p, "eve-token").Code)
	assert.EqualValues(t, 3, s.tokenReviews.Load())
	assert.EqualValues(t, 2, s.accessReviews.Load())

	time.Sleep(300 * time.Millisecond)
	require.Equal(t, http.StatusUnauthorized, call(p, "bad-token").Code)
	require.Equal(t, http.StatusForbidden, call(p, "eve-token").Code)
	require.Equal(t, http.StatusOK, call(p, "alice-token").Code)
	assert.EqualValues(t, 3+1, s.tokenReviews.Load(), "the bad token was not reviewed again after its TTL, or alice's was")
	assert.EqualValues(t, 2+1, s.accessReviews.Load(), "eve's denial was not reviewed again after its TTL, or alice's was")
}

func TestReviewErrorsAreNotRemembered(t *testing.T) {
	s := newReviewServer(t)
	p := newTestServer(t, s)
	s.fail.Store(true)
	assert.Equal(t, http.StatusUnauthorized, call(p, "alice-token").Code)
	s.fail.Store(false)
	w := call(p, "alice-token")
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.EqualValues(t, 2, s.tokenReviews.Load())
}

func TestAccessKeyTellsCallersApart(t *testing.T) {
	callers := []Caller{
		{Name: "a"},
		{Name: "a", UID: "1"},
		{Name: "a", Groups: []string{"x,y"}},
		{Name: "a", Groups: []string{"x", "y"}},
		{Name: "a", Groups: []string{"x"}, Extra: map[string][]string{"y": nil}},
		{Name: "a", Extra: map[string][]string{"k": {"v"}}},
		{Name: "a", Extra: map[string][]string{"k": {"v", ""}}},
		{Name: "a", Extra: map[string][]string{"k": {"w"}}},
		{Name: "a\x00get"},
	}
	keys := map[string]int{}
	for i, c := range callers {
		for _, verb := range []string{"get", "create"} {
			k := accessKey(c, verb)
			if j, ok := keys[k]; ok {
				t.Errorf("callers %d and %d share the key %q", j, i, k)
			}
			keys[k] = i
		}
	}
	assert.Equal(t, accessKey(Caller{Name: "a", Extra: map[string][]string{"k": {"v"}, "l": {"w"}}}, "get"),
		accessKey(Caller{Name: "a", Extra: map[string][]string{"l": {"w"}, "k": {"v"}}}, "get"))
}
