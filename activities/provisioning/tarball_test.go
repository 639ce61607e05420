package provisioning

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

const crdYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: propagationpolicies.policy.karmada.io
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd
`

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func TestReadCRDTarball(t *testing.T) {
	crds, err := ReadCRDTarball(bytes.NewReader(tarball(t, map[string]string{
		"crds/bases/policy.yaml":     crdYAML,
		"crds/patches/webhook.yaml":  "ignored: true",
		"./crds/bases/README.md":     "not yaml",
		"crds/bases/nested/x.yaml":   crdYAML,
		"crds/kustomization.yaml":    "resources: []",
		"crds/bases/empty-file.yaml": "",
	})))
	require.NoError(t, err)
	require.Len(t, crds, 2)
	assert.Equal(t, "propagationpolicies.policy.karmada.io", crds[0].GetName())

	_, err = ReadCRDTarball(bytes.NewReader(tarball(t, map[string]string{"crds/bases/a.yaml": crdYAML, "../etc/passwd": "x"})))
	assert.ErrorContains(t, err, "outside crds/")
	_, err = ReadCRDTarball(bytes.NewReader(tarball(t, map[string]string{"crds/patches/a.yaml": crdYAML})))
	assert.ErrorContains(t, err, "no CRDs under crds/bases/")
	_, err = ReadCRDTarball(bytes.NewReader([]byte("not gzip")))
	assert.Error(t, err)
}

func TestDownloadCRDs(t *testing.T) {
	data := tarball(t, map[string]string{"crds/bases/policy.yaml": crdYAML})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/crds.tar.gz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	defer server.Close()
	crds, err := DownloadCRDs(context.Background(), operatorv1alpha1.HTTPSource{URL: server.URL + "/crds.tar.gz"})
	require.NoError(t, err)
	assert.Len(t, crds, 1)
	_, err = DownloadCRDs(context.Background(), operatorv1alpha1.HTTPSource{URL: server.URL + "/missing"})
	assert.ErrorContains(t, err, "404")
}
