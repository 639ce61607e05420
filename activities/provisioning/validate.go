package provisioning

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"

	corev1 "k8s.io/api/core/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/redact"
)

// apiServerVolumes are the volumes the API server pod has before spec.extraVolumes.
var apiServerVolumes = []string{volumeCerts, volumeEtcdCerts}

// ServiceType is the API server's Service type, ClusterIP when unset.
func ServiceType(k *operatorv1alpha1.Karmada) corev1.ServiceType {
	if t := apiServerSpec(k).ServiceType; t != "" {
		return t
	}
	return corev1.ServiceTypeClusterIP
}

// DNSDomain is the host cluster's DNS domain, cluster.local when unset.
func DNSDomain(k *operatorv1alpha1.Karmada) string {
	if h := k.Spec.HostCluster; h != nil && h.Networking != nil && h.Networking.DNSDomain != nil && *h.Networking.DNSDomain != "" {
		return *h.Networking.DNSDomain
	}
	return "cluster.local"
}

// Validate returns each problem of k's spec that needs no I/O to find, as "<field>: <problem>".
// A missing components.etcd means a local etcd with the defaults.
func Validate(k *operatorv1alpha1.Karmada) []string {
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}

	if t := k.Spec.CRDTarball; t != nil && t.HTTPSource != nil {
		if err := checkURL(t.HTTPSource.URL); err != nil {
			add("spec.crdTarball.httpSource.url", "%v", err)
		}
		if p := t.HTTPSource.Proxy; p != nil {
			if err := checkURL(p.ProxyURL); err != nil {
				add("spec.crdTarball.httpSource.proxy.proxyURL", "%v", err)
			}
		}
	}

	problems = append(problems, validateCertificateValidity(k)...)

	if h := k.Spec.HostCluster; h != nil && h.APIEndpoint != "" {
		if _, err := parseAPIEndpoint(h.APIEndpoint); err != nil {
			add("spec.hostCluster.apiEndpoint", "%v", err)
		}
	}

	refs := secretRefs(k)
	for _, field := range slices.Sorted(maps.Keys(refs)) {
		if ref := refs[field]; ref.Namespace != "" && ref.Namespace != k.Namespace {
			add(field+".namespace", "must be empty or %q, the Karmada's own namespace, not %q: Secrets of other namespaces are never read",
				k.Namespace, ref.Namespace)
		}
	}

	api := apiServerSpec(k)
	const apiField = "spec.components.karmadaAPIServer"
	serviceType := ServiceType(k)
	switch serviceType {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		add(apiField+".serviceType", "must be ClusterIP, NodePort or LoadBalancer, not %q", serviceType)
	}
	if api.LoadBalancerClass != nil && serviceType != corev1.ServiceTypeLoadBalancer {
		add(apiField+".loadBalancerClass", "may only be set with serviceType LoadBalancer, not %s", serviceType)
	}
	if h := k.Spec.HostCluster; h != nil && h.SecretRef != nil && serviceType == corev1.ServiceTypeClusterIP {
		add(apiField+".serviceType", "a remote host cluster (spec.hostCluster.secretRef) needs NodePort or LoadBalancer, not ClusterIP")
	}
	for i, c := range api.SidecarContainers {
		field := fmt.Sprintf("%s.sidecarContainers[%d].name", apiField, i)
		switch {
		case c.Name == APIServerContainer:
			add(field, "must not reuse the name of the API server container %q", APIServerContainer)
		case slices.ContainsFunc(api.SidecarContainers[:i], func(o corev1.Container) bool { return o.Name == c.Name }):
			add(field, "%q is used by another sidecar", c.Name)
		}
	}
	for i, v := range api.ExtraVolumes {
		field := fmt.Sprintf("%s.extraVolumes[%d].name", apiField, i)
		switch {
		case slices.Contains(apiServerVolumes, v.Name):
			add(field, "%q is a volume the API server already uses", v.Name)
		case slices.ContainsFunc(api.ExtraVolumes[:i], func(o corev1.Volume) bool { return o.Name == v.Name }):
			add(field, "%q is used by another extra volume", v.Name)
		}
	}

	if c := k.Spec.Components; c != nil && c.Etcd != nil {
		switch {
		case c.Etcd.Local != nil && c.Etcd.External != nil:
			add("spec.components.etcd", "must be local or external, not both")
		case c.Etcd.Local == nil && c.Etcd.External == nil:
			add("spec.components.etcd", "must be local or external, not neither")
		case c.Etcd.External != nil && c.Etcd.External.SecretRef.Name == "":
			add("spec.components.etcd.external.secretRef.name", "is required")
		case c.Etcd.External != nil && len(c.Etcd.External.Endpoints) == 0:
			add("spec.components.etcd.external.endpoints", "needs at least one endpoint")
		}
	}

	for _, comp := range append([]Component{Etcd, APIServer, AggregatedAPIServer}, Components...) {
		s := SettingsOf(k, comp)
		pdb := s.Common.PodDisruptionBudgetConfig
		if !s.Set || pdb == nil {
			continue
		}
		field := "spec.components." + comp.Field
		if comp.Field == Etcd.Field {
			field += ".local"
		}
		if (pdb.MinAvailable == nil) == (pdb.MaxUnavailable == nil) {
			add(field+".podDisruptionBudgetConfig", "exactly one of minAvailable and maxUnavailable must be set")
		}
	}
	return problems
}

