package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxBody bounds what the proxy reads of one member answer.
const maxBody = 512 << 20

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

// open sends one request to a member as the caller and returns the answer of a 2xx status;
// the caller closes its body.
func (s *Server) open(ctx context.Context, req *request, cluster, method, path string, query url.Values) (*http.Response, *memberError) {
	cfg, err := s.cfg.Member(ctx, cluster)
	if err != nil {
		return nil, &memberError{cluster: cluster, err: err}
	}
	rt, err := transport(cfg, req.caller)
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

// fetch is open for a whole JSON answer, decoded.
func (s *Server) fetch(ctx context.Context, req *request, cluster, path string, query url.Values) (map[string]any, *memberError) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, merr := s.open(ctx, req, cluster, http.MethodGet, path, query)
	if merr != nil {
		return nil, merr
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, &memberError{cluster: cluster, err: err}
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // keep integers exact
	if err := dec.Decode(&body); err != nil {
		return nil, &memberError{cluster: cluster, err: fmt.Errorf("decoding its answer: %w", err)}
	}
	return body, nil
}

// stamp marks an object, a list's items or a Table's rows with the cluster they came from.
func stamp(body map[string]any, cluster string) {
	switch {
	case body["kind"] == "Table":
		for _, row := range asSlice(body["rows"]) {
			if r, ok := row.(map[string]any); ok {
				if obj, ok := r["object"].(map[string]any); ok {
					stampObject(obj, cluster)
				}
			}
		}
	case body["items"] != nil:
		for _, item := range asSlice(body["items"]) {
			if obj, ok := item.(map[string]any); ok {
				stampObject(obj, cluster)
			}
		}
	default:
		stampObject(body, cluster)
	}
}

func stampObject(obj map[string]any, cluster string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	annotations, _ := md["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		md["annotations"] = annotations
	}
	annotations[AnnotationCachedFrom] = cluster
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// resourceVersionOf reads metadata.resourceVersion of an object, list or Table.
func resourceVersionOf(body map[string]any) string {
	md, _ := body["metadata"].(map[string]any)
	rv, _ := md["resourceVersion"].(string)
	return rv
}

func setResourceVersion(body map[string]any, rv string) {
	md, _ := body["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		body["metadata"] = md
	}
	md["resourceVersion"] = rv
}

func writeJSON(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(body)
}
