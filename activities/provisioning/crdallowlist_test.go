package provisioning

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/kube"
)

func TestDefaultAllowedURLPrefixes(t *testing.T) {
	release := "https://github.com/karmada-io/karmada/releases/download/"
	github := []string{release, githubReleaseAssets, githubReleaseAssetsSince25}
	for mirror, want := range map[string][]string{
		"":                   github,
		DefaultCRDTarballURL: github,
		"https://mirror.local/karmada/{{.Version}}/crds.tar.gz":            append(github, "https://mirror.local/karmada/"),
		"http://127.0.0.1:8080/releases/download/{{.Version}}/crds.tar.gz": append(github, "http://127.0.0.1:8080/releases/download/"),
		"https://mirror.local/crds-{{.Version}}.tar.gz":                    append(github, "https://mirror.local/"),
		"https://mirror.local/crds.tar.gz?v={{.Version}}&sig=x":            append(github, "https://mirror.local/"),
		"https://user:pass@mirror.local/a/{{.Version}}/crds.tar.gz":        append(github, "https://mirror.local/a/"),
		"https://mirror.local/v1.19.0/crds.tar.gz":                         append(github, "https://mirror.local/v1.19.0/"),
		"https://{{.Version}}.mirror.local/crds.tar.gz":                    github, // no host before the version
	} {
		assert.Equal(t, want, DefaultAllowedURLPrefixes(mirror), mirror)
	}
}

func withTarball(url, proxy string) func(*operatorv1alpha1.Karmada) {
	return func(k *operatorv1alpha1.Karmada) {
		k.Spec.CRDTarball = &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{URL: url}}
		if proxy != "" {
			k.Spec.CRDTarball.HTTPSource.Proxy = &operatorv1alpha1.ProxyConfig{ProxyURL: proxy}
		}
	}
}

// TestCheckSpec: by default a Karmada may name the release downloads and the directory of
// the worker's mirror, and no proxy; what the lists leave out is refused naming the field,
// the URL without its secrets and the flag.
func TestCheckSpec(t *testing.T) {
	mirror := &CRDSource{URL: "http://127.0.0.1:8080/releases/download/{{.Version}}/crds.tar.gz"}
	for _, allowed := range []string{
		"https://github.com/karmada-io/karmada/releases/download/v1.19.0/crds.tar.gz",
		"http://127.0.0.1:8080/releases/download/v1.19.0/crds.tar.gz",
		"::not a URL", // Validate's to report
	} {
		assert.Empty(t, mirror.CheckSpec(karmada("x", withTarball(allowed, ""))), allowed)
	}
	assert.Empty(t, mirror.CheckSpec(karmada("x")), "no spec.crdTarball")

	for _, c := range []struct {
		src      *CRDSource
		url      string
		proxy    string
		problems []string
	}{
		{mirror, "http://169.254.169.254/latest/meta-data/", "", []string{"spec.crdTarball.httpSource.url: http://169.254.169.254/latest/meta-data/ is not allowed (the worker's --crd-tarball-allowed-url-prefixes: https://github.com/karmada-io/karmada/releases/download/, "}},
		{mirror, "http://127.0.0.1:8080/other/crds.tar.gz?sig=s3cret", "", []string{"spec.crdTarball.httpSource.url: http://127.0.0.1:8080/other/crds.tar.gz?xxxxx is not allowed"}},
		{mirror, "https://github.com/karmada-io/karmada/releases/download/../../../x/crds.tar.gz", "", []string{`spec.crdTarball.httpSource.url: https://github.com/karmada-io/karmada/releases/download/../../../x/crds.tar.gz has a ".." segment`}},
		{mirror, "https://github.com/karmada-io/karmada/releases/download/v1/crds.tar.gz", "http://user:p4ss@127.0.0.1:3128", []string{
			"spec.crdTarball.httpSource.proxy.proxyURL: http://user:xxxxx@127.0.0.1:3128 is not allowed (the worker's --crd-tarball-allowed-proxy-urls: none)"}},
		{&CRDSource{AllowedURLPrefixes: []string{}}, "https://github.com/karmada-io/karmada/releases/download/v1/crds.tar.gz", "",
			[]string{"spec.crdTarball.httpSource.url: https://github.com/karmada-io/karmada/releases/download/v1/crds.tar.gz is not allowed (the worker's --crd-tarball-allowed-url-prefixes: none)"}},
		{&CRDSource{AllowedURLPrefixes: []string{"http://mirror.local/crds/"}, AllowedProxyURLs: []string{"http://proxy.local:3128"}},
			"http://mirror.local/crds/v1/crds.tar.gz", "http://proxy.local:3128", nil},
		{&CRDSource{AllowedURLPrefixes: []string{"http://mirror.local/crds/"}, AllowedProxyURLs: []string{"http://proxy.local:3128"}},
			"http://mirror.local/crds-old/crds.tar.gz", "http://proxy.local:3129", []string{
				"spec.crdTarball.httpSource.url: http://mirror.local/crds-old/crds.tar.gz is not allowed (the worker's --crd-tarball-allowed-url-prefixes: http://mirror.local/crds/)",
				"spec.crdTarball.httpSource.proxy.proxyURL: http://proxy.local:3129 is not allowed (the worker's --crd-tarball-allowed-proxy-urls: http://proxy.local:3128)"}},
	} {
		got := c.src.CheckSpec(karmada("x", withTarball(c.url, c.proxy)))
		require.Len(t, got, len(c.problems), "%s: %q", c.url, got)
		for i := range got {
			assert.True(t, strings.HasPrefix(got[i], c.problems[i]), "got  %q\nwant %q...", got[i], c.problems[i])
			assert.NotContains(t, got[i], "s3cret")
			assert.NotContains(t, got[i], "p4ss")
		}
	}
}

