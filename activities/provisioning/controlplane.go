package provisioning

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/deploy/crds"
)

// Names of the objects inside the control plane.
const (
	MutatingWebhookConfiguration   = "mutating-config"
	ValidatingWebhookConfiguration = "validating-config"
	ClusterRoleView                = "karmada-view"
	ClusterRoleEdit                = "karmada-edit"
	ClusterRoleProxyAdmin          = "cluster-proxy-admin"
)

// karmadaGroups are the API groups the Karmada roles cover.
var karmadaGroups = []string{"cluster.karmada.io", "policy.karmada.io", "work.karmada.io", "config.karmada.io",
	"networking.karmada.io", "autoscaling.karmada.io", "apps.karmada.io", "search.karmada.io"}

// ControlPlaneNamespace is karmada-system inside the control plane.
func ControlPlaneNamespace() *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: karmadaSystem}}
}

// WebhookConfigurations are the mutating and validating webhook configurations that send
// Karmada objects to karmada-webhook in the host cluster, trusting the generated CA.
func WebhookConfigurations(k *operatorv1alpha1.Karmada, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	base := "https://" + NamesFor(k.Name).Of(SuffixWebhook) + "." + k.Namespace + ".svc:443"
	type hook struct{ name, group, resource, path string }
	mutating := []hook{{"work.karmada.io", "work.karmada.io", "works", "/mutate-work"}}
	validating := []hook{
		{"multiclusterservice.karmada.io", "networking.karmada.io", "multiclusterservices", "/validate-multiclusterservice"},
		{"work.karmada.io", "work.karmada.io", "works", "/validate-work"},
	}
	rule := func(h hook) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{h.group}, APIVersions: []string{"*"}, Resources: []string{h.resource}, Scope: ptr.To(admissionregistrationv1.AllScopes)},
		}}
	}
	client := func(h hook) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + h.path), CABundle: caBundle}
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingWebhookConfiguration, Labels: map[string]string{"app": "mutating-config"}},
	}
	for _, h := range mutating {
		m.Webhooks = append(m.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: h.name, Rules: rule(h), ClientConfig: client(h),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](3),
		})
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingWebhookConfiguration, Labels: map[string]string{"app": "validating-config"}},
	}
	for _, h := range validating {
		v.Webhooks = append(v.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: h.name, Rules: rule(h), ClientConfig: client(h),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](3),
		})
	}
	return m, v
}

// APIServices are the APIService registrations of the aggregated API servers installed (with
// the ExternalName Services in karmada-system that lead to them in the host cluster).
func APIServices(k *operatorv1alpha1.Karmada, caBundle []byte) ([]*corev1.Service, []*unstructured.Unstructured) {
	type registration struct {
		component Component
		versions  []string // "<version>.<group>"
	}
	regs := []registration{{AggregatedAPIServer, []string{"v1alpha1.cluster.karmada.io"}}}
	if Installed(k, Search) {
		regs = append(regs, registration{Search, []string{"v1alpha1.search.karmada.io"}})
	}
	if Installed(k, MetricsAdapter) {
		regs = append(regs, registration{MetricsAdapter, []string{"v1beta1.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}})
	}
	var services []*corev1.Service
	var apiServices []*unstructured.Unstructured
	for _, r := range regs {
		target := NamesFor(k.Name).Of(r.component.Suffix) + "." + k.Namespace + ".svc." + DNSDomain(k)
		services = append(services, &corev1.Service{
			TypeMeta:   serviceType,
			ObjectMeta: metav1.ObjectMeta{Name: r.component.Name, Namespace: karmadaSystem},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
		})
		for _, name := range r.versions {
			version, group, _ := strings.Cut(name, ".")
			apiServices = append(apiServices, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apiregistration.k8s.io/v1",
				"kind":       "APIService",
				"metadata":   map[string]any{"name": name, "labels": map[string]any{"app": r.component.Name}},
				"spec": map[string]any{
					"group": group, "version": version, "groupPriorityMinimum": int64(2000), "versionPriority": int64(10),
					"caBundle": caBundle,
					"service":  map[string]any{"name": r.component.Name, "namespace": karmadaSystem, "port": int64(443)},
				},
			}})
		}
	}
	return services, apiServices
}

// RBAC are the ClusterRoles karmada-view, karmada-edit and cluster-proxy-admin, and the
// binding of cluster-proxy-admin to the admin user.
func RBAC() ([]*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	typ := metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}
	view := &rbacv1.ClusterRole{TypeMeta: typ, ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleView,
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: karmadaGroups, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}}
	edit := &rbacv1.ClusterRole{TypeMeta: typ, ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleEdit,
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: karmadaGroups, Resources: []string{"*"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}}}}
	proxy := &rbacv1.ClusterRole{TypeMeta: typ, ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleProxyAdmin},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"cluster.karmada.io"}, Resources: []string{"clusters/proxy"}, Verbs: []string{"*"}}}}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleProxyAdmin},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ClusterRoleProxyAdmin},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: AdminUser}},
	}
	return []*rbacv1.ClusterRole{view, edit, proxy}, binding
}

// EmbeddedCRDs are the CRDs built into karmadaflow.
func EmbeddedCRDs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := fs.WalkDir(crds.ControlPlane, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := crds.ControlPlane.ReadFile(name)
		if err != nil {
			return err
		}
		objs, err := decodeCRDs(name, data)
		out = append(out, objs...)
		return err
	})
	return out, err
}

func decodeCRDs(name string, data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			out = append(out, obj)
		}
	}
}

// maxTarball bounds a downloaded CRD tarball.
const maxTarball = 64 << 20

// DownloadCRDs fetches the CRD tarball of src (through its proxy, if any) and returns its
// CRDs. The tarball must have Karmada's layout: everything under crds/, the CRDs under
// crds/bases/ (crds/patches/ is accepted and not applied).
func DownloadCRDs(ctx context.Context, src operatorv1alpha1.HTTPSource) ([]*unstructured.Unstructured, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if src.Proxy != nil && src.Proxy.ProxyURL != "" {
		proxy, err := url.Parse(src.Proxy.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("proxy URL %q: %w", src.Proxy.ProxyURL, err)
		}
		transport.Proxy = http.ProxyURL(proxy)
	}
	client := &http.Client{Transport: transport, Timeout: 2 * time.Minute}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading CRD tarball %s: %w", src.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading CRD tarball %s: %s", src.URL, resp.Status)
	}
	return ReadCRDTarball(io.LimitReader(resp.Body, maxTarball))
}

// ReadCRDTarball reads a gzipped CRD tarball with Karmada's layout (see DownloadCRDs).
func ReadCRDTarball(r io.Reader) ([]*unstructured.Unstructured, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("CRD tarball: %w", err)
	}
	tr := tar.NewReader(gz)
	var out []*unstructured.Unstructured
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("CRD tarball: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || name == "crds" {
			continue
		}
		if !strings.HasPrefix(name, "crds/") {
			return nil, fmt.Errorf("CRD tarball: %q is outside crds/", h.Name)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(name, "crds/bases/") || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("CRD tarball: %s: %w", name, err)
		}
		objs, err := decodeCRDs(name, data)
		if err != nil {
			return nil, fmt.Errorf("CRD tarball: %w", err)
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		return nil, errors.New("CRD tarball: no CRDs under crds/bases/")
	}
	return out, nil
}
