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
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
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
	// Auth reviews tokens and access in the control plane: best a client of its own, with its
	// own rate limiter, so that a flood of reviews queues no other client's requests.
	Auth kubernetes.Interface
	// Reviews bound the reviews Auth is asked for: how long answers are remembered, and how
	// many may be in flight.
	Reviews ReviewOptions
	// Member returns the credentials of a member cluster (its impersonator).
	Member func(ctx context.Context, cluster string) (*rest.Config, error)
	// State returns the ResourceRegistries and Clusters as last seen.
	State func() ([]searchv1alpha1.ResourceRegistry, []Cluster)
	// Kind maps a resource to its kind, as the control plane's discovery tells.
	Kind func(schema.GroupVersionResource) (string, error)
	// Timeout bounds each request to a member, except watches.
	Timeout time.Duration
	// Limits bound request bodies, member answers held in memory and requests in flight.
	Limits Limits
	// ServiceAccounts is who a ServiceAccount caller is in members (empty: passthrough).
	ServiceAccounts ServiceAccountIdentity
	Logger          *zap.Logger
}

// Server is the proxy's HTTP handler.
type Server struct {
	cfg        Config
	identities *identities
	transports *transports
	accessLog  *zap.Logger
	// limits are cfg.Limits with defaults; inFlight and longRunning are the slots of requests
	// served at once, budget the bytes held at once.
	limits      Limits
	inFlight    slots
	longRunning slots
	budget      *budget
	// callerSlots and callerRequests bound each caller's long-running and other requests,
	// callerBytes the bytes its requests hold (callerlimits.go); membership tells watches when
	// their clusters change (watch.go).
	callerSlots    callerSlots
	callerRequests callerSlots
	callerBytes    callerBudgets
	membership     membership
}

// NewServer returns the proxy handler.
func NewServer(cfg Config) *Server {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	limits := cfg.Limits.withDefaults()
	return &Server{cfg: cfg, identities: newIdentities(cfg.Auth, cfg.Reviews), transports: newTransports(), accessLog: cfg.Logger.Named("access"),
		limits: limits, inFlight: make(slots, limits.MaxRequestsInFlight), longRunning: make(slots, limits.MaxLongRunningRequestsInFlight),
		budget: &budget{max: limits.MaxBufferedBytes}}
}

// request is one call through the proxy.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	target Target
	caller Caller
	member Caller // who the caller is in member clusters (Config.ServiceAccounts)
	hold   *hold  // what the request holds of the proxy's buffer budget
}

// ServeHTTP serves a request and writes its line in the access log: one line per request,
// naming the caller, the clusters reached, the status and the duration. The limits apply
// before the caller is authenticated: a flood costs no review beyond them.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.logged(w, r, func(w http.ResponseWriter, a *access) {
		s.limited(w, r, func(r *http.Request, h *hold) {
			if s.admit(w, r, a) {
				s.route(w, r, a, h)
			}
		})
	})
}

// ServeAs serves a request whose caller another server has already authenticated and
// authorized for the proxy (the search API, behind the aggregator), with its line in the
// access log.
func (s *Server) ServeAs(w http.ResponseWriter, r *http.Request, caller Caller) {
	s.logged(w, r, func(w http.ResponseWriter, a *access) {
		a.caller = caller
		s.limited(w, r, func(r *http.Request, h *hold) { s.route(w, r, a, h) })
	})
}

// logged runs serve and writes the request's line in the access log.
func (s *Server) logged(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *access)) {
	start := time.Now()
	recorder := newResponseRecorder(w, r)
	a := access{verb: RequestVerb(r)}
	serve(recorder, &a)
	s.logAccess(r, a, recorder.status, time.Since(start))
}

