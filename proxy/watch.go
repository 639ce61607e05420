package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// membershipCheck is how often the watches' clusters are checked for a change.
const membershipCheck = 2 * time.Second

// membership tells watches when the clusters serving them change. One loop, running while any
// watch is open, reads the ResourceRegistries and Clusters once every membershipCheck and
// computes the clusters of each resource and namespace being watched once, however many
// watches there are: a watch costs no computation of its own. The zero value is ready.
type membership struct {
	mu      sync.Mutex
	watches map[watchKey]map[*watcher]struct{}
	running bool
}

// watchKey is what a watch's clusters depend on: its resource and namespace.
type watchKey struct{ group, version, resource, namespace string }

// watcher is one watch: the clusters it streams from, and changed, closed when they change.
type watcher struct {
	clusters []string
	changed  chan struct{}
}

// joinMembership registers a watch of t streaming from clusters; changed is closed once the clusters
// serving t differ from them. leave must be called when the watch ends.
func (s *Server) joinMembership(t Target, clusters []string) (changed <-chan struct{}, leave func()) {
	m := &s.membership
	key := watchKey{t.Group, t.Version, t.Resource, t.Namespace}
	w := &watcher{clusters: clusters, changed: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watches == nil {
		m.watches = map[watchKey]map[*watcher]struct{}{}
	}
	if m.watches[key] == nil {
		m.watches[key] = map[*watcher]struct{}{}
	}
	m.watches[key][w] = struct{}{}
	if !m.running {
		m.running = true
		go s.checkMembership()
	}
	return w.changed, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if ws := m.watches[key]; ws != nil {
			delete(ws, w)
			if len(ws) == 0 {
				delete(m.watches, key)
			}
		}
	}
}

// checkMembership is the loop of membership; it ends when no watch is open.
func (s *Server) checkMembership() {
	m := &s.membership
	tick := time.NewTicker(membershipCheck)
	defer tick.Stop()
	for range tick.C {
		m.mu.Lock()
		if len(m.watches) == 0 {
			m.running = false
			m.mu.Unlock()
			return
		}
		keys := make([]watchKey, 0, len(m.watches))
		for k := range m.watches {
			keys = append(keys, k)
		}
		m.mu.Unlock()

		registries, clusters := s.cfg.State()
		current := make(map[watchKey][]string, len(keys))
		for _, k := range keys {
			current[k] = s.servingClusters(k, registries, clusters)
		}

		m.mu.Lock()
		for k, names := range current {
			for w := range m.watches[k] {
				if !slices.Equal(w.clusters, names) {
					close(w.changed)
					delete(m.watches[k], w)
				}
			}
			if len(m.watches[k]) == 0 {
				delete(m.watches, k)
			}
		}
		m.mu.Unlock()
	}
}

// servingClusters are the names of the clusters serving k, as Server.placements finds them.
func (s *Server) servingClusters(k watchKey, registries []searchv1alpha1.ResourceRegistry, clusters []Cluster) []string {
	kind, err := s.cfg.Kind(schema.GroupVersionResource{Group: k.group, Version: k.version, Resource: k.resource})
	if err != nil {
		return []string{}
	}
	gv := schema.GroupVersion{Group: k.group, Version: k.version}.String()
	out := []string{}
	for _, p := range Placements(registries, clusters, gv, kind) {
		if p.serves(k.namespace) {
			out = append(out, p.Cluster)
		}
	}
	return out
}

// event is one watch event of a member.
type event struct {
	cluster string
	Type    string          `json:"type"`
	Object  json.RawMessage `json:"object"`
	end     error           // the member's stream ended (nil: cleanly)
}

