package provisioning

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// Keys of the cert Secret.
const (
	KeyCACert               = "ca.crt"
	KeyCAKey                = "ca.key"
	KeyAPIServerCert        = "apiserver.crt"
	KeyAPIServerKey         = "apiserver.key"
	KeyAggregatedCert       = "aggregated-apiserver.crt"
	KeyAggregatedKey        = "aggregated-apiserver.key"
	KeySearchCert           = "search.crt"
	KeySearchKey            = "search.key"
	KeyMetricsAdapterCert   = "metrics-adapter.crt"
	KeyMetricsAdapterKey    = "metrics-adapter.key"
	KeyFrontProxyCACert     = "front-proxy-ca.crt"
	KeyFrontProxyCAKey      = "front-proxy-ca.key"
	KeyFrontProxyClientCert = "front-proxy-client.crt"
	KeyFrontProxyClientKey  = "front-proxy-client.key"
	KeyAdminCert            = "karmada.crt"
	KeyAdminKey             = "karmada.key"
	KeyServiceAccountKey    = "sa.key"
	KeyServiceAccountPub    = "sa.pub"
)

// Keys of the etcd-cert Secret (for an external etcd, copies of its Secret's keys).
const (
	KeyEtcdCACert     = "etcd-ca.crt"
	KeyEtcdCAKey      = "etcd-ca.key"
	KeyEtcdServerCert = "etcd-server.crt"
	KeyEtcdServerKey  = "etcd-server.key"
	KeyEtcdPeerCert   = "etcd-peer.crt"
	KeyEtcdPeerKey    = "etcd-peer.key"
	KeyEtcdClientCert = "etcd-client.crt"
	KeyEtcdClientKey  = "etcd-client.key"
)

// Keys of the webhook-cert Secret and of kubeconfig Secrets.
const (
	KeyTLSCert    = "tls.crt"
	KeyTLSKey     = "tls.key"
	KeyKubeconfig = "kubeconfig"
)

// AdminUser is the identity of the admin kubeconfig.
const (
	AdminUser  = "system:admin"
	AdminGroup = "system:masters"
)

// karmadaSystem is the namespace of the Karmada components inside the control plane.
const karmadaSystem = "karmada-system"

// defaultServiceSubnet is the control plane's Service range when the spec sets none.
const defaultServiceSubnet = "10.96.0.0/12"

// AnnotationCertificateValidity on a Karmada sets the validity of its leaf certificates as a
// Go duration (e.g. "3m"), overriding spec.customCertificate.leafCertValidityDays: for
// validities shorter than a day, as when trying renewal.
const AnnotationCertificateValidity = "karmadaflow.io/certificate-validity"

// minCertificateValidity is the shortest validity the annotation may set: a renewal starts
// when a third of it is left and rolls every component, which takes about a minute.
const minCertificateValidity = 3 * time.Minute

// leafValidity is how long the leaves and client certificates k issues are valid: the
// annotation, else leafCertValidityDays, else a year.
func leafValidity(k *operatorv1alpha1.Karmada) time.Duration {
	if d, err := time.ParseDuration(k.Annotations[AnnotationCertificateValidity]); err == nil && d >= minCertificateValidity {
		return d
	}
	if c := k.Spec.CustomCertificate; c != nil && c.LeafCertValidityDays != nil && *c.LeafCertValidityDays > 0 {
		return time.Duration(*c.LeafCertValidityDays) * 24 * time.Hour
	}
	return pki.DefaultLeafValidity
}

// validateCertificateValidity reports a certificate-validity annotation that is not a
// duration of at least minCertificateValidity.
func validateCertificateValidity(k *operatorv1alpha1.Karmada) []string {
	value, ok := k.Annotations[AnnotationCertificateValidity]
	if !ok {
		return nil
	}
	if d, err := time.ParseDuration(value); err != nil || d < minCertificateValidity {
		return []string{fmt.Sprintf("metadata.annotations[%s]: %q is not a duration of at least %s (e.g. \"720h\")",
			AnnotationCertificateValidity, value, minCertificateValidity)}
	}
	return nil
}

// serviceDNSNames are the in-cluster names of Service svc in namespace ns.
func serviceDNSNames(svc, ns, domain string) []string {
	return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc." + domain}
}

