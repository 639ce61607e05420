package proxy

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
)

// errTooManyFromSource is the answer to a request whose token would need a review while its
// source has sent more tokens for review than SourceQPS and SourceBurst allow.
var errTooManyFromSource = errors.New("too many requests with tokens the proxy does not know come from this address (--proxy-auth-source-qps, --proxy-auth-source-burst); retry later")

// sourceLimiter bounds, per source address, the tokens the proxy does not know good (never
// authenticated, or not within the last hour) that it would review: a flood of random tokens
// from one address spends that address's budget, not the review slots every new caller
// needs. Each source has a token bucket (golang.org/x/time/rate) of qps and burst, kept while
// it is not full; at most maxSources are remembered (the least recently used goes first).
// A token is counted once while its answer is remembered or being sought (seenFor): a new
// caller's first requests, sent at once with its token, cost one.
type sourceLimiter struct {
	qps   rate.Limit
	burst int
	// refill is how long an emptied bucket takes to be full again: a bucket unused for that
	// long is the same as a new one, so it is forgotten then.
	refill time.Duration
	// seenFor is how long a counted token is not counted again.
	seenFor time.Duration

	mu      sync.Mutex
	sources *utilcache.LRUExpireCache // source → *rate.Limiter
	seen    *utilcache.LRUExpireCache // the keys of the tokens counted within seenFor
}

// maxSources bounds the sources remembered.
const maxSources = 10000

func newSourceLimiter(qps float64, burst int, seenFor time.Duration) *sourceLimiter {
	return &sourceLimiter{
		qps: rate.Limit(qps), burst: burst,
		refill:  time.Duration(float64(burst)/qps*float64(time.Second)) + time.Second,
		seenFor: seenFor,
		sources: utilcache.NewLRUExpireCache(maxSources),
		seen:    utilcache.NewLRUExpireCache(maxKnownTokens),
	}
}

// allowToken tells whether the token of key may be looked at: it was counted within seenFor,
// or source's budget has one more for it.
func (l *sourceLimiter) allowToken(source, key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.seen.Get(key); seen {
		return true
	}
	if !l.allowLocked(source) {
		return false
	}
	l.seen.Add(key, true, l.seenFor)
	return true
}

// allow takes one of source's budget, and tells whether there was one.
func (l *sourceLimiter) allow(source string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowLocked(source)
}

func (l *sourceLimiter) allowLocked(source string) bool {
	var limiter *rate.Limiter
	if v, ok := l.sources.Get(source); ok {
		limiter = v.(*rate.Limiter)
	} else {
		limiter = rate.NewLimiter(l.qps, l.burst)
	}
	l.sources.Add(source, limiter, l.refill) // kept until it would be full again
	return limiter.Allow()
}

// sourceOf is the address a request comes from: the IP of its connection's remote end. Headers
// such as X-Forwarded-For are not believed: any caller can set them.
func sourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
