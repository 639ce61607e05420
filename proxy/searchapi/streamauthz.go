package searchapi

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
	"github.com/karmadaflow/karmadaflow/proxy"
)

// authorizeStream checks what the server's authorization filter cannot: a GET through the
// proxy to a pod's exec, attach or port-forward (a WebSocket upgrade) was authorized as get on
// proxying/proxy, and is a create (proxy.RequestVerb), as kube-apiserver authorizes it. It asks
// the server's authorizer for create as well, and answers 403 when it is not allowed.
func authorizeStream(ctx context.Context, authz authorizer.Authorizer, u user.Info, w http.ResponseWriter, r *http.Request) bool {
	verb := proxy.RequestVerb(r)
	if verb != "create" {
		return true // the server's own check was of the request's method
	}
	if info, ok := request.RequestInfoFrom(ctx); ok && info.Verb == verb {
		return true // a POST: authorized as create already
	}
	decision, reason, err := authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: verb, ResourceRequest: true,
		APIGroup: searchv1alpha1.GroupName, APIVersion: searchv1alpha1.GroupVersion.Version,
		Resource: "proxying", Subresource: "proxy", Name: proxy.Name,
	})
	if decision == authorizer.DecisionAllow {
		return true
	}
	forbidden := fmt.Errorf("User %q cannot %s resource \"proxying/proxy\" in API group %q: exec, attach and port-forward are authorized as %s, over WebSocket too",
		u.GetName(), verb, searchv1alpha1.GroupName, verb)
	if reason != "" {
		forbidden = fmt.Errorf("%w (%s)", forbidden, reason)
	}
	if err != nil {
		forbidden = fmt.Errorf("%w (%v)", forbidden, err)
	}
	responsewriters.ErrorNegotiated(apierrors.NewForbidden(searchv1alpha1.Resource("proxying/proxy"), proxy.Name, forbidden),
		Codecs, searchv1alpha1.GroupVersion, w, r)
	return false
}