// ValidateName returns the problem of k's name when another Karmada of its namespace
// (siblings, which may hold k itself) created before it (or at the same second, with a smaller
// name) gives one of its objects a name k's would have: both instances would apply, and
// delete, the same objects. Names are "<name>-<suffix>" when the name contains "karmada",
// else "<name>-karmada-<suffix>", so "x" and "x-karmada" make the same objects (and "x" and
// "x-karmada-etcd" both make "x-karmada-etcd-cert"). The older instance keeps its names: they
// cannot change without renaming the objects of existing instances.
func ValidateName(k *operatorv1alpha1.Karmada, siblings []operatorv1alpha1.Karmada) []string {
	mine := map[string]bool{}
	for _, n := range NamesFor(k.Name).objectNames() {
		mine[n] = true
	}
	var problems []string
	for _, o := range siblings {
		if o.Name == k.Name || o.Namespace != k.Namespace || !older(&o, k) {
			continue
		}
		for _, n := range NamesFor(o.Name).objectNames() {
			if mine[n] {
				problems = append(problems, fmt.Sprintf("metadata.name: Karmada %q would name its objects as Karmada %q of namespace %s does "+
					"(both make %q; a name without \"karmada\" is followed by \"-karmada\"): choose another name", k.Name, o.Name, k.Namespace, n))
				break
			}
		}
	}
	return problems
}

// older tells whether a was created before b; at the same second, the smaller name is.
func older(a, b *operatorv1alpha1.Karmada) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.Name < b.Name
}

// secretRefs are the Secret references of k's spec, by field.
func secretRefs(k *operatorv1alpha1.Karmada) map[string]operatorv1alpha1.LocalSecretReference {
	refs := map[string]operatorv1alpha1.LocalSecretReference{}
	if h := k.Spec.HostCluster; h != nil && h.SecretRef != nil {
		refs["spec.hostCluster.secretRef"] = *h.SecretRef
	}
	if c := k.Spec.CustomCertificate; c != nil && c.APIServerCACert != nil {
		refs["spec.customCertificate.apiServerCACert"] = *c.APIServerCACert
	}
	if externalEtcd(k) {
		refs["spec.components.etcd.external.secretRef"] = k.Spec.Components.Etcd.External.SecretRef
	}
	return refs
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("does not parse as a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s is not an http(s) URL with a host", redact.URL(raw))
	}
	return nil
}

// externalEtcdKeys are the keys the Secret of an external etcd must hold.
var externalEtcdKeys = []string{"ca.crt", "tls.crt", "tls.key"}

// validateExternalEtcdSecret checks that the external etcd's Secret holds every key; found
// is false when the Secret does not exist.
func validateExternalEtcdSecret(secret *corev1.Secret, found bool, ref operatorv1alpha1.LocalSecretReference) []string {
	field := "spec.components.etcd.external.secretRef"
	if !found {
		return []string{fmt.Sprintf("%s: Secret %s/%s not found", field, ref.Namespace, ref.Name)}
	}
	var problems []string
	for _, key := range externalEtcdKeys {
		if len(secret.Data[key]) == 0 {
			problems = append(problems, fmt.Sprintf("%s: Secret %s/%s has no %q", field, ref.Namespace, ref.Name, key))
		}
	}
	return problems
}
