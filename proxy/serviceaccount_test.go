package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	searchv1alpha1 "github.com/karmadaflow/karmadaflow/api/search/v1alpha1"
)

func TestServiceAccountCallersInMembers(t *testing.T) {
	sa := Caller{Name: "system:serviceaccount:kube-system:foo", UID: "u1",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	person := Caller{Name: "alice", Groups: []string{"dev", "system:authenticated"}}

	assert.Equal(t, sa, sa.inMembers(ServiceAccountPassthrough), "passed through as it is")
	assert.Equal(t, sa, sa.inMembers(""), "passthrough is the default")
	assert.Equal(t, Caller{Name: "karmadaflow:serviceaccount:kube-system:foo", UID: "u1", Groups: []string{"system:authenticated"}},
		sa.inMembers(ServiceAccountMap), "a user of its own, without ServiceAccount groups")
	assert.Equal(t, "system:serviceaccount:kube-system:foo", sa.Name, "the caller itself is unchanged")
	assert.Equal(t, person, person.inMembers(ServiceAccountMap))

	forged := Caller{Name: "bob", Groups: []string{"system:serviceaccounts:kube-system"}}
	assert.Equal(t, Caller{Name: "bob", Groups: []string{}}, forged.inMembers(ServiceAccountMap), "a client certificate's ServiceAccount group")
}

// serviceAccountProxy serves the ServiceAccount caller in front of a recording control plane
// and one recording member serving pods, with policy; it returns the proxy's base URL.
func serviceAccountProxy(t *testing.T, policy ServiceAccountIdentity, caller Caller) (base string, cp, member *recorder) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		writeRaw(w, []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
	}
	cp, member = newRecorder(t, ok), newRecorder(t, ok)
	registry := searchv1alpha1.ResourceRegistry{Spec: searchv1alpha1.ResourceRegistrySpec{
		ResourceSelectors: []searchv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod"}},
	}}
	p := NewServer(Config{
		ControlPlane: &rest.Config{Host: cp.URL},
		Member:       func(context.Context, string) (*rest.Config, error) { return &rest.Config{Host: member.URL}, nil },
		State: func() ([]searchv1alpha1.ResourceRegistry, []Cluster) {
			return []searchv1alpha1.ResourceRegistry{registry}, []Cluster{{Name: "m1", Ready: true}}
		},
		Kind: func(gvr schema.GroupVersionResource) (string, error) {
			if gvr.Resource == "pods" {
				return "Pod", nil
			}
			return "", fmt.Errorf("no kind for %v", gvr)
		},
		Timeout:         10 * time.Second,
		ServiceAccounts: policy,
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.ServeAs(w, r, caller) }))
	t.Cleanup(srv.Close)
	return srv.URL + BasePath, cp, member
}

func getThrough(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

var deployer = Caller{Name: "system:serviceaccount:ci:deployer", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"}}

func TestServiceAccountCallersDeniedInMembers(t *testing.T) {
	base, cp, member := serviceAccountProxy(t, ServiceAccountDeny, deployer)
	code, body := getThrough(t, base+"/api/v1/pods")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "system:serviceaccount:ci:deployer is a ServiceAccount of the control plane")
	assert.Contains(t, body, "--proxy-service-account-identity=deny")
	assert.Empty(t, member.requests())

	code, _ = getThrough(t, base+"/apis/apps/v1/deployments")
	assert.Equal(t, http.StatusOK, code, "the control plane")
	require.Len(t, cp.requests(), 1)
	assert.Equal(t, deployer.Name, cp.requests()[0].Header.Get("Impersonate-User"))
}

func TestServiceAccountCallersMappedInMembers(t *testing.T) {
	base, cp, member := serviceAccountProxy(t, ServiceAccountMap, deployer)
	code, body := getThrough(t, base+"/api/v1/pods")
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, member.requests(), 1)
	seen := member.requests()[0].Header
	assert.Equal(t, "karmadaflow:serviceaccount:ci:deployer", seen.Get("Impersonate-User"))
	assert.Equal(t, []string{"system:authenticated"}, seen.Values("Impersonate-Group"))

	code, _ = getThrough(t, base+"/apis/apps/v1/deployments")
	assert.Equal(t, http.StatusOK, code)
	require.Len(t, cp.requests(), 1)
	assert.Equal(t, deployer.Name, cp.requests()[0].Header.Get("Impersonate-User"), "the control plane sees the ServiceAccount")
	assert.Len(t, cp.requests()[0].Header.Values("Impersonate-Group"), 3)
}
