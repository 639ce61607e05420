package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lists across the clusters: one request fanned out to every placement, the answers merged
// into one list, paged, and stamped with the cluster each item came from.

// requestedVersions reads a resourceVersion parameter: nil for "" and "0" (which keep their
// meaning in every cluster), else the versions per cluster the proxy once returned.
func requestedVersions(rv string) (map[string]string, error) {
	if rv == "" || rv == "0" {
		return nil, nil
	}
	return DecodeResourceVersion(rv)
}

// memberQuery is the query sent to cluster: the caller's, with the cluster's own
// resourceVersion in place of the multi-cluster one.
func memberQuery(q url.Values, versions map[string]string, cluster string) url.Values {
	out := url.Values{}
	for k, v := range q {
		switch k {
		case "resourceVersion", "continue", "limit", "watch":
		default:
			out[k] = v
		}
	}
	switch rv := q.Get("resourceVersion"); {
	case versions != nil && versions[cluster] != "":
		out.Set("resourceVersion", versions[cluster])
	case rv == "0":
		out.Set("resourceVersion", "0")
	default:
		out.Del("resourceVersionMatch") // meaningless without a version of this cluster
	}
	return out
}

// page is one member's part of a list: its answer, and the items (or a Table's rows) of it.
type page struct {
	cluster string
	body    []byte
	items   [][]byte
	err     *memberError
}

// split reads the items (or rows) of the page's answer.
func (p *page) split(key string) {
	if p.err != nil {
		return
	}
	f, _, err := fieldOf(p.body, key)
	if err == nil {
		p.items, err = arrayElements(orNull(f.value))
	}
	if err != nil {
		p.err, p.body = &memberError{cluster: p.cluster, err: fmt.Errorf("decoding its answer: %w", err)}, nil
	}
}

func orNull(value []byte) []byte {
	if value == nil {
		return []byte("null")
	}
	return value
}

// listNamespaces are the namespaces to list in for p: the request's, or the placement's.
func listNamespaces(t Target, p Placement) []string {
	if t.Namespace != "" || p.Namespaces == nil {
		return []string{t.Namespace}
	}
	return p.Namespaces
}

// itemsKey is where a list keeps its objects: "rows" in a Table, else "items".
func itemsKey(r *http.Request) string {
	if wantsTable(r) {
		return "rows"
	}
	return "items"
}

func (s *Server) list(req *request, placements []Placement) {
	q := req.r.URL.Query()
	versions, err := requestedVersions(q.Get("resourceVersion"))
	if err != nil {
		writeStatus(req.w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	var limit int64
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			writeStatus(req.w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("limit %q is not a non-negative integer", l))
			return
		}
	}
	var pages []page
	next := ""
	if limit == 0 {
		pages = s.listAll(req, placements, versions)
	} else {
		var status int
		pages, next, status, err = s.listPage(req, placements, versions, limit)
		if err != nil {
			writeStatus(req.w, status, metav1.StatusReasonBadRequest, err.Error())
			return
		}
	}

	for _, p := range pages {
		if r := firstRefusal(p.err); r != nil {
			r.write(req.w) // an answer the proxy may not hold fails the list, never shortens it
			return
		}
	}
	key := itemsKey(req.r)
	var envelope []byte // the first answer's, for kind, apiVersion and a Table's columns
	var items [][]byte
	listVersions := map[string]string{}
	var failed []*memberError
	for _, p := range pages {
		if p.err != nil {
			failed = append(failed, p.err)
			continue
		}
		for _, item := range p.items {
			stamped, err := stampItem(item, key, p.cluster)
			if err != nil {
				writeStatus(req.w, http.StatusBadGateway, metav1.StatusReasonInternalError, fmt.Sprintf("cluster %s: an item of its answer: %v", p.cluster, err))
				return
			}
			items = append(items, stamped)
		}
		if rv := resourceVersionIn(p.body); rv != "" {
			listVersions[p.cluster] = rv
		}
		if envelope == nil {
			envelope = p.body
		}
	}
	if envelope == nil {
		if len(failed) > 0 {
			failed[0].write(req.w)
			return
		}
		envelope = []byte(`{"kind":"List","apiVersion":"v1"}`)
	}
	for _, f := range failed {
		warn(req.w.Header(), f.Error())
	}
	md := map[string]string{"resourceVersion": EncodeResourceVersion(listVersions)}
	if next != "" {
		md["continue"] = next
	}
	writeList(req.w, envelope, md, key, items)
}

