package searchapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/karmadaflow/karmadaflow/proxy"
)

// TestStreamsIntoPodsAreAuthorizedAsCreate: behind the aggregator, a WebSocket exec (a GET the
// server authorized as get) is authorized again as create on proxying/proxy, and refused 403
// when that is not allowed; a POST (authorized as create) and a log are not asked again.
func TestStreamsIntoPodsAreAuthorizedAsCreate(t *testing.T) {
	var asked []authorizer.Attributes
	getOnly := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a)
		if a.GetVerb() == "get" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "only get is allowed", nil
	})
	reader := &user.DefaultInfo{Name: "reader"}
	serve := func(method, subresource, verb string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, proxy.BasePath+"/api/v1/namespaces/default/pods/web/"+subresource, nil)
		ctx := request.WithRequestInfo(r.Context(), &request.RequestInfo{Verb: verb})
		w := httptest.NewRecorder()
		if authorizeStream(ctx, getOnly, reader, w, r) {
			w.WriteHeader(http.StatusOK)
		}
		return w
	}

	w := serve(http.MethodGet, "exec", "get")
	assert.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	assert.Contains(t, w.Body.String(), `User \"reader\" cannot create resource \"proxying/proxy\" in API group \"search.karmada.io\"`)
	if assert.Len(t, asked, 1) {
		a := asked[0]
		assert.Equal(t, []string{"create", "proxying", "proxy", proxy.Name, "search.karmada.io", "reader"},
			[]string{a.GetVerb(), a.GetResource(), a.GetSubresource(), a.GetName(), a.GetAPIGroup(), a.GetUser().GetName()})
	}
	assert.Equal(t, http.StatusOK, serve(http.MethodPost, "exec", "create").Code, "authorized as create by the server")
	assert.Equal(t, http.StatusOK, serve(http.MethodGet, "log", "get").Code)
	assert.Len(t, asked, 1, "asked again for a request the server authorized as it is")
}
