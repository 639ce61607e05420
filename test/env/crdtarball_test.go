package env

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func download(t *testing.T, s *crdTarballServer, version string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(strings.Replace(s.url, "{{.Version}}", version, 1))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func entries(t *testing.T, tarball []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tarball))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		require.NoError(t, err)
		names = append(names, h.Name)
	}
}

// TestCRDTarballServer serves a directory's crds-*.tar.gz, or a checkout's
// charts/karmada/crds packed as the release packs it, on loopback for every version.
func TestCRDTarballServer(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crds-abc1234.tar.gz"), []byte("the tarball"), 0o644))
	t.Setenv(KarmadaSourceEnv, dir)
	s, err := startCRDTarballServer(t.Logf)
	require.NoError(t, err)
	defer s.close()
	assert.True(t, strings.HasPrefix(s.url, "http://127.0.0.1:"), s.url)
	assert.True(t, strings.HasSuffix(s.url, "/releases/download/{{.Version}}/crds.tar.gz"), s.url)
	status, body := download(t, s, "v1.19.0")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "the tarball", string(body))

	checkout := t.TempDir()
	crds := filepath.Join(checkout, "charts", "karmada", "_crds")
	require.NoError(t, os.MkdirAll(filepath.Join(crds, "bases", "work"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(crds, "patches"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(crds, "bases", "work", "works.yaml"), []byte("kind: CustomResourceDefinition"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(crds, "patches", "webhook_in_x.yaml"), []byte("spec: {}"), 0o644))
	t.Setenv(KarmadaSourceEnv, checkout)
	packed, err := startCRDTarballServer(t.Logf)
	require.NoError(t, err)
	defer packed.close()
	status, body = download(t, packed, "v1.14.0")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, []string{"crds/", "crds/bases/", "crds/bases/work/", "crds/bases/work/works.yaml", "crds/patches/", "crds/patches/webhook_in_x.yaml"},
		entries(t, body))

	t.Setenv(KarmadaSourceEnv, t.TempDir())
	none, err := startCRDTarballServer(t.Logf)
	require.NoError(t, err)
	defer none.close()
	status, body = download(t, none, "v1.14.0")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), "holds neither crds-*.tar.gz nor a Karmada chart's CRDs")
}
