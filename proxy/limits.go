package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The proxy's bounds on what one caller can make the worker hold: request bodies, member
// answers read into memory, and requests served at once. The worker runs MultiClusterService,
// Work execution and provisioning too: a proxy caller must not be able to run it out of
// memory. A refused request gets the Status an API server would send: 413 for a body too large,
// 429 with Retry-After (which client-go and kubectl retry) when too much is in flight.

// Limits bound the proxy; a zero field takes the default of the same name.
type Limits struct {
	// MaxRequestBodyBytes bounds the body of a request (413 beyond it), as kube-apiserver's
	// --max-request-bytes does.
	MaxRequestBodyBytes int64
	// MaxResponseBodyBytes bounds one member's answer the proxy reads into memory to merge or
	// translate it (a list, or the object a get or write looks up); a larger one fails the
	// request with a Status naming the cluster, instead of being cut short.
	MaxResponseBodyBytes int64
	// MaxBufferedBytes bounds the request bodies and member answers held in memory at once,
	// across all requests; a request that would go beyond it is refused with 429.
	MaxBufferedBytes int64
	// MaxRequestsInFlight bounds the requests served at once other than long-running ones
	// (429 beyond it).
	MaxRequestsInFlight int
	// MaxLongRunningRequestsInFlight bounds the watches, logs, exec, attach and port-forward
	// sessions served at once (429 beyond it).
	MaxLongRunningRequestsInFlight int
	// MaxLongRunningRequestsPerCaller bounds the watches, logs, exec, attach and port-forward
	// sessions of one caller (by user name) served at once (429 beyond it), so that one caller
	// cannot take all of MaxLongRunningRequestsInFlight.
	MaxLongRunningRequestsPerCaller int
	// MaxRequestsPerCaller bounds the requests of one caller (by user name) served at once,
	// long-running ones apart (429 beyond it), so that one caller cannot take all of
	// MaxRequestsInFlight.
	MaxRequestsPerCaller int
	// MaxBufferedBytesPerCaller bounds the request bodies and member answers the requests of
	// one caller hold at once (429 beyond it while its other requests hold them), so that one
	// caller cannot take all of MaxBufferedBytes (it is at most that).
	MaxBufferedBytesPerCaller int64
	// RequestBodyTimeout bounds the time a request other than a long-running one takes to send
	// its body, from its start: a body not received by then fails the request (504 Timeout),
	// so that a caller trickling a body holds its slots no longer.
	RequestBodyTimeout time.Duration
	// MaxWatchEventBytes bounds one event of a member's watch stream: a larger one ends the
	// watch with an ERROR event naming the cluster, instead of being read into memory whole.
	MaxWatchEventBytes int64
}

