package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

// AnnotationCachedFrom names the member cluster an object came from.
const AnnotationCachedFrom = "resource.karmada.io/cached-from-cluster"

// Config is what the proxy is built from.
type Config struct {
	// ControlPlane is the worker's identity in the Karmada control plane; the proxy
	// impersonates each caller with it.
	ControlPlane *rest.Config
	// Auth reviews tokens and access in the control plane.
	Auth kubernetes.Interface
	// Member returns the credentials of a member cluster (its impersonator).
	Member func(ctx context.Context, cluster string) (*rest.Config, error)
	// State returns the ResourceRegistries and Clusters as last seen.
	State func() ([]searchv1alpha1.ResourceRegistry, []Cluster)
	// Kind maps a resource to its kind, as the control plane's discovery tells.
	Kind func(schema.GroupVersionResource) (string, error)
	// Timeout bounds each request to a member, except watches.
	Timeout time.Duration
	Logger  *zap.Logger
}

// Server is the proxy's HTTP handler.
type Server struct {
	cfg        Config
	identities *identities
	transports *transports
	accessLog  *zap.Logger
}

// NewServer returns the proxy handler.
func NewServer(cfg Config) *Server {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Server{cfg: cfg, identities: newIdentities(cfg.Auth, 10*time.Second), transports: newTransports(), accessLog: cfg.Logger.Named("access")}
}

// request is one call through the proxy.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	target Target
	caller Caller
}

// ServeHTTP serves a request and writes its line in the access log: one line per request,
// naming the caller, the clusters reached, the status and the duration.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.logged(w, r, func(w http.ResponseWriter, a *access) {
		if s.admit(w, r, a) {
			s.route(w, r, a)
		}
	})
}

// ServeAs serves a request whose caller another server has already authenticated and
// authorized for the proxy (the search API, behind the aggregator), with its line in the
// access log.
func (s *Server) ServeAs(w http.ResponseWriter, r *http.Request, caller Caller) {
	s.logged(w, r, func(w http.ResponseWriter, a *access) {
		a.caller = caller
		s.route(w, r, a)
	})
}

// logged runs serve and writes the request's line in the access log.
func (s *Server) logged(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *access)) {
	start := time.Now()
	recorder := &responseRecorder{ResponseWriter: w}
	a := access{verb: verbOf(r.Method)}
	serve(recorder, &a)
	s.logAccess(r, a, recorder.status, time.Since(start))
}

// admit authenticates the caller into a and asks whether it may use the proxy with a's verb;
// when not, it has answered the request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, a *access) bool {
	caller, err := s.identities.authenticate(r.Context(), r)
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized: "+err.Error())
		return false
	}
	a.caller = caller
	allowed, err := s.identities.authorize(r.Context(), caller, a.verb)
	switch {
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "authorizing the request: "+err.Error())
		return false
	case !allowed:
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"user %q cannot %s resource \"proxying/proxy\" in API group \"search.karmada.io\"", caller.Name, a.verb))
		return false
	}
	return true
}

// route sends a.caller's request where its path leads, recording in a where it went.
func (s *Server) route(w http.ResponseWriter, r *http.Request, a *access) {
	target, err := ParsePath(r.URL.Path)
	if err != nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		return
	}
	req := &request{w: w, r: r, target: target, caller: a.caller}
	placements := s.placements(target)
	if len(placements) == 0 {
		a.clusters = []string{controlPlaneName}
		s.toControlPlane(req)
		return
	}
	for _, p := range placements {
		if !slices.Contains(a.clusters, p.Cluster) {
			a.clusters = append(a.clusters, p.Cluster)
		}
	}
	watch := target.Watch || isTrue(r.URL.Query().Get("watch"))
	switch {
	case r.Method == http.MethodGet && target.Subresource == "" && (watch || target.Name == ""):
		if watch {
			s.watch(req, placements)
		} else {
			s.list(req, placements)
		}
	case r.Method == http.MethodGet && target.Subresource == "":
		s.get(req, placements)
	case r.Method == http.MethodPost && target.Name == "":
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, fmt.Sprintf(
			"%s is served from member clusters: the proxy cannot tell which cluster to create in", target.Resource))
	default:
		s.toOwner(req, placements)
	}
}

func isTrue(s string) bool { return s == "true" || s == "1" }

// placements returns the clusters serving the target's resource in its namespace; none when
// the resource is not registered (or unknown to the control plane).
func (s *Server) placements(t Target) []Placement {
	if !t.IsResource {
		return nil
	}
	kind, err := s.cfg.Kind(schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource})
	if err != nil {
		return nil
	}
	registries, clusters := s.cfg.State()
	var out []Placement
	for _, p := range Placements(registries, clusters, t.GroupVersion(), kind) {
		if p.serves(t.Namespace) {
			out = append(out, p)
		}
	}
	return out
}

// toControlPlane passes the request to the Karmada control plane, as the caller.
func (s *Server) toControlPlane(req *request) {
	s.pass(req, s.cfg.ControlPlane, "the control plane")
}

// pass forwards the request unchanged but for its credentials to cfg's server, as the caller.
func (s *Server) pass(req *request, cfg *rest.Config, name string) {
	if httpstream.IsUpgradeRequest(req.r) {
		s.upgrade(req, cfg, name)
		return
	}
	rt, err := s.transports.forCaller(cfg, req.caller)
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	base, err := url.Parse(cfg.Host)
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = base.Scheme, base.Host
			pr.Out.URL.Path = strings.TrimSuffix(base.Path, "/") + req.target.Path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = base.Host
			stripCredentials(pr.Out.Header)
		},
		Transport:     rt,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			unreachable(name).Error(w, r, err)
		},
	}
	proxy.ServeHTTP(req.w, req.r)
}

// stripCredentials removes what the caller sent to identify itself: the proxy's own
// transport authenticates and impersonates.
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			h.Del(k)
		}
	}
}
