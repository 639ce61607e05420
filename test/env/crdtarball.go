package env

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KarmadaSourceEnv names where Karmada's CRD tarball comes from: a directory holding
// crds-<commit>.tar.gz (default <repo>/../shared/karmada) or a Karmada checkout, whose
// chart's CRDs (charts/karmada/_crds, charts/karmada/crds before v1.9) are packed in the
// release's layout.
const KarmadaSourceEnv = "KARMADA_SRC"

// crdTarballPath is the path of the tarball on the CRD tarball server, shaped like a Karmada
// release download; the worker fills in the version (its --crd-tarball-url placeholder).
const crdTarballPath = "/releases/download/{{.Version}}/crds.tar.gz"

// crdTarballServer serves Karmada's CRD tarball on loopback, so that the control planes the
// tests provision get Karmada's CRDs without the worker dialling github.com. Every version
// gets the same tarball.
type crdTarballServer struct {
	server  *http.Server
	url     string
	tarball []byte // nil: none was found, every download answers 404
	source  string // where it came from, or why none was found
}

// startCRDTarballServer finds the tarball and serves it on 127.0.0.1:<free port>. Without a
// tarball it still serves (404 to every download, after a warning), so that provisioning
// fails here rather than reaching out for the release's.
func startCRDTarballServer(logf func(string, ...any)) (*crdTarballServer, error) {
	s := &crdTarballServer{}
	var err error
	if s.tarball, s.source, err = findCRDTarball(); err != nil {
		s.source = err.Error()
		logf("env: WARNING: provisioned control planes get no CRDs: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("CRD tarball server: %w", err)
	}
	s.url = "http://" + l.Addr().String() + crdTarballPath
	mux := http.NewServeMux()
	mux.HandleFunc("GET /releases/download/{version}/crds.tar.gz", s.serveTarball)
	s.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

func (s *crdTarballServer) serveTarball(w http.ResponseWriter, r *http.Request) {
	if s.tarball == nil {
		http.Error(w, "no CRD tarball: "+s.source, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	http.ServeContent(w, r, "crds.tar.gz", time.Time{}, bytes.NewReader(s.tarball))
}

func (s *crdTarballServer) close() error { return s.server.Close() }

// findCRDTarball reads the tarball KARMADA_SRC names and says where it came from.
func findCRDTarball() ([]byte, string, error) {
	src := os.Getenv(KarmadaSourceEnv)
	if src == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, "", err
		}
		src = filepath.Join(filepath.Dir(root), "shared", "karmada")
	}
	for _, name := range []string{"_crds", "crds"} {
		chartCRDs := filepath.Join(src, "charts", "karmada", name)
		if info, err := os.Stat(chartCRDs); err == nil && info.IsDir() {
			tarball, err := packCRDs(chartCRDs)
			return tarball, chartCRDs, err
		}
	}
	tarballs, err := filepath.Glob(filepath.Join(src, "crds-*.tar.gz"))
	if err != nil || len(tarballs) == 0 {
		return nil, "", fmt.Errorf("%s=%s holds neither crds-*.tar.gz nor a Karmada chart's CRDs", KarmadaSourceEnv, src)
	}
	// Several commits' tarballs: the last in name order.
	path := slices.Max(tarballs)
	tarball, err := os.ReadFile(path)
	return tarball, path, err
}

// packCRDs packs dir as the release packs the chart's CRDs: every directory and file of dir,
// under crds/.
func packCRDs(dir string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(filepath.Join("crds", rel))
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err = errors.Join(err, tw.Close(), gz.Close()); err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// describe says where the tarball is served and where it came from, for the log.
func (s *crdTarballServer) describe() string {
	return strings.Replace(s.url, "{{.Version}}", "<version>", 1) + " (" + s.source + ")"
}