// extensionServerLeaf is the serving certificate of c, an API server the API server's
// aggregator proxies to (aggregated API server, search, metrics adapter): its Service in the
// host cluster, and the Service c.Name in karmada-system inside the control plane, whose
// "<name>.<namespace>.svc" is the name the aggregator verifies (see APIServices).
func extensionServerLeaf(k *operatorv1alpha1.Karmada, c Component, extraSANs []string) pki.LeafSpec {
	domain := DNSDomain(k)
	names := append(serviceDNSNames(NamesFor(k.Name).Of(c.Suffix), k.Namespace, domain), serviceDNSNames(c.Name, karmadaSystem, domain)...)
	dns, ips := pki.SplitSANs(dedupe(append(names, extraSANs...)))
	return pki.LeafSpec{CommonName: c.Name, DNSNames: dns, IPs: ips, Server: true}
}

// apiServerLeaf is the API server's serving certificate: loopback, the kubernetes Service of
// the control plane, every Service of the instance's namespace and of karmada-system, the
// given addresses (node or load-balancer address) and spec certSANs.
func apiServerLeaf(k *operatorv1alpha1.Karmada, addresses []string) pki.LeafSpec {
	domain := DNSDomain(k)
	names := []string{"localhost", "127.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + domain,
		"*." + k.Namespace + ".svc", "*." + k.Namespace + ".svc." + domain,
		"*." + karmadaSystem + ".svc", "*." + karmadaSystem + ".svc." + domain,
		NamesFor(k.Name).Of(SuffixAPIServer) + "." + k.Namespace + ".svc." + domain}
	if ip := firstServiceIP(k); ip != nil {
		names = append(names, ip.String())
	}
	names = append(names, addresses...)
	names = append(names, apiServerSpec(k).CertSANs...)
	dns, ips := pki.SplitSANs(dedupe(names))
	return pki.LeafSpec{CommonName: "karmada-apiserver", DNSNames: dns, IPs: ips, Server: true}
}

