package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One object across the clusters: a get finds it in the member that holds it, and a write
// goes to its owner with its body translated for that member.

// find asks every placement for the named object and returns the answers that have it.
func (s *Server) find(req *request, placements []Placement, query url.Values) (found []page, failed []*memberError) {
	versions, _ := requestedVersions(req.r.URL.Query().Get("resourceVersion"))
	path := req.target.NamePath()
	answers := make([]page, len(placements))
	var wg sync.WaitGroup
	for i, p := range placements {
		wg.Go(func() {
			body, err := s.fetch(req.r.Context(), req, p.Cluster, path, memberQuery(query, versions, p.Cluster))
			answers[i] = page{cluster: p.Cluster, body: body, err: err}
		})
	}
	wg.Wait()
	for _, a := range answers {
		switch {
		case a.err == nil:
			found = append(found, a)
		case a.err.code != http.StatusNotFound:
			failed = append(failed, a.err)
		}
	}
	return found, failed
}

// one answers for a lookup that found zero or several objects, and reports whether exactly
// one was found.
func (s *Server) one(req *request, found []page, failed []*memberError) bool {
	if r := firstRefusal(failed...); r != nil {
		r.write(req.w)
		return false
	}
	switch {
	case len(found) > 1:
		clusters := make([]string, 0, len(found))
		for _, f := range found {
			clusters = append(clusters, f.cluster)
		}
		slices.Sort(clusters)
		writeStatus(req.w, http.StatusConflict, metav1.StatusReasonConflict, fmt.Sprintf(
			"%s %q exists in more than one cluster: %s", req.target.Resource, req.target.Name, strings.Join(clusters, ", ")))
		return false
	case len(found) == 1:
		for _, f := range failed {
			warn(req.w.Header(), f.Error())
		}
		return true
	case len(failed) > 0:
		for _, f := range failed[1:] {
			warn(req.w.Header(), f.Error())
		}
		failed[0].write(req.w)
	default:
		writeStatus(req.w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", req.target.Resource, req.target.Name))
	}
	return false
}

func (s *Server) get(req *request, placements []Placement) {
	if _, err := requestedVersions(req.r.URL.Query().Get("resourceVersion")); err != nil {
		writeStatus(req.w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	found, failed := s.find(req, placements, req.r.URL.Query())
	if !s.one(req, found, failed) {
		return
	}
	stamped, err := withAnnotation(found[0].body, AnnotationCachedFrom, found[0].cluster)
	if err != nil {
		writeStatus(req.w, http.StatusBadGateway, metav1.StatusReasonInternalError, fmt.Sprintf("cluster %s: its answer: %v", found[0].cluster, err))
		return
	}
	writeRaw(req.w, stamped)
}

// toOwner passes a write or a subresource request to the one member holding the object.
func (s *Server) toOwner(req *request, placements []Placement) {
	if req.target.Name == "" {
		writeStatus(req.w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, fmt.Sprintf(
			"%s %s of a whole collection is not served across clusters", req.r.Method, req.target.Resource))
		return
	}
	lookup := *req
	lookup.r = req.r.Clone(req.r.Context())
	lookup.r.Header.Set("Accept", acceptJSON)
	found, failed := s.find(&lookup, placements, url.Values{})
	if !s.one(req, found, failed) {
		return
	}
	cluster := found[0].cluster
	if req.r.Method == http.MethodPut {
		if err := translateBody(req.r, cluster, req.hold); err != nil {
			var refused *refusal
			if errors.As(err, &refused) {
				refused.write(req.w)
				return
			}
			writeStatus(req.w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
			return
		}
	}
	cfg, err := s.cfg.Member(req.r.Context(), cluster)
	if err != nil {
		writeStatus(req.w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
		return
	}
	s.pass(req, cfg, "cluster "+cluster, req.member)
}

// translateBody makes an object read through the proxy fit for its cluster again: the
// multi-cluster resourceVersion becomes the cluster's own and the proxy's annotation goes.
// The body, bounded by the proxy's MaxRequestBodyBytes (limited), is held in the request's
// budget; a body past the bound is a refusal (413).
func translateBody(r *http.Request, cluster string, h *hold) error {
	if !strings.Contains(r.Header.Get("Content-Type"), "json") || r.Body == nil {
		return nil
	}
	data, err := io.ReadAll(&heldReader{r: r.Body, hold: h})
	if tooLarge, ok := asBodyTooLarge(err); ok {
		return tooLarge
	}
	if err != nil {
		return err
	}
	// Only metadata is decoded; every other value stays the raw JSON it was: decoded into
	// maps, a 3 MiB array of numbers took over 170 MiB.
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("the request body is not a JSON object: %w", err)
	}
	var md map[string]json.RawMessage
	if json.Unmarshal(obj["metadata"], &md) == nil && md != nil {
		var rv string
		if json.Unmarshal(md["resourceVersion"], &rv) == nil && rv != "" {
			if versions, err := DecodeResourceVersion(rv); err == nil && versions[cluster] != "" {
				md["resourceVersion"] = quote(versions[cluster])
			}
		}
		var annotations map[string]json.RawMessage
		if json.Unmarshal(md["annotations"], &annotations) == nil && annotations != nil {
			delete(annotations, AnnotationCachedFrom)
			if md["annotations"], err = json.Marshal(annotations); err != nil {
				return err
			}
		}
		if obj["metadata"], err = json.Marshal(md); err != nil {
			return err
		}
	}
	if data, err = json.Marshal(obj); err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	r.Header.Set("Content-Length", strconv.Itoa(len(data)))
	return nil
}