// TestValidateKarmadaRefusesURLsOutsideTheAllowlist: ValidateKarmada checks spec.crdTarball
// against the worker's lists, a ValidationError naming the field.
func TestValidateKarmadaRefusesURLsOutsideTheAllowlist(t *testing.T) {
	k := karmada("x", withTarball("http://10.0.0.1/crds.tar.gz", ""))
	k.APIVersion, k.Kind = "operator.karmada.io/v1alpha1", "Karmada"
	u, err := kube.ToUnstructured(k)
	require.NoError(t, err)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kube.Karmadas: "KarmadaList"}, u)
	a := &Activities{Host: fake.NewClientset(), HostDynamic: client}

	sum, err := a.ValidateKarmada(context.Background(), Ref{Namespace: "tenant1", Name: "x"})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrValidation, appErr.Type())
	require.Len(t, sum.Invalid, 1)
	assert.True(t, strings.HasPrefix(sum.Invalid[0], "spec.crdTarball.httpSource.url: http://10.0.0.1/crds.tar.gz is not allowed"), sum.Invalid[0])

	a.CRDSource.AllowedURLPrefixes = []string{"http://10.0.0.1/"}
	sum, err = a.ValidateKarmada(context.Background(), Ref{Namespace: "tenant1", Name: "x"})
	require.NoError(t, err)
	assert.Empty(t, sum.Invalid)
}

// countingServer answers every request with handler and counts the requests.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &requests
}

// TestTarballStaysInTheAllowlist: a spec.crdTarball outside the list is refused before any
// connection; a redirect out of it is not followed, and the error names where it led without
// its signature; a redirect within it is.
func TestTarballStaysInTheAllowlist(t *testing.T) {
	data := tarball(t, map[string]string{"crds/bases/policy.yaml": crdYAML})
	outside, outsideRequests := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) })
	inside, insideRequests := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/crds/away.tar.gz":
			http.Redirect(w, r, outside.URL+"/crds.tar.gz?X-Amz-Signature=s3cret", http.StatusFound)
		case "/crds/moved.tar.gz":
			http.Redirect(w, r, "/crds/crds.tar.gz", http.StatusFound)
		case "/crds/out.tar.gz":
			http.Redirect(w, r, "/other/crds.tar.gz", http.StatusFound)
		default:
			_, _ = w.Write(data)
		}
	})
	src := &CRDSource{AllowedURLPrefixes: []string{inside.URL + "/crds/"}}
	ctx, host := context.Background(), fake.NewClientset()

	_, err := src.Tarball(ctx, host, karmada("x", withTarball(outside.URL+"/crds.tar.gz", "")))
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	assert.Equal(t, ErrValidation, appErr.Type())
	assert.Contains(t, err.Error(), "spec.crdTarball.httpSource.url: "+outside.URL+"/crds.tar.gz is not allowed")

	_, err = src.Tarball(ctx, host, karmada("x", withTarball(inside.URL+"/crds/away.tar.gz", "")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redirected to "+outside.URL+"/crds.tar.gz?xxxxx, which is not allowed")
	assert.NotContains(t, err.Error(), "s3cret")
	_, err = src.Tarball(ctx, host, karmada("x", withTarball(inside.URL+"/crds/out.tar.gz", "")))
	assert.ErrorContains(t, err, "redirected to "+inside.URL+"/other/crds.tar.gz, which is not allowed")
	assert.Zero(t, outsideRequests.Load(), "the server outside the list heard nothing")

	got, err := src.Tarball(ctx, host, karmada("x", withTarball(inside.URL+"/crds/moved.tar.gz", "")))
	require.NoError(t, err)
	assert.Len(t, got.Bases, 1)
	assert.Equal(t, int32(4), insideRequests.Load())

	// The worker's own URL is the operator's: its redirects are followed wherever they lead.
	got, err = (&CRDSource{URL: inside.URL + "/crds/away.tar.gz", AllowedURLPrefixes: []string{}}).Tarball(ctx, host, karmada("x"))
	require.NoError(t, err)
	assert.Len(t, got.Bases, 1)
	assert.Equal(t, int32(1), outsideRequests.Load())
}