func firstServiceIP(k *operatorv1alpha1.Karmada) net.IP {
	_, cidr, err := net.ParseCIDR(strings.Split(serviceSubnet(k), ",")[0])
	if err != nil {
		return nil
	}
	ip := slices.Clone(cidr.IP.To4())
	if ip == nil {
		return nil
	}
	ip[3]++
	return ip
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// certSecretContents fills the cert Secret: CAs and keys only when missing (they are
// generated once), leaves when missing or when they no longer cover what the spec needs.
func certSecretContents(k *operatorv1alpha1.Karmada, customCA *pki.KeyPair, addresses []string) func(map[string][]byte) (bool, error) {
	return func(data map[string][]byte) (bool, error) {
		changed := false
		ca, caChanged, err := ensureAuthority(data, KeyCACert, KeyCAKey, "karmada", customCA)
		if err != nil {
			return false, err
		}
		frontProxy, fpChanged, err := ensureAuthority(data, KeyFrontProxyCACert, KeyFrontProxyCAKey, "front-proxy-ca", nil)
		if err != nil {
			return false, err
		}
		changed = caChanged || fpChanged
		if len(data[KeyServiceAccountKey]) == 0 || len(data[KeyServiceAccountPub]) == 0 {
			sa, err := pki.NewSigningKey()
			if err != nil {
				return false, err
			}
			data[KeyServiceAccountKey], data[KeyServiceAccountPub], changed = sa.Key, sa.Cert, true
		}
		var aggregatedSANs []string
		if a := k.Spec.Components; a != nil && a.KarmadaAggregatedAPIServer != nil {
			aggregatedSANs = a.KarmadaAggregatedAPIServer.CertSANs
		}
		// The search and metrics adapter certificates are issued whether or not those optional
		// components are installed: this step's hash does not follow them, so turning one on
		// later must find its certificate already there.
		leaves := []struct {
			ca         *pki.Authority
			cert, key  string
			spec       pki.LeafSpec
			forceFresh bool
		}{
			{ca, KeyAPIServerCert, KeyAPIServerKey, apiServerLeaf(k, addresses), caChanged},
			{ca, KeyAggregatedCert, KeyAggregatedKey, extensionServerLeaf(k, AggregatedAPIServer, aggregatedSANs), caChanged},
			{ca, KeySearchCert, KeySearchKey, extensionServerLeaf(k, Search, nil), caChanged},
			{ca, KeyMetricsAdapterCert, KeyMetricsAdapterKey, extensionServerLeaf(k, MetricsAdapter, nil), caChanged},
			{ca, KeyAdminCert, KeyAdminKey, pki.LeafSpec{CommonName: AdminUser, Organization: []string{AdminGroup}, Client: true}, caChanged},
			{frontProxy, KeyFrontProxyClientCert, KeyFrontProxyClientKey, pki.LeafSpec{CommonName: "front-proxy-client", Client: true}, fpChanged},
		}
		for _, l := range leaves {
			issued, err := ensureLeaf(data, l.ca, l.cert, l.key, l.spec, leafValidity(k))
			if err != nil {
				return false, err
			}
			changed = changed || issued
		}
		return changed, nil
	}
}

// etcdSecretContents fills the etcd-cert Secret of a local etcd.
func etcdSecretContents(k *operatorv1alpha1.Karmada) func(map[string][]byte) (bool, error) {
	return func(data map[string][]byte) (bool, error) {
		names := NamesFor(k.Name)
		domain := DNSDomain(k)
		ca, changed, err := ensureAuthority(data, KeyEtcdCACert, KeyEtcdCAKey, "etcd-ca", nil)
		if err != nil {
			return false, err
		}
		var serverSANs, peerSANs []string
		if c := k.Spec.Components; c != nil && c.Etcd != nil && c.Etcd.Local != nil {
			serverSANs, peerSANs = c.Etcd.Local.ServerCertSANs, c.Etcd.Local.PeerCertSANs
		}
		etcd, client := names.Of(SuffixEtcd), names.Of(SuffixEtcdClient)
		base := append(serviceDNSNames(client, k.Namespace, domain), "localhost", "127.0.0.1",
			"*."+etcd+"."+k.Namespace+".svc", "*."+etcd+"."+k.Namespace+".svc."+domain)
		serverDNS, serverIPs := pki.SplitSANs(dedupe(append(slices.Clone(base), serverSANs...)))
		peerDNS, peerIPs := pki.SplitSANs(dedupe(append(slices.Clone(base), peerSANs...)))
		leaves := []struct {
			cert, key string
			spec      pki.LeafSpec
		}{
			{KeyEtcdServerCert, KeyEtcdServerKey, pki.LeafSpec{CommonName: "etcd-server", DNSNames: serverDNS, IPs: serverIPs, Server: true, Client: true}},
			{KeyEtcdPeerCert, KeyEtcdPeerKey, pki.LeafSpec{CommonName: "etcd-peer", DNSNames: peerDNS, IPs: peerIPs, Server: true, Client: true}},
			{KeyEtcdClientCert, KeyEtcdClientKey, pki.LeafSpec{CommonName: "karmada-apiserver-etcd-client", Client: true}},
		}
		for _, l := range leaves {
			issued, err := ensureLeaf(data, ca, l.cert, l.key, l.spec, leafValidity(k))
			if err != nil {
				return false, err
			}
			changed = changed || issued
		}
		return changed, nil
	}
}

// externalEtcdContents copies the external etcd's client credentials into the etcd-cert
// Secret, so the API server mounts the same keys whether etcd is local or external.
func externalEtcdContents(external *corev1.Secret) func(map[string][]byte) (bool, error) {
	return func(data map[string][]byte) (bool, error) {
		changed := false
		for from, to := range map[string]string{"ca.crt": KeyEtcdCACert, "tls.crt": KeyEtcdClientCert, "tls.key": KeyEtcdClientKey} {
			if string(data[to]) != string(external.Data[from]) {
				data[to], changed = external.Data[from], true
			}
		}
		return changed, nil
	}
}

// webhookSecretContents fills the webhook-cert Secret: karmada-webhook's serving certificate.
func webhookSecretContents(k *operatorv1alpha1.Karmada, ca *pki.Authority) func(map[string][]byte) (bool, error) {
	return func(data map[string][]byte) (bool, error) {
		dns := serviceDNSNames(NamesFor(k.Name).Of(SuffixWebhook), k.Namespace, DNSDomain(k))
		issued, err := ensureLeaf(data, ca, KeyTLSCert, KeyTLSKey, pki.LeafSpec{CommonName: "karmada-webhook", DNSNames: dns, Server: true}, leafValidity(k))
		if err != nil {
			return false, err
		}
		changed := issued || string(data[KeyCACert]) != string(ca.Pair().Cert)
		data[KeyCACert] = ca.Pair().Cert
		return changed, nil
	}
}

// ensureAuthority returns the CA stored under certKey/keyKey, creating it (or storing
// custom) when missing. changed tells whether data was modified.
func ensureAuthority(data map[string][]byte, certKey, keyKey, commonName string, custom *pki.KeyPair) (*pki.Authority, bool, error) {
	if len(data[certKey]) > 0 && len(data[keyKey]) > 0 && (custom == nil || string(custom.Cert) == string(data[certKey])) {
		ca, err := pki.ParseAuthority(pki.KeyPair{Cert: data[certKey], Key: data[keyKey]})
		if err != nil {
			return nil, false, fmt.Errorf("CA %s: %w", certKey, err)
		}
		return ca, false, nil
	}
	var ca *pki.Authority
	var err error
	if custom != nil {
		ca, err = pki.ParseAuthority(*custom)
	} else {
		ca, err = pki.NewAuthority(commonName)
	}
	if err != nil {
		return nil, false, err
	}
	data[certKey], data[keyKey] = ca.Pair().Cert, ca.Pair().Key
	return ca, true, nil
}

// ensureLeaf issues the leaf under certKey/keyKey unless the stored one is signed by ca,
// covers spec and is not due for renewal; it reports whether it issued one.
func ensureLeaf(data map[string][]byte, ca *pki.Authority, certKey, keyKey string, spec pki.LeafSpec, validity time.Duration) (bool, error) {
	if len(data[keyKey]) > 0 && ca.Covers(data[certKey], spec, time.Now()) {
		return false, nil
	}
	pair, err := ca.Issue(spec, validity)
	if err != nil {
		return false, err
	}
	data[certKey], data[keyKey] = pair.Cert, pair.Key
	return true, nil
}

// ensureSecret creates Secret ns/name with contents filled by fill, or lets fill complete an
// existing one and updates it if fill changed anything. Only NotFound creates: any other read
// error is returned, so keys are never regenerated because a read failed.
func (t *target) ensureSecret(ctx context.Context, k *operatorv1alpha1.Karmada, name, component string, fill func(map[string][]byte) (bool, error)) (map[string][]byte, error) {
	secrets := t.kube.CoreV1().Secrets(k.Namespace)
	for attempt := 0; ; attempt++ {
		existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			data := map[string][]byte{}
			if _, err := fill(data); err != nil {
				return nil, fmt.Errorf("Secret %s/%s: %w", k.Namespace, name, err)
			}
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: Labels(k.Name, component)},
				Type:       corev1.SecretTypeOpaque,
				Data:       data,
			}
			_, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) && attempt == 0 {
				continue // created meanwhile: complete that one instead
			}
			if err != nil {
				return nil, fmt.Errorf("creating Secret %s/%s: %w", k.Namespace, name, err)
			}
			return data, nil
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, name, err)
		}
		if existing.Data == nil {
			existing.Data = map[string][]byte{}
		}
		changed, err := fill(existing.Data)
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", k.Namespace, name, err)
		}
		if changed {
			if _, err := secrets.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
				return nil, fmt.Errorf("updating Secret %s/%s: %w", k.Namespace, name, err)
			}
		}
		return existing.Data, nil
	}
}

// publicHash is a hash of the certificates (never the keys) in data, to roll pods when a
// certificate they mount changes.
func publicHash(data map[string][]byte) string {
	var parts []string
	for key, value := range data {
		if strings.HasSuffix(key, ".crt") || strings.HasSuffix(key, ".pub") {
			parts = append(parts, key+"="+string(value))
		}
	}
	slices.Sort(parts)
	return hashOf(parts)
}
