package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
)

const (
	acceptJSON  = "application/json"
	acceptTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)

// wantsTable tells whether the caller asked for a Table (as kubectl get does).
func wantsTable(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), "as=Table") }

// accept is what the proxy asks members for: JSON, as a Table when the caller wants one.
func accept(r *http.Request) string {
	if wantsTable(r) {
		return acceptTable
	}
	return acceptJSON
}

// open sends one request to a member as the caller is known there and returns the answer of a 2xx status;
// the caller closes its body.
func (s *Server) open(ctx context.Context, req *request, cluster, method, path string, query url.Values) (*http.Response, *memberError) {
	cfg, err := s.cfg.Member(ctx, cluster)
	if err != nil {
		return nil, &memberError{cluster: cluster, err: err}
	}
	rt, err := s.transports.forCaller(cfg, req.member)
	if err != nil {
		return nil, &memberError{cluster: cluster, err: err}
	}
	u := strings.TrimSuffix(cfg.Host, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	out, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, &memberError{cluster: cluster, err: err}
	}
	out.Header.Set("Accept", accept(req.r))
	resp, err := rt.RoundTrip(out)
	if err != nil {
		return nil, &memberError{cluster: cluster, err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, &memberError{cluster: cluster, code: resp.StatusCode, body: body}
	}
	return resp, nil
}

// fetch is open for a whole answer, as the member sent it: at most the proxy's
// MaxResponseBodyBytes, held in the request's budget. An answer beyond either fails the
// request (memberError.refusal), never cut short.
func (s *Server) fetch(ctx context.Context, req *request, cluster, path string, query url.Values) ([]byte, *memberError) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, merr := s.open(ctx, req, cluster, http.MethodGet, path, query)
	if merr != nil {
		return nil, merr
	}
	defer resp.Body.Close()
	data, err := readAnswer(resp.Body, resp.ContentLength, cluster, s.limits.MaxResponseBodyBytes, req.hold)
	var refused *refusal
	switch {
	case errors.As(err, &refused):
		return nil, &memberError{cluster: cluster, refusal: refused}
	case err != nil:
		return nil, &memberError{cluster: cluster, err: err}
	}
	return data, nil
}

// continueIn reads metadata.continue of a list.
func continueIn(list []byte) string {
	return stringField(fieldValue(list, "metadata"), "continue")
}

func writeRaw(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