// writeList answers with a list: the envelope's fields other than metadata and key, then
// metadata, then the items under key.
func writeList(w http.ResponseWriter, envelope []byte, metadata map[string]string, key string, items [][]byte) {
	fields, _ := objectFields(envelope)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := bufio.NewWriterSize(w, 64<<10)
	out.WriteByte('{')
	for _, f := range fields {
		if keyIs(f.key, "metadata") || keyIs(f.key, key) {
			continue
		}
		out.WriteByte('"')
		out.Write(f.key)
		out.WriteString(`":`)
		out.Write(f.value)
		out.WriteByte(',')
	}
	md, _ := json.Marshal(metadata)
	out.WriteString(`"metadata":`)
	out.Write(md)
	out.WriteString(`,` + string(quote(key)) + `:[`)
	for i, item := range items {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(item)
	}
	out.WriteString("]}\n")
	_ = out.Flush()
}

// hasObject tells whether a Table's row carries its object.
func hasObject(row []byte) bool {
	obj := fieldValue(row, "object")
	return obj != nil && string(obj) != "null"
}

// stampItem gives an item of a list, or the object of a Table's row, the cluster annotation.
func stampItem(item []byte, key, cluster string) ([]byte, error) {
	if key != "rows" {
		return withAnnotation(item, AnnotationCachedFrom, cluster)
	}
	if !hasObject(item) {
		return item, nil
	}
	return setPath(item, []string{"object", "metadata", "annotations", AnnotationCachedFrom}, quote(cluster))
}

// listAll asks every placement at once.
func (s *Server) listAll(req *request, placements []Placement, versions map[string]string) []page {
	type call struct{ cluster, namespace string }
	var calls []call
	for _, p := range placements {
		for _, ns := range listNamespaces(req.target, p) {
			calls = append(calls, call{p.Cluster, ns})
		}
	}
	key := itemsKey(req.r)
	pages := make([]page, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			body, err := s.fetch(req.r.Context(), req, c.cluster, req.target.CollectionPath(c.namespace), memberQuery(req.r.URL.Query(), versions, c.cluster))
			pages[i] = page{cluster: c.cluster, body: body, err: err}
			pages[i].split(key)
		})
	}
	wg.Wait()
	return mergeNamespacePages(pages)
}

// mergeNamespacePages folds the pages of one cluster's namespaces into one page.
func mergeNamespacePages(calls []page) []page {
	var out []page
	for _, c := range calls {
		if n := len(out); n > 0 && out[n-1].cluster == c.cluster {
			last := &out[n-1]
			switch {
			case last.err != nil:
			case c.err != nil:
				last.err, last.body = c.err, nil
			default:
				last.items = append(last.items, c.items...)
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// listPage serves one page of a paged list, walking the placements in cluster order; it
// returns the pages and the continue token of the next page.
func (s *Server) listPage(req *request, placements []Placement, versions map[string]string, limit int64) ([]page, string, int, error) {
	q := req.r.URL.Query()
	start, memberContinue := 0, ""
	if c := q.Get("continue"); c != "" {
		token, err := decodeContinue(c)
		if err != nil {
			return nil, "", http.StatusBadRequest, err
		}
		start = slices.IndexFunc(placements, func(p Placement) bool { return p.Cluster == token.Cluster })
		if start < 0 {
			return nil, "", http.StatusGone, fmt.Errorf("cluster %s of the continue token no longer serves %s; list again", token.Cluster, req.target.Resource)
		}
		memberContinue = token.Continue
	}
	key := itemsKey(req.r)
	var pages []page
	remaining := limit
	for i := start; i < len(placements) && remaining > 0; i++ {
		p := placements[i]
		namespaces := listNamespaces(req.target, p)
		if len(namespaces) > 1 {
			// Several namespaces of one cluster: served whole, not paged.
			calls := make([]page, 0, len(namespaces))
			for _, ns := range namespaces {
				body, err := s.fetch(req.r.Context(), req, p.Cluster, req.target.CollectionPath(ns), memberQuery(q, versions, p.Cluster))
				calls = append(calls, page{cluster: p.Cluster, body: body, err: err})
				calls[len(calls)-1].split(key)
			}
			pages = append(pages, mergeNamespacePages(calls)...)
			remaining -= int64(len(pages[len(pages)-1].items))
			memberContinue = ""
			continue
		}
		mq := memberQuery(q, versions, p.Cluster)
		mq.Set("limit", strconv.FormatInt(remaining, 10))
		if memberContinue != "" {
			mq.Set("continue", memberContinue)
			mq.Del("resourceVersion")
			mq.Del("resourceVersionMatch")
		}
		memberContinue = ""
		body, err := s.fetch(req.r.Context(), req, p.Cluster, req.target.CollectionPath(namespaces[0]), mq)
		pg := page{cluster: p.Cluster, body: body, err: err}
		pg.split(key)
		pages = append(pages, pg)
		if pg.err != nil {
			continue
		}
		remaining -= int64(len(pg.items))
		if c := continueIn(body); c != "" {
			return pages, encodeContinue(continueToken{Cluster: p.Cluster, Continue: c}), 0, nil
		}
		if remaining <= 0 && i+1 < len(placements) {
			return pages, encodeContinue(continueToken{Cluster: placements[i+1].Cluster}), 0, nil
		}
	}
	return pages, "", 0, nil
}
