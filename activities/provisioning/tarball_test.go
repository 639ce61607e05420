package provisioning

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

const bindingYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: resourcebindings.work.karmada.io
spec:
  group: work.karmada.io
  names: {kind: ResourceBinding, plural: resourcebindings}
  scope: Namespaced
  versions: [{name: v1alpha2, served: true, storage: true}]
`

// conversionPatch is Karmada's crds/patches/webhook_in_resourcebindings.yaml.
const conversionPatch = `# The following patch enables conversion webhook for CRD
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: resourcebindings.work.karmada.io
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        url: "https://{{name}}.{{namespace}}.svc:443/convert"
        caBundle: "{{caBundle}}"
      conversionReviewVersions: ["v1"]
`

type tarEntry struct {
	name string
	size int64     // of the entry; the content is zeros unless data is set
	data string    // the content
	typ  byte      // 0: a regular file
	body io.Reader // overrides data, for large entries
}

func tarballOf(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		body := e.body
		switch {
		case body != nil:
			h.Size = e.size
		case h.Typeflag == tar.TypeReg:
			h.Size = int64(len(e.data))
			body = strings.NewReader(e.data)
		}
		require.NoError(t, tw.WriteHeader(h))
		if body != nil {
			_, err := io.Copy(tw, body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var entries []tarEntry
	for name, data := range files {
		entries = append(entries, tarEntry{name: name, data: data})
	}
	return tarballOf(t, entries...)
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestReadCRDTarball(t *testing.T) {
	got, err := ReadCRDTarball(bytes.NewReader(tarballOf(t,
		tarEntry{name: "crds/", typ: tar.TypeDir},
		tarEntry{name: "crds/bases/", typ: tar.TypeDir},
		tarEntry{name: "crds/bases/policy.yaml", data: crdYAML},
		tarEntry{name: "crds/bases/work/binding.yaml", data: bindingYAML},
		tarEntry{name: "crds/patches/webhook_in_resourcebindings.yaml", data: conversionPatch},
		tarEntry{name: "./crds/bases/README.md", data: "not yaml"},
		tarEntry{name: "crds/kustomization.yaml", data: "resources: []"},
		tarEntry{name: "crds/bases/empty-file.yaml"},
		tarEntry{name: "crds/bases/link.yaml", typ: tar.TypeSymlink},
	)))
	require.NoError(t, err)
	crds, err := got.CRDs("foo-karmada-webhook", "tenant1", []byte("the CA"))
	require.NoError(t, err)
	assert.Equal(t, []string{"propagationpolicies.policy.karmada.io", "resourcebindings.work.karmada.io"}, names(crds))
	assertConversion(t, crds[1], "https://foo-karmada-webhook.tenant1.svc:443/convert", []byte("the CA"))
	scope, _, _ := unstructured.NestedString(crds[1].Object, "spec", "scope")
	assert.Equal(t, "Namespaced", scope, "the patch is merged into the CRD, not in its place")
	_, patched, _ := unstructured.NestedMap(crds[0].Object, "spec", "conversion")
	assert.False(t, patched)

	// Every instance gets its own objects: patching for one leaves the tarball as it was.
	other, err := got.CRDs("bar-karmada-webhook", "tenant2", []byte("another CA"))
	require.NoError(t, err)
	assertConversion(t, other[1], "https://bar-karmada-webhook.tenant2.svc:443/convert", []byte("another CA"))
	assertConversion(t, crds[1], "https://foo-karmada-webhook.tenant1.svc:443/convert", []byte("the CA"))
}

func assertConversion(t *testing.T, crd *unstructured.Unstructured, url string, caBundle []byte) {
	t.Helper()
	conversion, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion")
	assert.Equal(t, map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"clientConfig":             map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(caBundle)},
			"conversionReviewVersions": []any{"v1"},
		},
	}, conversion, crd.GetName())
}

func TestReadCRDTarballRefuses(t *testing.T) {
	zeros := func(n int64) io.Reader { return io.LimitReader(zeroReader{}, n) }
	cases := map[string]struct {
		tarball []byte
		err     string
	}{
		"an entry outside crds/": {tarball(t, map[string]string{"crds/bases/a.yaml": crdYAML, "../etc/passwd": "x"}), "outside crds/"},
		"an entry leaving crds/": {tarball(t, map[string]string{"crds/bases/a.yaml": crdYAML, "crds/../../x": "x"}), "outside crds/"},
		"an absolute entry":      {tarball(t, map[string]string{"crds/bases/a.yaml": crdYAML, "/crds/bases/b.yaml": crdYAML}), "outside crds/"},
		"no CRDs":                {tarball(t, map[string]string{"crds/patches/a.yaml": conversionPatch}), "patches CRD \"resourcebindings.work.karmada.io\", which crds/bases/ does not hold"},
		"no bases":               {tarball(t, map[string]string{"crds/kustomization.yaml": crdYAML}), "no CRDs under crds/bases/"},
		"broken YAML":            {tarball(t, map[string]string{"crds/bases/a.yaml": "kind: [unclosed"}), "decoding crds/bases/a.yaml"},
		"not gzip":               {[]byte("plain text, not gzip"), "gzip: invalid header"},
		"an oversize entry": {tarballOf(t, tarEntry{name: "crds/bases/huge.yaml", size: maxTarballFile + 1, body: zeros(maxTarballFile + 1)}),
			"crds/bases/huge.yaml is 4194305 bytes, more than 4194304"},
		// 20 MiB of zeros are 20 KB gzipped: the decompressed bound stops them, skipped or not.
		"a gzip bomb": {tarballOf(t,
			tarEntry{name: "crds/bases/a.yaml", data: crdYAML},
			tarEntry{name: "crds/bomb.bin", size: 20 << 20, body: zeros(20 << 20)}),
			"CRD tarball decompressed: more than 16777216 bytes"},
		"too many entries": {tarballOf(t, manyEntries(maxTarballEntries+1)...), "more than 1024 entries"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadCRDTarball(bytes.NewReader(c.tarball))
			assert.ErrorContains(t, err, c.err)
		})
	}
}

// TestReadCRDTarballRefusesKeptFilesPastTheBoundBeforeReadingThem: a gzip bomb of CRD files,
// each within the bound of one file, is refused at the file that would pass the decompressed
// bound, before that file is read. Reading it takes not much more memory than the files it
// keeps until then (12 MiB), not the bytes of growing buffers.
func TestReadCRDTarballRefusesKeptFilesPastTheBoundBeforeReadingThem(t *testing.T) {
	var entries []tarEntry
	for i := range 8 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("crds/bases/bomb-%d.yaml", i), size: maxTarballFile,
			body: io.LimitReader(zeroReader{}, maxTarballFile)})
	}
	bomb := tarballOf(t, entries...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadCRDTarball(bytes.NewReader(bomb))
	runtime.ReadMemStats(&after)
	assert.EqualError(t, err, "CRD tarball: crds/bases/bomb-3.yaml: CRD tarball decompressed: more than 16777216 bytes")
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB", allocated>>10)
	assert.Less(t, allocated, uint64(3*maxTarballFile+1<<20), "bytes allocated while reading the bomb")
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func manyEntries(n int) []tarEntry {
	entries := []tarEntry{{name: "crds/bases/a.yaml", data: crdYAML}}
	for i := range n - 1 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("crds/docs/%d.md", i), data: "x"})
	}
	return entries
}

func TestBoundedReader(t *testing.T) {
	data, err := io.ReadAll(&boundedReader{r: strings.NewReader("12345"), limit: 5, what: "x"})
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
	_, err = io.ReadAll(&boundedReader{r: strings.NewReader("123456"), limit: 5, what: "x"})
	assert.EqualError(t, err, "x: more than 5 bytes")
}

// karmadaTarball is Karmada's own CRD tarball (karmada-io/karmada f8fdd02, v1.19 line), in the
// release's layout.
const karmadaTarball = "../../../shared/karmada/crds-f8fdd02.tar.gz"

// TestKarmadaCRDTarball reads Karmada's own CRD tarball: every CRD karmada-operator installs,
// the two bindings with their conversion webhook at the instance's karmada-webhook.
func TestKarmadaCRDTarball(t *testing.T) {
	f, err := os.Open(karmadaTarball)
	if err != nil {
		t.Skipf("Karmada's CRD tarball: %v", err)
	}
	defer f.Close()
	tarball, err := ReadCRDTarball(f)
	require.NoError(t, err)
	assert.Len(t, tarball.Patches, 2)
	crds, err := tarball.CRDs("demo-karmada-webhook", "tenant1", []byte("-----BEGIN CERTIFICATE-----\n"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"workloadrebalancers.apps.karmada.io",
		"cronfederatedhpas.autoscaling.karmada.io",
		"federatedhpas.autoscaling.karmada.io",
		"resourceinterpretercustomizations.config.karmada.io",
		"resourceinterpreterwebhookconfigurations.config.karmada.io",
		"serviceexports.multicluster.x-k8s.io",
		"serviceimports.multicluster.x-k8s.io",
		"multiclusteringresses.networking.karmada.io",
		"multiclusterservices.networking.karmada.io",
		"clusteroverridepolicies.policy.karmada.io",
		"clusterpropagationpolicies.policy.karmada.io",
		"clustertaintpolicies.policy.karmada.io",
		"federatedresourcequotas.policy.karmada.io",
		"overridepolicies.policy.karmada.io",
		"propagationpolicies.policy.karmada.io",
		"remedies.remedy.karmada.io",
		"clusterresourcebindings.work.karmada.io",
		"resourcebindings.work.karmada.io",
		"works.work.karmada.io",
	}, names(crds))
	// Clusters and ResourceRegistries are served by karmada-aggregated-apiserver and
	// karmada-search, never by CRDs.
	assert.NotContains(t, names(crds), "clusters.cluster.karmada.io")
	assert.NotContains(t, names(crds), "resourceregistries.search.karmada.io")

	for _, crd := range crds {
		switch crd.GetName() {
		case "resourcebindings.work.karmada.io", "clusterresourcebindings.work.karmada.io":
			assertConversion(t, crd, "https://demo-karmada-webhook.tenant1.svc:443/convert", []byte("-----BEGIN CERTIFICATE-----\n"))
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			assert.Len(t, versions, 2, "v1alpha1 and v1alpha2, which the webhook converts between")
		default:
			_, found, _ := unstructured.NestedMap(crd.Object, "spec", "conversion")
			assert.False(t, found, crd.GetName())
		}
	}
}
