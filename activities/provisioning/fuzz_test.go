package provisioning

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// Fuzz targets of the CRD tarball reader and of the Karmada's validation (make fuzz).

// rawTar is a tar (not gzipped) of files, in the order given (name, content, name, ...).
func rawTar(files ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(files); i += 2 {
		name, data := files[i], files[i+1]
		h := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(data))}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(data)); err != nil {
				panic(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(data); err != nil {
		panic(err)
	}
	if err := gz.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// FuzzReadCRDTarball: any input is a tarball within the package's bounds, or an error; never
// a panic. With gzipIt the input is the tar itself (gzipped here), so that the fuzzer works on
// tar headers and YAML rather than on gzip's checksums; without, the input is the download.
func FuzzReadCRDTarball(f *testing.F) {
	valid := rawTar("crds/", "", "crds/bases/", "", "crds/bases/policy.yaml", crdYAML,
		"crds/bases/work/binding.yaml", bindingYAML, "crds/patches/webhook_in_resourcebindings.yaml", conversionPatch,
		"crds/kustomization.yaml", "resources: []")
	f.Add(valid, true)
	f.Add(gzipped(valid), false)
	f.Add(rawTar("./crds/bases/a.yml", crdYAML, "crds/bases/README.md", "x"), true)
	f.Add(rawTar("crds/bases/a.yaml", crdYAML, "crds/../x", "x"), true)
	f.Add(rawTar("crds/bases/a.yaml", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a"}}`), true)
	f.Add(rawTar("crds/patches/p.yaml", conversionPatch), true)
	f.Add([]byte("plain text, not gzip"), false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, data []byte, gzipIt bool) {
		in := data
		if gzipIt {
			in = gzipped(data)
		}
		got, err := ReadCRDTarball(bytes.NewReader(in))
		if err != nil {
			if got != nil {
				t.Fatalf("an error (%v) and a tarball", err)
			}
			return
		}
		if len(got.Bases) == 0 {
			t.Fatal("a tarball without bases")
		}
		if n := len(got.Bases) + len(got.Patches); n > maxTarballEntries {
			t.Fatalf("%d files kept, more than %d entries", n, maxTarballEntries)
		}
		var total int
		for dir, files := range map[string][]TarballFile{"crds/bases/": got.Bases, "crds/patches/": got.Patches} {
			if !slices.IsSortedFunc(files, func(a, b TarballFile) int { return strings.Compare(a.Name, b.Name) }) {
				t.Fatalf("%s not sorted: %v", dir, fileNames(files))
			}
			for _, file := range files {
				total += len(file.Data)
				if len(file.Data) > maxTarballFile {
					t.Fatalf("%s: %d bytes kept, more than %d", file.Name, len(file.Data), maxTarballFile)
				}
				if path.Clean(file.Name) != file.Name || !strings.HasPrefix(file.Name, dir) ||
					!(strings.HasSuffix(file.Name, ".yaml") || strings.HasSuffix(file.Name, ".yml")) {
					t.Fatalf("file %q kept under %s", file.Name, dir)
				}
			}
		}
		if total > maxTarballContent {
			t.Fatalf("%d bytes kept, more than %d", total, maxTarballContent)
		}
		// The CRDs build again, alike each time, and building leaves the tarball as it was.
		before := cloneTarball(got)
		crds, err := got.CRDs("webhook", "namespace", nil)
		if err != nil || len(crds) == 0 {
			t.Fatalf("a tarball read whose CRDs do not build: %d CRDs, %v", len(crds), err)
		}
		again, err := got.CRDs("webhook", "namespace", nil)
		if err != nil || !reflect.DeepEqual(crds, again) {
			t.Fatalf("building the CRDs twice differs (%v)", err)
		}
		if !reflect.DeepEqual(before, got) {
			t.Fatal("building the CRDs changed the tarball")
		}
	})
}

func fileNames(files []TarballFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func cloneTarball(t *CRDTarball) *CRDTarball {
	clone := func(files []TarballFile) []TarballFile {
		var out []TarballFile
		for _, f := range files {
			out = append(out, TarballFile{Name: f.Name, Data: bytes.Clone(f.Data)})
		}
		return out
	}
	return &CRDTarball{Bases: clone(t.Bases), Patches: clone(t.Patches)}
}

// FuzzCRDTarballCRDs builds the CRDs of a tarball of one base and one patch, for any
// instance: an error or CRDs, never a panic, and the same CRDs each time.
func FuzzCRDTarballCRDs(f *testing.F) {
	f.Add(bindingYAML, conversionPatch, "foo-karmada-webhook", "tenant1", []byte("the CA"))
	f.Add(crdYAML, "", "w", "n", []byte{})
	f.Add(bindingYAML, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: resourcebindings.work.karmada.io}\nspec: {versions: [{name: v2}]}\n", "w", "n", []byte(nil))
	f.Add(bindingYAML, "metadata: {name: \"{{name}}\"}\n", "resourcebindings.work.karmada.io", "n", []byte("x"))
	f.Add("kind: [unclosed", "", "w", "n", []byte{})
	f.Fuzz(func(t *testing.T, base, patch, webhook, namespace string, caBundle []byte) {
		tb := &CRDTarball{Bases: []TarballFile{{Name: "crds/bases/a.yaml", Data: []byte(base)}}}
		if patch != "" {
			tb.Patches = []TarballFile{{Name: "crds/patches/p.yaml", Data: []byte(patch)}}
		}
		crds, err := tb.CRDs(webhook, namespace, caBundle)
		again, errAgain := tb.CRDs(webhook, namespace, caBundle)
		if (err == nil) != (errAgain == nil) || !reflect.DeepEqual(crds, again) {
			t.Fatalf("building twice differs: %v, then %v", err, errAgain)
		}
		if err != nil {
			return
		}
		if string(tb.Bases[0].Data) != base || (patch != "" && string(tb.Patches[0].Data) != patch) {
			t.Fatal("building the CRDs changed the tarball")
		}
		for _, crd := range crds {
			if _, err := crd.MarshalJSON(); err != nil {
				t.Fatalf("CRD %q does not marshal: %v", crd.GetName(), err)
			}
		}
	})
}

// canary stands for a URL's secrets (password, query) in FuzzValidate: no problem may show it.
const canary = "Zq7canaryZq7"

// withCanary is raw with canary as its password and query, or raw itself when raw is not a
// URL with a host.
func withCanary(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return raw
	}
	u.User = url.UserPassword(u.User.Username(), canary)
	u.RawQuery = "sig=" + canary
	return u.String()
}

// fuzzSource is a worker's CRD source with a mirror and a proxy, whose allowlists
// FuzzValidate checks spec.crdTarball against.
var fuzzSource = &CRDSource{URL: "http://127.0.0.1:8080/releases/download/{{.Version}}/crds.tar.gz",
	AllowedProxyURLs: []string{"http://proxy:3128"}}

// fuzzHostAccess allows host access in one namespace, which FuzzValidate's Karmadas may name.
var fuzzHostAccess = HostAccess{Namespaces: []string{"trusted"}}

// FuzzValidate: Validate of any Karmada (and CRDSource.CheckSpec, ValidateKarmada's check of
// spec.crdTarball against the worker's allowlists, and HostAccess.CheckSpec) never panics, leaves the Karmada as it was,
// gives the same problems each time, each naming a field of the spec, and never shows a
// password or query of the URLs it reports. validateExternalEtcdSecret is fuzzed beside it,
// with the Karmada's external etcd Secret reference and a Secret holding the keys of keys.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"demo","namespace":"tenant1"},"spec":{}}`,
		`{"metadata":{"namespace":"t"},"spec":{"crdTarball":{"httpSource":{"url":"https://u:p@example.com/crds.tar.gz?sig=x","proxy":{"proxyURL":"ftp://u:p@proxy:3128"}}}}}`,
		`{"metadata":{"namespace":"t"},"spec":{"crdTarball":{"httpSource":{"url":"::bad"}}},"hostCluster":{"secretRef":{"name":"h","namespace":"other"}}}`,
		`{"spec":{"crdTarball":{"httpSource":{"url":"http://u:p@169.254.169.254/latest/?q=1","proxy":{"proxyURL":"http://u:p@proxy:3128"}}}}}`,
		`{"spec":{"crdTarball":{"httpSource":{"url":"https://github.com/karmada-io/karmada/releases/download/../x","proxy":{"proxyURL":"http://evil:1"}}}}}`,
		`{"metadata":{"namespace":"t"},"spec":{"hostCluster":{"secretRef":{"name":"h"}},"customCertificate":{"apiServerCACert":{"name":"ca","namespace":"x"}}}}`,
		`{"spec":{"components":{"karmadaAPIServer":{"serviceType":"ExternalName","loadBalancerClass":"c","sidecarContainers":[{"name":"kube-apiserver"},{"name":"a"},{"name":"a"}],"extraVolumes":[{"name":"a"},{"name":"a"}]}}}}`,
		`{"spec":{"components":{"etcd":{"local":{},"external":{"endpoints":[],"secretRef":{"name":""}}}}}}`,
		`{"spec":{"components":{"etcd":{"external":{"endpoints":["https://e:2379"],"secretRef":{"name":"etcd","namespace":"t"}}}}}}`,
		`{"spec":{"components":{"etcd":{"local":{"podDisruptionBudgetConfig":{"minAvailable":1,"maxUnavailable":"50%"}}},"karmadaScheduler":{"podDisruptionBudgetConfig":{}}}}}`,
		`{"metadata":{"namespace":"t"},"spec":{"components":{"karmadaAPIServer":{"extraVolumes":[{"name":"h","hostPath":{"path":"/"}},{"name":"n","nfs":{"server":"s","path":"/"}},{"name":"v"}],` +
			`"sidecarContainers":[{"name":"s","ports":[{"containerPort":1,"hostPort":1}],"securityContext":{"privileged":true,"allowPrivilegeEscalation":true,` +
			`"capabilities":{"add":["SYS_ADMIN"]},"procMount":"Unmasked","seLinuxOptions":{"type":"spc_t"},"seccompProfile":{"type":"Unconfined"},` +
			`"appArmorProfile":{"type":"Unconfined"},"windowsOptions":{"hostProcess":true}}}]},"etcd":{"local":{"volumeData":{"hostPath":{"path":"/var/lib/etcd"}}}},` +
			`"karmadaWebhook":{"annotations":{"container.apparmor.security.beta.kubernetes.io/w":"unconfined"}}}}}`,
		`{"metadata":{"namespace":"trusted"},"spec":{"components":{"karmadaAPIServer":{"sidecarContainers":[{"name":"s","securityContext":{"privileged":true}}]}}}}`,
	} {
		f.Add([]byte(seed), true, "ca.crt,tls.crt")
	}
	f.Add([]byte(`{"spec":{"components":{"etcd":{"external":{"endpoints":["e"],"secretRef":{"name":"s"}}}}}}`), false, "")
	f.Fuzz(func(t *testing.T, data []byte, secretFound bool, keys string) {
		k := &operatorv1alpha1.Karmada{}
		if json.Unmarshal(data, k) != nil {
			return
		}
		before := k.DeepCopy()
		validate := func(k *operatorv1alpha1.Karmada) []string {
			return append(append(Validate(k), fuzzSource.CheckSpec(k)...), fuzzHostAccess.CheckSpec(k)...)
		}
		problems := validate(k)
		if !reflect.DeepEqual(before, k) {
			t.Fatal("Validate changed the Karmada")
		}
		if again := validate(k); !slices.Equal(problems, again) {
			t.Fatalf("Validate differs: %q, then %q", problems, again)
		}
		for _, p := range problems {
			if !strings.HasPrefix(p, "spec.") {
				t.Fatalf("problem %q names no field of the spec", p)
			}
		}

		if s := k.Spec.CRDTarball; s != nil && s.HTTPSource != nil && !strings.Contains(string(data), canary) {
			secret := k.DeepCopy()
			src := secret.Spec.CRDTarball.HTTPSource
			src.URL = withCanary(src.URL)
			if src.Proxy != nil {
				src.Proxy.ProxyURL = withCanary(src.Proxy.ProxyURL)
			}
			for _, p := range validate(secret) {
				if strings.Contains(p, canary) {
					t.Fatalf("problem %q shows a URL's secret (url %q, proxy %+v)", p, src.URL, src.Proxy)
				}
			}
		}

		var ref operatorv1alpha1.LocalSecretReference
		if c := k.Spec.Components; c != nil && c.Etcd != nil && c.Etcd.External != nil {
			ref = c.Etcd.External.SecretRef
		}
		secret := &corev1.Secret{Data: map[string][]byte{}}
		for key := range strings.SplitSeq(keys, ",") {
			secret.Data[key] = []byte("x")
		}
		etcdProblems := validateExternalEtcdSecret(secret, secretFound, ref)
		if !slices.Equal(etcdProblems, validateExternalEtcdSecret(secret, secretFound, ref)) {
			t.Fatal("validateExternalEtcdSecret differs")
		}
		if secretFound {
			var missing int
			for _, key := range externalEtcdKeys {
				if len(secret.Data[key]) == 0 {
					missing++
				}
			}
			if len(etcdProblems) != missing {
				t.Fatalf("%d keys missing of %q, %d problems: %q", missing, keys, len(etcdProblems), etcdProblems)
			}
		} else if len(etcdProblems) != 1 {
			t.Fatalf("a missing Secret is %d problems", len(etcdProblems))
		}
	})
}

// FuzzValidateName: of two Karmadas of a namespace whose objects' names meet, the newer one
// (and only it) is refused; Karmadas whose objects' names never meet are both accepted.
func FuzzValidateName(f *testing.F) {
	f.Add("x", "x-karmada", int64(100), int64(100))
	f.Add("x", "x-karmada-etcd", int64(100), int64(50))
	f.Add("demo", "other", int64(1), int64(2))
	f.Add("a-karmada", "a", int64(7), int64(7))
	f.Add("same", "same", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, nameA, nameB string, createdA, createdB int64) {
		if createdA < 0 || createdB < 0 || createdA > 1<<40 || createdB > 1<<40 {
			return // outside what a creation timestamp holds
		}
		karmada := func(name string, created int64) operatorv1alpha1.Karmada {
			return operatorv1alpha1.Karmada{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
				CreationTimestamp: metav1.NewTime(time.Unix(created, 0))}}
		}
		a, b := karmada(nameA, createdA), karmada(nameB, createdB)
		siblings := []operatorv1alpha1.Karmada{a, b}
		pa, pb := ValidateName(&a, siblings), ValidateName(&b, siblings)
		if !slices.Equal(pa, ValidateName(&a, siblings)) {
			t.Fatal("ValidateName differs")
		}
		if nameA == nameB {
			if len(pa)+len(pb) > 0 {
				t.Fatalf("a Karmada is refused for its own name: %q %q", pa, pb)
			}
			return
		}
		meet := false
		for _, n := range NamesFor(nameA).objectNames() {
			if slices.Contains(NamesFor(nameB).objectNames(), n) {
				meet = true
			}
		}
		switch {
		case len(pa) > 0 && len(pb) > 0:
			t.Fatalf("both %q and %q are refused: %q, %q", nameA, nameB, pa, pb)
		case !meet && len(pa)+len(pb) > 0:
			t.Fatalf("%q and %q make distinct objects but are refused: %q %q", nameA, nameB, pa, pb)
		case meet && len(pa)+len(pb) != 1:
			t.Fatalf("%q and %q make the same objects but neither is refused", nameA, nameB)
		}
		other := karmada(nameB, createdB)
		other.Namespace = "elsewhere"
		if p := ValidateName(&a, []operatorv1alpha1.Karmada{other}); len(p) > 0 {
			t.Fatalf("refused for a Karmada of another namespace: %q", p)
		}
	})
}
