package provisioning

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Bounds of a CRD tarball. Karmada's own (v1.19) is 86 KB compressed, 0.75 MB unpacked in 22
// files of at most 117 KB, so these leave room to grow while a gzip bomb or a tarball of
// huge or countless entries is refused before it fills the worker's memory.
const (
	maxTarball        = 64 << 20 // compressed, as downloaded
	maxTarballContent = 16 << 20 // decompressed: every entry and header, skipped ones too
	maxTarballFile    = 4 << 20  // one file read
	maxTarballEntries = 1024
)

// Placeholders of the conversion patches in crds/patches/, filled in as karmada-operator fills
// them: the karmada-webhook Service of the instance (in the host cluster, where the API server
// runs) and the base64 of the CA that signed its certificate.
const (
	placeholderName      = "{{name}}"
	placeholderNamespace = "{{namespace}}"
	placeholderCABundle  = "{{caBundle}}"
)

// CRDTarball is a Karmada CRD tarball as the release ships it (crds.tar.gz, made with
// `tar -czf crds.tar.gz -C charts/karmada crds`): CRD YAML under crds/bases/, patches of some
// of those CRDs under crds/patches/. Only the files are kept, not the decoded objects: parsed
// CRDs take several times the memory of their YAML, and CRDs builds fresh objects per instance.
type CRDTarball struct {
	Bases   []TarballFile
	Patches []TarballFile
}

// TarballFile is one YAML file of a CRD tarball.
type TarballFile struct {
	Name string // the cleaned path in the tarball, crds/...
	Data []byte
}

// ReadCRDTarball reads a gzipped CRD tarball. Every entry must be under crds/; YAML files under
// crds/bases/ and crds/patches/ are kept, anything else (crds/kustomization.yaml, directories)
// is skipped, as karmada-operator skips it. The tarball is checked by building its CRDs once,
// so a broken one fails here rather than at every instance.
func ReadCRDTarball(r io.Reader) (*CRDTarball, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("CRD tarball: %w", err)
	}
	content := &boundedReader{r: gz, limit: maxTarballContent, what: "CRD tarball decompressed"}
	tr := tar.NewReader(content)
	t := &CRDTarball{}
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("CRD tarball: %w", err)
		}
		if entries == maxTarballEntries {
			return nil, fmt.Errorf("CRD tarball: more than %d entries", maxTarballEntries)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || name == "crds" {
			continue
		}
		if !strings.HasPrefix(name, "crds/") {
			return nil, fmt.Errorf("CRD tarball: %q is outside crds/", h.Name)
		}
		var files *[]TarballFile
		switch {
		case h.Typeflag != tar.TypeReg || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")):
			continue
		case strings.HasPrefix(name, "crds/bases/"):
			files = &t.Bases
		case strings.HasPrefix(name, "crds/patches/"):
			files = &t.Patches
		default:
			continue
		}
		if h.Size > maxTarballFile {
			return nil, fmt.Errorf("CRD tarball: %s is %d bytes, more than %d", name, h.Size, maxTarballFile)
		}
		// A file is read into a buffer of its declared size, once the size is known to fit
		// the decompressed bound: a file that would pass it is refused before it is read.
		if !content.fits(h.Size) {
			return nil, fmt.Errorf("CRD tarball: %s: %w", name, content.exceeded())
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, fmt.Errorf("CRD tarball: %s: %w", name, err)
		}
		*files = append(*files, TarballFile{Name: name, Data: data})
	}
	// karmada-operator walks the unpacked directories, in lexical order.
	byName := func(a, b TarballFile) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(t.Bases, byName)
	slices.SortFunc(t.Patches, byName)
	crds, err := t.CRDs("webhook", "namespace", nil)
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, errors.New("CRD tarball: no CRDs under crds/bases/")
	}
	return t, nil
}

// CRDs are the CRDs of crds/bases/ with the patches of crds/patches/ applied, as
// karmada-operator applies them: the placeholders filled in with the karmada-webhook Service
// webhookService in namespace and the base64 of caBundle, then each patch merged into the CRD
// it names (a strategic merge patch, as the operator sends it to the API server). Karmada's
// patches turn on the conversion webhook of resourcebindings and clusterresourcebindings,
// at https://<webhookService>.<namespace>.svc:443/convert.
//
// The operator derives the CRD from the patch's file name (webhook_in_<plural>.yaml patches
// <plural>.work.karmada.io); here it is the patch's metadata.name, the same CRD in every
// Karmada release, without tying patches to one API group.
func (t *CRDTarball) CRDs(webhookService, namespace string, caBundle []byte) ([]*unstructured.Unstructured, error) {
	var crds []*unstructured.Unstructured
	byName := map[string]int{}
	for _, f := range t.Bases {
		objs, err := decodeCRDs(f.Name, f.Data)
		if err != nil {
			return nil, fmt.Errorf("CRD tarball: %w", err)
		}
		for _, obj := range objs {
			byName[obj.GetName()] = len(crds)
			crds = append(crds, obj)
		}
	}
	fill := strings.NewReplacer(
		placeholderName, webhookService,
		placeholderNamespace, namespace,
		placeholderCABundle, base64.StdEncoding.EncodeToString(caBundle),
	)
	for _, f := range t.Patches {
		patches, err := decodeDocuments(f.Name, []byte(fill.Replace(string(f.Data))))
		if err != nil {
			return nil, fmt.Errorf("CRD tarball: %w", err)
		}
		for _, patch := range patches {
			i, ok := byName[patch.GetName()]
			if !ok {
				return nil, fmt.Errorf("CRD tarball: %s patches CRD %q, which crds/bases/ does not hold", f.Name, patch.GetName())
			}
			if crds[i], err = strategicMerge(crds[i], patch); err != nil {
				return nil, fmt.Errorf("CRD tarball: %s: %w", f.Name, err)
			}
		}
	}
	return crds, nil
}

// strategicMerge merges patch into crd by the CRD type's patch strategies, as the API server
// merges a strategic merge patch of a CRD.
func strategicMerge(crd, patch *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	original, err := crd.MarshalJSON()
	if err != nil {
		return nil, err
	}
	patchJSON, err := json.Marshal(patch.Object)
	if err != nil {
		return nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(original, patchJSON, apiextensionsv1.CustomResourceDefinition{})
	if err != nil {
		return nil, fmt.Errorf("patching CRD %s: %w", crd.GetName(), err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(merged); err != nil {
		return nil, fmt.Errorf("patching CRD %s: %w", crd.GetName(), err)
	}
	return out, nil
}

// decodeCRDs are the CustomResourceDefinitions among the YAML documents of a file.
func decodeCRDs(name string, data []byte) ([]*unstructured.Unstructured, error) {
	docs, err := decodeDocuments(name, data)
	return slices.DeleteFunc(docs, func(obj *unstructured.Unstructured) bool { return obj.GetKind() != "CustomResourceDefinition" }), err
}

// decodeDocuments are the YAML (or JSON) documents of a file, empty ones left out.
func decodeDocuments(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// boundedReader fails once more than limit bytes are read. io.LimitReader would end the
// stream quietly instead, and a truncated tarball would be mistaken for a complete one.
type boundedReader struct {
	r     io.Reader
	limit int64
	read  int64
	what  string
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if left := b.limit - b.read + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n, b.exceeded()
	}
	return n, err
}

// fits tells whether n more bytes stay within the bound.
func (b *boundedReader) fits(n int64) bool { return b.read+n <= b.limit }

func (b *boundedReader) exceeded() error {
	return fmt.Errorf("%s: more than %d bytes", b.what, b.limit)
}
