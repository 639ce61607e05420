package provisioning

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// tarballServer serves a CRD tarball at every path and records the requests.
type tarballServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func serveTarball(t *testing.T, data []byte, tlsServer bool) *tarballServer {
	s := &tarballServer{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r)
		s.mu.Unlock()
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	})
	s.Server = httptest.NewUnstartedServer(handler)
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	if tlsServer {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *tarballServer) authorization(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i].Header.Get("Authorization")
}

func (s *tarballServer) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		out = append(out, r.URL.Path)
	}
	return out
}

func TestDownloadCRDTarball(t *testing.T) {
	server := serveTarball(t, tarball(t, map[string]string{"crds/bases/policy.yaml": crdYAML}), false)
	got, err := DownloadCRDTarball(context.Background(), operatorv1alpha1.HTTPSource{URL: server.URL + "/crds.tar.gz"}, DownloadAuth{})
	require.NoError(t, err)
	assert.Len(t, got.Bases, 1)
	assert.Empty(t, server.authorization(0))
	_, err = DownloadCRDTarball(context.Background(), operatorv1alpha1.HTTPSource{URL: server.URL + "/missing"}, DownloadAuth{})
	assert.ErrorContains(t, err, "404")
}

// TestDownloadErrorsHideTheURLsSecrets: a presigned URL's query and a URL's password never
// appear in a download's error (which becomes the Karmada's condition and the workflow's
// history), whether the server answers 404, the connection fails or the tarball is refused.
func TestDownloadErrorsHideTheURLsSecrets(t *testing.T) {
	server := serveTarball(t, []byte("not gzip"), false)
	for _, raw := range []string{
		"http://user:s3cret@" + server.Listener.Addr().String() + "/missing?X-Amz-Signature=t0ken",
		"http://user:s3cret@" + server.Listener.Addr().String() + "/crds.tar.gz?X-Amz-Signature=t0ken",
		"http://user:s3cret@127.0.0.1:1/crds.tar.gz?X-Amz-Signature=t0ken", // nothing listens
	} {
		_, err := DownloadCRDTarball(context.Background(), operatorv1alpha1.HTTPSource{URL: raw,
			Proxy: &operatorv1alpha1.ProxyConfig{ProxyURL: "::proxy p4ss"}}, DownloadAuth{})
		require.Error(t, err, raw)
		for _, secret := range []string{"s3cret", "t0ken", "p4ss"} {
			assert.NotContains(t, err.Error(), secret, raw)
		}
		_, err = DownloadCRDTarball(context.Background(), operatorv1alpha1.HTTPSource{URL: raw}, DownloadAuth{})
		require.Error(t, err, raw)
		t.Log(err)
		for _, secret := range []string{"s3cret", "t0ken"} {
			assert.NotContains(t, err.Error(), secret, raw)
		}
		assert.Contains(t, err.Error(), "user:xxxxx@")
	}
}

// TestCRDSourceDefault: without spec.crdTarball the worker's URL is used for the instance's
// Karmada version, with the worker's CA and token; the tarball is downloaded once.
func TestCRDSourceDefault(t *testing.T) {
	server := serveTarball(t, tarball(t, map[string]string{"crds/bases/policy.yaml": crdYAML}), true)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o600))
	host := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "karmadaflow-system", Name: "crd-token"},
		Data: map[string][]byte{"token": []byte("s3cret\n")}})
	src := &CRDSource{URL: server.URL + "/download/{{.Version}}/crds.tar.gz", CAFile: caFile, TokenSecret: "karmadaflow-system/crd-token"}

	k := karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaControllerManager = &operatorv1alpha1.KarmadaControllerManager{}
		k.Spec.Components.KarmadaControllerManager.ImageTag = "v1.19.0"
	})
	for range 2 {
		got, err := src.Tarball(context.Background(), host, k)
		require.NoError(t, err)
		assert.Len(t, got.Bases, 1)
	}
	assert.Equal(t, []string{"/download/v1.19.0/crds.tar.gz"}, server.paths(), "downloaded once (IfNotPresent)")
	assert.Equal(t, "Bearer s3cret", server.authorization(0))

	// Without the CA the server is not trusted.
	_, err := (&CRDSource{URL: src.URL}).Tarball(context.Background(), host, k)
	assert.ErrorContains(t, err, "certificate")
	// A missing token Secret fails the download rather than going without it.
	_, err = (&CRDSource{URL: src.URL, CAFile: caFile, TokenSecret: "karmadaflow-system/nope"}).Tarball(context.Background(), host, k)
	assert.ErrorContains(t, err, "not found")
}

func TestCRDSourceDefaultURL(t *testing.T) {
	u, err := (&CRDSource{}).urlFor(karmada("foo"))
	require.NoError(t, err)
	assert.Equal(t, "https://github.com/karmada-io/karmada/releases/download/"+DefaultKarmadaVersion+"/crds.tar.gz", u)
	u, err = (&CRDSource{URL: "http://127.0.0.1:8080/{{.Version}}/crds.tar.gz"}).urlFor(karmada("foo", func(k *operatorv1alpha1.Karmada) {
		k.Spec.Components.KarmadaControllerManager = &operatorv1alpha1.KarmadaControllerManager{}
		k.Spec.Components.KarmadaControllerManager.ImageRepository = "registry.local:5000/karmada-controller-manager"
		k.Spec.Components.KarmadaControllerManager.ImageTag = "v1.2.3"
	}))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080/v1.2.3/crds.tar.gz", u, "the version is the image tag of karmada-controller-manager")
}

// TestCRDSourceSpec: spec.crdTarball's URL gets neither the worker's CA nor its token;
// Always downloads again; the cache keeps the last crdCacheSize URLs.
func TestCRDSourceSpec(t *testing.T) {
	server := serveTarball(t, tarball(t, map[string]string{"crds/bases/policy.yaml": crdYAML}), false)
	host := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "token"}, Data: map[string][]byte{"token": []byte("s3cret")}})
	src := &CRDSource{URL: "https://203.0.113.1/never/{{.Version}}", TokenSecret: "ns/token", AllowedURLPrefixes: []string{server.URL}}
	withURL := func(path string, policy operatorv1alpha1.CRDDownloadPolicy) *operatorv1alpha1.Karmada {
		return karmada("foo", func(k *operatorv1alpha1.Karmada) {
			k.Spec.CRDTarball = &operatorv1alpha1.CRDTarball{HTTPSource: &operatorv1alpha1.HTTPSource{URL: server.URL + path}, CRDDownloadPolicy: ptr.To(policy)}
		})
	}
	ctx := context.Background()
	for _, path := range []string{"/a", "/a", "/b", "/c", "/d", "/e", "/a"} {
		_, err := src.Tarball(ctx, host, withURL(path, operatorv1alpha1.DownloadIfNotPresent))
		require.NoError(t, err)
	}
	_, err := src.Tarball(ctx, host, withURL("/e", operatorv1alpha1.DownloadAlways))
	require.NoError(t, err)
	// /a was evicted by /b../e and downloaded again; /e again because of Always.
	assert.Equal(t, []string{"/a", "/b", "/c", "/d", "/e", "/a", "/e"}, server.paths())
	for i := range server.paths() {
		assert.Empty(t, server.authorization(i))
	}
}