// The defaults of Limits, which the worker's flags (internal/options) repeat. The worker's
// memory limit in the chart is 512 MiB (deploy/charts/karmadaflow, worker.resources), and what
// the proxy holds costs about three times its bytes: a list keeps each member's answer and a
// copy of its items with the cluster annotation, and reading an answer of unknown length leaves
// garbage until the next GC (a list of two 64 MiB answers peaked at 270-425 MiB of heap). So
// 96 MiB held at once costs up to ~300 MiB and leaves the rest of the 512 MiB to workflows and
// activities. 32 MiB per answer is several times a page of kubectl's (500 objects) and
// ~4,000-8,000 whole pods of an unpaged list; a list of three members at it still fits.
const (
	DefaultMaxRequestBodyBytes            = 3 << 20  // kube-apiserver's MaxRequestBodyBytes
	DefaultMaxResponseBodyBytes           = 32 << 20 // one member's answer
	DefaultMaxBufferedBytes               = 96 << 20 // all requests' answers and bodies at once
	DefaultMaxRequestsInFlight            = 400      // kube-apiserver's --max-requests-inflight
	DefaultMaxLongRunningRequestsInFlight = 500      // watches, logs, exec, attach, port-forward
	// DefaultMaxLongRunningRequestsPerCaller: kubectl opens one watch (or log, exec) at a time
	// and a controller one watch per informer, a few dozen for the largest; 100 leaves them
	// room while one caller takes at most a fifth of DefaultMaxLongRunningRequestsInFlight.
	DefaultMaxLongRunningRequestsPerCaller = 100
	// DefaultMaxRequestsPerCaller: a quarter of DefaultMaxRequestsInFlight; kubectl sends one
	// request at a time, a controller as many as its client's QPS allows (tens).
	DefaultMaxRequestsPerCaller = 100
	// DefaultMaxBufferedBytesPerCaller: two members' answers at DefaultMaxResponseBodyBytes,
	// two thirds of DefaultMaxBufferedBytes, so that others keep a third while one caller
	// lists big clusters.
	DefaultMaxBufferedBytesPerCaller = 64 << 20
	// DefaultRequestBodyTimeout is kube-apiserver's --request-timeout: a body of
	// DefaultMaxRequestBodyBytes takes far less on any link a caller uses.
	DefaultRequestBodyTimeout = time.Minute
	// DefaultMaxWatchEventBytes: etcd keeps objects of up to 1.5 MiB (its default
	// --max-request-bytes), and a watch event is the object in JSON with its type; twice that
	// leaves room for encoding (a Table row carries the object and its cells).
	DefaultMaxWatchEventBytes = 3 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxRequestBodyBytes <= 0 {
		l.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if l.MaxResponseBodyBytes <= 0 {
		l.MaxResponseBodyBytes = DefaultMaxResponseBodyBytes
	}
	if l.MaxBufferedBytes <= 0 {
		l.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if l.MaxRequestsInFlight <= 0 {
		l.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	if l.MaxLongRunningRequestsInFlight <= 0 {
		l.MaxLongRunningRequestsInFlight = DefaultMaxLongRunningRequestsInFlight
	}
	if l.MaxLongRunningRequestsPerCaller <= 0 {
		l.MaxLongRunningRequestsPerCaller = DefaultMaxLongRunningRequestsPerCaller
	}
	if l.MaxRequestsPerCaller <= 0 {
		l.MaxRequestsPerCaller = DefaultMaxRequestsPerCaller
	}
	if l.MaxBufferedBytesPerCaller <= 0 {
		l.MaxBufferedBytesPerCaller = DefaultMaxBufferedBytesPerCaller
	}
	l.MaxBufferedBytesPerCaller = min(l.MaxBufferedBytesPerCaller, l.MaxBufferedBytes) // one caller may take all, no more
	if l.RequestBodyTimeout <= 0 {
		l.RequestBodyTimeout = DefaultRequestBodyTimeout
	}
	if l.MaxWatchEventBytes <= 0 {
		l.MaxWatchEventBytes = DefaultMaxWatchEventBytes
	}
	return l
}

// retryAfterSeconds is the Retry-After of the proxy's 429s (its limits, and reviews beyond
// theirs), as kube-apiserver's max-in-flight filter sends it.
const retryAfterSeconds = 1

// slots bounds requests served at once.
type slots chan struct{}

func (s slots) take() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s slots) give() { <-s }

// budget bounds the bytes held in memory at once across requests.
type budget struct {
	max  int64
	used atomic.Int64
}

func (b *budget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// hold is what one request holds of the budget, and, once its caller is known
// (joinCaller), of its caller's; it gives it all back when the request ends.
type hold struct {
	budget *budget
	held   atomic.Int64
	// longRunning tells, as limited found once, whether the request is a watch, log or stream.
	longRunning bool
	// caller is the budget of the request's caller (nil until joinCaller), callerName its
	// name, callerHeld what the request holds of it.
	caller     *budget
	callerName string
	callerHeld atomic.Int64
	// bodyTimedOut is set once the request's body was not received in time (deadlineBody).
	bodyTimedOut atomic.Bool
}

// joinCaller makes the request take what it holds from now on from its caller's budget too.
func (h *hold) joinCaller(name string, b *budget) { h.callerName, h.caller = name, b }

// take takes n bytes more for the request, from its caller's budget and the proxy's. It fails
// with a refusal: 429 while other requests (of the caller, or of all) hold the budget, or a
// too-large error when this request alone would exceed it.
func (h *hold) take(n int64) error {
	if h.caller != nil {
		if !h.caller.take(n) {
			if h.callerHeld.Load()+n > h.caller.max {
				return &refusal{apierrors.NewInternalError(fmt.Errorf(
					"the answers of this request are larger than the proxy's limit of %d bytes held at once for one caller (--proxy-max-buffered-bytes-per-caller): ask for less, e.g. in pages (limit) or with a selector", h.caller.max))}
			}
			return &refusal{apierrors.NewTooManyRequests(fmt.Sprintf(
				"the proxy holds as many answers in memory at once for user %q as for one caller it may (--proxy-max-buffered-bytes-per-caller); try again later", h.callerName), retryAfterSeconds)}
		}
		h.callerHeld.Add(n)
	}
	if h.budget.take(n) {
		h.held.Add(n)
		return nil
	}
	if h.caller != nil {
		h.caller.used.Add(-n)
		h.callerHeld.Add(-n)
	}
	if h.held.Load()+n > h.budget.max {
		return &refusal{apierrors.NewInternalError(fmt.Errorf(
			"the answers of this request are larger than the proxy's limit of %d bytes held at once (--proxy-max-buffered-bytes): ask for less, e.g. in pages (limit) or with a selector", h.budget.max))}
	}
	return &refusal{apierrors.NewTooManyRequests(
		"the proxy holds too many answers in memory at once (--proxy-max-buffered-bytes); try again later", retryAfterSeconds)}
}

// release gives back all the request holds; it may be called again.
func (h *hold) release() {
	h.budget.used.Add(-h.held.Swap(0))
	if h.caller != nil {
		h.caller.used.Add(-h.callerHeld.Swap(0))
	}
}

// refusal is the proxy's own answer to a request it will not serve, as a Kubernetes Status.
type refusal struct{ status *apierrors.StatusError }

func (r *refusal) Error() string { return r.status.Error() }

// write answers with the refusal's Status, and Retry-After when it has one.
func (r *refusal) write(w http.ResponseWriter) {
	s := r.status.ErrStatus
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	writeStatusObject(w, s)
}

// bodyTooLarge is the refusal of a request body over limit bytes.
func bodyTooLarge(limit int64) *refusal {
	return &refusal{apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"limit is %d bytes (the proxy's --proxy-max-request-body-bytes)", limit))}
}

// answerTooLarge is the refusal of a member answer over limit bytes: the request fails rather
// than be answered from a truncated (or omitted) answer.
func answerTooLarge(cluster string, limit int64) *refusal {
	return &refusal{apierrors.NewInternalError(fmt.Errorf(
		"the answer of cluster %s is larger than the proxy's limit of %d bytes (--proxy-max-response-body-bytes): ask for less, e.g. in pages (limit) or with a selector", cluster, limit))}
}

// asBodyTooLarge tells whether err comes from reading a request body past its limit.
func asBodyTooLarge(err error) (*refusal, bool) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return bodyTooLarge(tooLarge.Limit), true
	}
	return nil, false
}

