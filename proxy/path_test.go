package proxy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePath(t *testing.T) {
	for path, want := range map[string]Target{
		"":                                 {Path: "/"},
		"/":                                {Path: "/"},
		"/api":                             {Path: "/api"},
		"/api/v1":                          {Path: "/api/v1"},
		"/apis/apps/v1":                    {Path: "/apis/apps/v1"},
		"/version":                         {Path: "/version"},
		"/openapi/v3/api/v1":               {Path: "/openapi/v3/api/v1"},
		"/api/v1/pods":                     {Path: "/api/v1/pods", IsResource: true, Version: "v1", Resource: "pods"},
		"/api/v1/namespaces/ns/pods":       {Path: "/api/v1/namespaces/ns/pods", IsResource: true, Version: "v1", Namespace: "ns", Resource: "pods"},
		"/api/v1/namespaces/ns/pods/p/log": {Path: "/api/v1/namespaces/ns/pods/p/log", IsResource: true, Version: "v1", Namespace: "ns", Resource: "pods", Name: "p", Subresource: "log"},
		"/api/v1/namespaces/ns":            {Path: "/api/v1/namespaces/ns", IsResource: true, Version: "v1", Resource: "namespaces", Name: "ns"},
		"/api/v1/namespaces/ns/status":     {Path: "/api/v1/namespaces/ns/status", IsResource: true, Version: "v1", Resource: "namespaces", Name: "ns", Subresource: "status"},
		"/api/v1/namespaces":               {Path: "/api/v1/namespaces", IsResource: true, Version: "v1", Resource: "namespaces"},
		"/apis/apps/v1/namespaces/ns/deployments": {Path: "/apis/apps/v1/namespaces/ns/deployments", IsResource: true, Group: "apps", Version: "v1", Namespace: "ns", Resource: "deployments"},
		"/api/v1/watch/namespaces/ns/pods":        {Path: "/api/v1/watch/namespaces/ns/pods", IsResource: true, Watch: true, Version: "v1", Namespace: "ns", Resource: "pods"},
		"/api/v1/nodes/n1/":                       {Path: "/api/v1/nodes/n1/", IsResource: true, Version: "v1", Resource: "nodes", Name: "n1"},
	} {
		t.Run(path, func(t *testing.T) {
			got, err := ParsePath(BasePath + path)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestParsePathRefuses(t *testing.T) {
	for _, path := range []string{
		"/apis/search.karmada.io/v1alpha1/proxying/karmada",
		"/apis/search.karmada.io/v1alpha1/proxying/karmada/other/api/v1/pods",
		"/apis/search.karmada.io/v1alpha1/proxying/karmada/proxyx/api",
		BasePath + "/api/v1//pods",
		BasePath + "/api/v1/namespaces/../pods",
		BasePath + "/api/v1/watch",
		"/api/v1/pods",
	} {
		_, err := ParsePath(path)
		assert.Error(t, err, path)
	}
}

func TestObjectPathKeepsSubresourcePath(t *testing.T) {
	got, err := ParsePath(BasePath + "/api/v1/namespaces/ns/pods/p/proxy/a/b")
	require.NoError(t, err)
	assert.Equal(t, "/api/v1/namespaces/ns/pods/p/proxy/a/b", got.ObjectPath())
	assert.Equal(t, "/api/v1/namespaces/ns/pods", got.CollectionPath("ns"))
}

func FuzzParsePath(f *testing.F) {
	for _, seed := range []string{"/api/v1/pods", "/apis/apps/v1/namespaces/x/deployments/y/scale", "/api/v1/watch/pods", "//", "/api/v1/namespaces/a/status"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		got, err := ParsePath(BasePath + rest)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got.Path, "/") {
			t.Fatalf("path %q parsed to %q, which does not start with /", rest, got.Path)
		}
		if got.IsResource {
			if got.Resource == "" || got.Version == "" {
				t.Fatalf("resource path %q without resource or version: %+v", rest, got)
			}
			for _, s := range []string{got.Namespace, got.Resource, got.Name, got.Subresource} {
				if s == "." || s == ".." || strings.Contains(s, "/") {
					t.Fatalf("path %q gave segment %q", rest, s)
				}
			}
			_ = got.ObjectPath()
		}
	})
}
