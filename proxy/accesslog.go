package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// controlPlaneName stands for the Karmada control plane among the clusters an access-log line
// names.
const controlPlaneName = "control-plane"

// access is what the access log says of a request beyond its method and path: who asked, and
// which clusters the request was routed to.
type access struct {
	caller   Caller
	verb     string
	clusters []string
}

// responseRecorder keeps the status a handler wrote; it flushes like the writer it wraps,
// which watches need.
type responseRecorder struct {
	http.ResponseWriter
	status int
	// closeOnError: the request came over HTTP/1.x with a body. An error may be answered
	// before the body is read (a refusal); net/http would then read up to 256 KiB of the body
	// before answering, to keep the connection, which a caller trickling its body holds for
	// as long as it likes. Such an answer closes the connection instead.
	closeOnError bool
}

func newResponseRecorder(w http.ResponseWriter, r *http.Request) *responseRecorder {
	return &responseRecorder{ResponseWriter: w,
		closeOnError: r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody}
}

func (r *responseRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		if r.closeOnError && code >= http.StatusBadRequest {
			r.Header().Set("Connection", "close")
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *responseRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection to an upgrade (exec, attach, port-forward), which writes its
// answer on the connection itself: the line records 101 Switching Protocols.
func (r *responseRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("the connection of %T cannot be hijacked", r.ResponseWriter)
	}
	if r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (r *responseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logAccess writes the access-log line of a request that has been answered; a watch's line is
// written when the watch ends.
func (s *Server) logAccess(r *http.Request, a access, status int, took time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	s.accessLog.Info("request",
		zap.String("user", a.caller.Name),
		zap.Strings("groups", a.caller.Groups),
		zap.String("verb", a.verb),
		zap.String("method", r.Method),
		zap.String("path", r.URL.Path),
		zap.Strings("clusters", a.clusters),
		zap.Int("status", status),
		zap.Duration("duration", took),
	)
}
