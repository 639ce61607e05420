package provisioning

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// Names of the objects inside the control plane.
const (
	ClusterRoleView       = "karmada-view"
	ClusterRoleEdit       = "karmada-edit"
	ClusterRoleProxyAdmin = "cluster-proxy-admin"
)

// karmadaGroups are the API groups the Karmada roles cover.
var karmadaGroups = []string{"cluster.karmada.io", "policy.karmada.io", "work.karmada.io", "config.karmada.io",
	"networking.karmada.io", "autoscaling.karmada.io", "apps.karmada.io", "search.karmada.io"}

// ControlPlaneNamespace is karmada-system inside the control plane.
func ControlPlaneNamespace() *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: karmadaSystem}}
}

// APIServices are the APIService registrations of the aggregated API servers installed (with
// the ExternalName Services in karmada-system that lead to them in the host cluster).
func APIServices(k *operatorv1alpha1.Karmada, caBundle []byte) ([]*corev1.Service, []*unstructured.Unstructured) {
	type registration struct {
		component Component
		versions  []string // "<version>.<group>"
	}
	var regs []registration
	for _, c := range []Component{AggregatedAPIServer, Search, MetricsAdapter} {
		if Installed(k, c) {
			regs = append(regs, registration{c, apiServicesOf(c)})
		}
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

// apiServicesOf names the APIServices ("<version>.<group>") component c serves.
func apiServicesOf(c Component) []string {
	switch c.Name {
	case AggregatedAPIServer.Name:
		return []string{"v1alpha1.cluster.karmada.io"}
	case Search.Name:
		return []string{"v1alpha1.search.karmada.io"}
	case MetricsAdapter.Name:
		return []string{"v1beta1.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}
	}
	return nil
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