// admit authenticates the caller into a and asks whether it may use the proxy with a's verb;
// when not, it has answered the request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, a *access) bool {
	caller, err := s.identities.authenticate(r.Context(), r)
	if errors.Is(err, errTooManyReviews) || errors.Is(err, errTooManyFromSource) {
		writeTooManyReviews(w, err)
		return false
	}
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized: "+err.Error())
		return false
	}
	a.caller = caller
	allowed, err := s.identities.authorize(r.Context(), caller, a.verb)
	switch {
	case errors.Is(err, errTooManyReviews):
		writeTooManyReviews(w, err)
		return false
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
func (s *Server) route(w http.ResponseWriter, r *http.Request, a *access, h *hold) {
	release, ok := s.takeCallerShare(w, h, a.caller)
	if !ok {
		return
	}
	defer release()
	target, err := ParsePath(r.URL.EscapedPath())
	if err != nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		return
	}
	req := &request{w: w, r: r, target: target, caller: a.caller, member: a.caller.inMembers(s.cfg.ServiceAccounts), hold: h}
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
	// A ServiceAccount reaches its own control plane as itself; members are where its name
	// would mean another.
	if s.cfg.ServiceAccounts == ServiceAccountDeny && a.caller.isServiceAccount() {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"%s is a ServiceAccount of the control plane, and this proxy takes no ServiceAccount into member clusters (--proxy-service-account-identity=deny)", a.caller.Name))
		return
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
	s.pass(req, s.cfg.ControlPlane, "the control plane", req.caller)
}

// pass forwards the request unchanged but for its credentials to cfg's server, as the caller
// is known there (as).
func (s *Server) pass(req *request, cfg *rest.Config, name string, as Caller) {
	if httpstream.IsUpgradeRequest(req.r) {
		s.upgrade(req, cfg, name, as)
		return
	}
	rt, err := s.transports.forCaller(cfg, as)
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	base, err := url.Parse(cfg.Host)
	if err == nil {
		// The target's path as the caller escaped it: "a%2Fb" stays one segment.
		err = setEscapedPath(base, strings.TrimSuffix(base.EscapedPath(), "/")+req.target.Path)
	}
	if err != nil {
		writeStatus(req.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = base.Scheme, base.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = base.Path, base.RawPath
			pr.Out.Host = base.Host
			stripCredentials(pr.Out.Header)
		},
		Transport:     rt,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if tooLarge, ok := asBodyTooLarge(err); ok {
				tooLarge.write(w) // the caller's body went past the limit while it was passed on
				return
			}
			if req.hold.bodyTimedOut.Load() {
				bodyTimeout(s.limits.RequestBodyTimeout).write(w) // the caller's body did not arrive in time
				return
			}
			if errors.Is(err, context.Canceled) {
				return
			}
			unreachable(name).Error(w, r, err)
		},
	}
	proxy.ServeHTTP(req.w, req.r)
}

// Identity headers: the front-proxy headers of kube-apiserver's default
// --requestheader-*-headers (which the aggregator sends and an API server behind it believes)
// and client-go's impersonation headers.
var (
	remoteUserHeaders         = headerrequest.StaticStringSlice{"X-Remote-User"}
	remoteUIDHeaders          = headerrequest.StaticStringSlice{"X-Remote-Uid"}
	remoteGroupHeaders        = headerrequest.StaticStringSlice{"X-Remote-Group"}
	remoteExtraHeaderPrefixes = headerrequest.StaticStringSlice{"X-Remote-Extra-"}
	// Any other Impersonate-* header (Impersonate-Extra-*, and whatever a later client-go
	// adds) goes too.
	impersonationHeaders = []string{authenticationv1.ImpersonateUserHeader, authenticationv1.ImpersonateUIDHeader,
		authenticationv1.ImpersonateGroupHeader}
)

// stripCredentials removes what the caller sent to identify itself, or to be taken for
// another: its credentials, the front-proxy headers (X-Remote-User, X-Remote-Group,
// X-Remote-Extra-*, ...) and the impersonation headers it set itself. The proxy's own
// transport authenticates and impersonates the caller.
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	headerrequest.ClearAuthenticationHeaders(h, remoteUserHeaders, remoteUIDHeaders, remoteGroupHeaders, remoteExtraHeaderPrefixes)
	for _, k := range impersonationHeaders {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Impersonate-") {
			h.Del(k)
		}
	}
}
