// Package images checks the worker and starter images that `make images` builds into .images/
// (hack/images.sh): each is opened as a tarball, its configuration and files are checked, and
// the binary taken from its layer runs with --version. `make images-test` builds them first.
package images

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	nonrootUser = "65532:65532"
	caBundle    = "etc/ssl/certs/ca-certificates.crt"
	passwd      = "etc/passwd"
)

func TestImages(t *testing.T) {
	root := git(t, "rev-parse", "--show-toplevel")
	version := git(t, "describe", "--tags", "--always", "--dirty")
	commit := git(t, "rev-parse", "HEAD")
	repo := os.Getenv("IMAGE_REPO")
	if repo == "" {
		repo = "karmadaflow"
	}

	for _, component := range []string{"worker", "starter"} {
		t.Run(component, func(t *testing.T) {
			tag, err := name.NewTag(repo + "/" + component + ":" + version)
			require.NoError(t, err)
			file := filepath.Join(root, ".images", component+".tar")
			img, err := tarball.ImageFromPath(file, &tag)
			require.NoError(t, err, "%s tagged %s (`make images` builds it)", file, tag)

			config, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, nonrootUser, config.Config.User)
			require.Len(t, config.Config.Entrypoint, 1)
			binary := config.Config.Entrypoint[0]
			assert.Equal(t, component, path.Base(binary), "the entrypoint is the binary")
			assert.Equal(t, map[string]string{
				"org.opencontainers.image.title":    "karmadaflow-" + component,
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": commit,
				"org.opencontainers.image.source":   "https://github.com/karmadaflow/karmadaflow",
			}, config.Config.Labels)

			dir := t.TempDir()
			files := extract(t, img, dir, caBundle, passwd, strings.TrimPrefix(binary, "/"))
			assert.Contains(t, files[caBundle], "-----BEGIN CERTIFICATE-----")
			assert.Contains(t, strings.Split(files[passwd], "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin",
				"the image's user has a passwd entry")

			executable := filepath.Join(dir, strings.TrimPrefix(binary, "/"))
			assertStatic(t, executable)
			out, err := exec.Command(executable, "--version").CombinedOutput()
			require.NoError(t, err, "%s --version: %s", binary, out)
			assert.Truef(t, strings.HasPrefix(string(out), component+" "+version+" (commit "+commit+","),
				"%s --version names the version %s and the commit %s: %s", binary, version, commit, out)
		})
	}
}

// extract writes the named files of img's filesystem (its layers flattened) under dir, keeping
// their modes, and returns their contents. It fails the test when one is missing.
func extract(t *testing.T, img v1.Image, dir string, names ...string) map[string]string {
	t.Helper()
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	filesystem := mutate.Extract(img)
	defer func() { _ = filesystem.Close() }()
	contents := map[string]string{}
	reader := tar.NewReader(filesystem)
	for {
		header, err := reader.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		entry := strings.TrimPrefix(path.Clean("/"+header.Name), "/")
		if !wanted[entry] || header.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(reader)
		require.NoError(t, err)
		target := filepath.Join(dir, entry)
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
		require.NoError(t, os.WriteFile(target, data, header.FileInfo().Mode().Perm()))
		contents[entry] = string(data)
	}
	for _, n := range names {
		_, found := contents[n]
		require.Truef(t, found, "the image holds the file /%s", n)
	}
	return contents
}

// assertStatic checks that the executable asks for no dynamic loader: it runs without libc.
func assertStatic(t *testing.T, executable string) {
	t.Helper()
	f, err := elf.Open(executable)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s is linked statically", executable)
	}
}

func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	require.NoError(t, err, "git %s", strings.Join(args, " "))
	return strings.TrimSpace(string(out))
}
