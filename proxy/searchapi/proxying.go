package searchapi

import (
	"context"
	"net/http"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	"github.com/karmadaflow/karmadaflow/proxy"
)

// proxyingREST serves proxying/karmada/proxy/...: the global resource proxy, for a caller the
// API server has authenticated and authorized (verb on proxying/proxy, as Karmada's RBAC
// names it).
type proxyingREST struct {
	proxy *proxy.Server
	// ready is set once the proxy knows the ResourceRegistries and Clusters; before that it
	// answers 503 rather than route with an empty view.
	ready *atomic.Bool
	// authz is the server's authorizer, asked again for the streams into pods that the
	// server's own check authorized as get (authorizeStream).
	authz authorizer.Authorizer
}

var (
	_ rest.Connecter            = &proxyingREST{}
	_ rest.Scoper               = &proxyingREST{}
	_ rest.SingularNameProvider = &proxyingREST{}
)

func (p *proxyingREST) New() runtime.Object { return &ProxyOptions{} }

func (p *proxyingREST) Destroy() {}

func (p *proxyingREST) NamespaceScoped() bool { return false }

func (p *proxyingREST) GetSingularName() string { return "proxying" }

func (p *proxyingREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &ProxyOptions{}, true, "path"
}

func (p *proxyingREST) ConnectMethods() []string {
	return []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
}

// Connect serves one request through the proxy, as the user the request context carries.
// The proxy reads the path and query from the request itself.
func (p *proxyingREST) Connect(ctx context.Context, name string, _ runtime.Object, _ rest.Responder) (http.Handler, error) {
	if name != proxy.Name {
		return nil, apierrors.NewNotFound(searchv1alpha1.Resource("proxying"), name)
	}
	if !p.ready.Load() {
		return nil, apierrors.NewServiceUnavailable("the proxy has not read the ResourceRegistries and Clusters yet")
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("the request carries no user")
	}
	caller := proxy.Caller{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authorizeStream(ctx, p.authz, u, w, r) {
			p.proxy.ServeAs(w, r, caller)
		}
	}), nil
}