// watch merges the members' watch streams into one. Each event's object carries the
// multi-cluster resourceVersion of everything delivered so far, so a client resuming from
// it misses nothing. A cluster joining or leaving, or a member stream ending, ends the
// stream cleanly: clients watch again.
func (s *Server) watch(req *request, placements []Placement) {
	q := req.r.URL.Query()
	versions, err := requestedVersions(q.Get("resourceVersion"))
	if err != nil {
		writeStatus(req.w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	ctx := req.r.Context()
	if req.target.Name != "" {
		q.Set("fieldSelector", joinSelectors(q.Get("fieldSelector"), "metadata.name="+req.target.Name))
	}
	events := make(chan event)
	type stream struct{ cluster, namespace string }
	var streams []stream
	for _, p := range placements {
		for _, ns := range listNamespaces(req.target, p) {
			streams = append(streams, stream{p.Cluster, ns})
		}
	}
	current := map[string]string{}
	for c, rv := range versions {
		current[c] = rv
	}
	// Open every member stream before answering, so that a refusal is the answer.
	var bodies []*http.Response
	defer func() {
		for _, b := range bodies {
			_ = b.Body.Close()
		}
	}()
	var unreachable []*memberError
	for _, st := range streams {
		mq := memberQuery(q, versions, st.cluster)
		mq.Set("watch", "true")
		resp, merr := s.openWatch(ctx, req, st.cluster, req.target.CollectionPath(st.namespace), mq)
		if merr != nil && merr.code == 0 {
			// Unreachable: watch the others, and say which cluster is missing.
			unreachable = append(unreachable, merr)
			continue
		}
		if merr != nil {
			merr.write(req.w)
			return
		}
		bodies = append(bodies, resp)
		go func(cluster string, resp *http.Response) {
			dec := newEventDecoder(resp.Body, cluster, s.limits.MaxWatchEventBytes)
			for {
				var e event
				err := dec.decode(&e)
				if err != nil {
					select {
					case events <- event{cluster: cluster, end: err}:
					case <-ctx.Done():
					}
					return
				}
				e.cluster = cluster
				select {
				case events <- e:
				case <-ctx.Done():
					return
				}
			}
		}(st.cluster, resp)
	}

	if len(bodies) == 0 && len(unreachable) > 0 {
		unreachable[0].write(req.w)
		return
	}
	for _, u := range unreachable {
		warn(req.w.Header(), u.Error())
	}
	req.w.Header().Set("Content-Type", "application/json")
	req.w.Header().Set("Transfer-Encoding", "chunked")
	req.w.WriteHeader(http.StatusOK)
	flusher, _ := req.w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	changed, leave := s.joinMembership(req.target, clusterNames(placements))
	defer leave()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			return // clusters joined or left: the client watches again
		case e := <-events:
			if tooLarge, ok := e.end.(*eventTooLarge); ok {
				s.cfg.Logger.Warn("a member's watch event is over the limit", zap.String("cluster", e.cluster), zap.Int64("limit", tooLarge.limit))
				_ = writeEvent(req.w, tooLarge.errorEvent())
				return
			}
			if e.end != nil {
				return
			}
			if e.Type != "ERROR" {
				if err := stampEvent(&e, current); err != nil {
					s.cfg.Logger.Warn("an event of a member's watch could not be read", zap.String("cluster", e.cluster), zap.Error(err))
					return // the client watches again
				}
			}
			if _, err := req.w.Write(eventJSON(e)); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			if e.Type == "ERROR" {
				return
			}
		}
	}
}

// stampEvent records the event's version of its cluster in current and gives the object
// the cluster annotation and the multi-cluster version.
func stampEvent(e *event, current map[string]string) error {
	if len(e.Object) == 0 {
		return nil
	}
	if stringField(e.Object, "kind") == "Table" {
		rows, err := arrayElements(orNull(fieldValue(e.Object, "rows")))
		if err != nil {
			return err
		}
		for _, row := range rows {
			if rv := resourceVersionIn(rowObject(row)); rv != "" {
				current[e.cluster] = rv
			}
		}
		encoded := EncodeResourceVersion(current)
		for i, row := range rows {
			if !hasObject(row) {
				continue
			}
			if rows[i], err = stampItem(row, "rows", e.cluster); err != nil {
				return err
			}
			if rows[i], err = setPath(rows[i], []string{"object", "metadata", "resourceVersion"}, quote(encoded)); err != nil {
				return err
			}
		}
		e.Object, err = setPath(e.Object, []string{"rows"}, append(append([]byte{'['}, bytes.Join(rows, []byte{','})...), ']'))
		return err
	}
	if rv := resourceVersionIn(e.Object); rv != "" {
		current[e.cluster] = rv
	}
	var err error
	if e.Type != "BOOKMARK" {
		if e.Object, err = withAnnotation(e.Object, AnnotationCachedFrom, e.cluster); err != nil {
			return err
		}
	}
	e.Object, err = withResourceVersion(e.Object, EncodeResourceVersion(current))
	return err
}

// rowObject is the object of a Table's row, nil if it has none.
func rowObject(row []byte) []byte {
	return fieldValue(row, "object")
}

// eventJSON is a watch event as API servers stream it: one JSON object a line.
func eventJSON(e event) []byte {
	out := append([]byte(`{"type":`), quote(e.Type)...)
	out = append(out, `,"object":`...)
	out = append(out, orNull(e.Object)...)
	return append(out, "}\n"...)
}

func clusterNames(placements []Placement) []string {
	out := make([]string, 0, len(placements))
	for _, p := range placements {
		out = append(out, p.Cluster)
	}
	return out
}

func joinSelectors(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// openWatch opens a member's watch stream, giving up when the member has not answered within
// the request timeout; the stream itself then runs as long as the caller's request.
func (s *Server) openWatch(ctx context.Context, req *request, cluster, path string, query url.Values) (*http.Response, *memberError) {
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(s.cfg.Timeout, cancel)
	resp, merr := s.open(ctx, req, cluster, http.MethodGet, path, query)
	if !timer.Stop() || merr != nil {
		cancel()
		if merr == nil {
			_ = resp.Body.Close()
			merr = &memberError{cluster: cluster, err: context.DeadlineExceeded}
		}
		return nil, merr
	}
	return resp, nil // ctx ends with the caller's request
}
