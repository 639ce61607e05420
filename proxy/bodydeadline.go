package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// deadlineBody is a request body that must be received within a deadline, set on the
// connection's reads (http.ResponseController: for HTTP/1.1 the connection, for HTTP/2 the
// stream). A read past it fails with bodyTimeout, and the request's hold records it, so that
// whoever passes the body on answers that rather than blame the server it was sent to. Once
// the body has ended the deadline is lifted: an HTTP/1.1 server reads on in the background to
// notice a caller leaving, and a deadline passed meanwhile would end a request still being
// answered.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	hold    *hold
	ended   atomic.Bool
}

// withBodyDeadline bounds the time body takes to arrive to timeout from now. Where the
// connection cannot take a deadline (a test's recorder) the body is returned as it is.
func withBodyDeadline(w http.ResponseWriter, body io.ReadCloser, timeout time.Duration, h *hold) io.ReadCloser {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return body
	}
	return &deadlineBody{ReadCloser: body, rc: rc, timeout: timeout, hold: h}
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.hold.bodyTimedOut.Store(true)
		return n, bodyTimeout(b.timeout)
	case err == io.EOF && !b.ended.Swap(true):
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyTimeout is the refusal of a body not received within timeout.
func bodyTimeout(timeout time.Duration) *refusal {
	return &refusal{apierrors.NewTimeoutError(fmt.Sprintf(
		"the request's body was not received within %v (the proxy's --proxy-request-body-timeout)", timeout), 0)}
}