// limited serves a request within the limits: it refuses it with 429 when too many requests of
// its kind are being served and with 413 when its body is declared too large, bounds the
// body's size and, but for long-running requests, the time to receive it, and gives serve the
// request's hold of the buffer budget.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, serve func(*http.Request, *hold)) {
	longRunning := isLongRunning(r)
	pool, kind := s.inFlight, "requests"
	if longRunning {
		pool, kind = s.longRunning, "long-running requests (watches, logs, exec, attach, port-forward)"
	}
	if !pool.take() {
		(&refusal{apierrors.NewTooManyRequests(fmt.Sprintf(
			"the proxy is serving as many %s as it may at once; try again later", kind), retryAfterSeconds)}).write(w)
		return
	}
	defer pool.give()
	limit := s.limits.MaxRequestBodyBytes
	if r.ContentLength > limit {
		bodyTooLarge(limit).write(w)
		return
	}
	h := &hold{budget: s.budget, longRunning: longRunning}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if !longRunning {
			r.Body = withBodyDeadline(w, r.Body, s.limits.RequestBodyTimeout, h)
		}
	}
	defer h.release()
	serve(r, h)
}

// readAnswer reads a member's answer whole: at most limit bytes, each taken from the request's
// hold. A larger answer is an error, never a truncated one.
func readAnswer(body io.Reader, contentLength int64, cluster string, limit int64, h *hold) ([]byte, error) {
	if contentLength > limit {
		return nil, answerTooLarge(cluster, limit)
	}
	data, err := io.ReadAll(io.LimitReader(&heldReader{r: body, hold: h}, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, answerTooLarge(cluster, limit)
	}
	return data, nil
}

// heldReader takes what it reads from the request's hold of the budget.
type heldReader struct {
	r    io.Reader
	hold *hold
}

func (h *heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if n > 0 {
		if herr := h.hold.take(int64(n)); herr != nil {
			return n, herr
		}
	}
	return n, err
}
