package provisioning

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// When the instance's certificates expire and are due for renewal: read from its Secrets,
// reported as times only, so that the workflow can sleep until the first is due.

// InspectCertificates reads the expiry of every certificate the instance issued: the leaves
// of its cert, etcd-cert and webhook-cert Secrets (not the CAs, and not an external etcd's
// client certificate, which is not ours to renew), the client certificates of its component
// kubeconfigs and of its admin kubeconfig.
func (a *Activities) InspectCertificates(ctx context.Context, ref Ref) (CertificateExpiries, error) {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return CertificateExpiries{}, err
	}
	names := NamesFor(k.Name)
	var out CertificateExpiries
	add := func(secret, key string, cert *x509.Certificate) {
		out.Items = append(out.Items, CertificateExpiry{Name: secret + "/" + key, NotAfter: cert.NotAfter})
		if renewAt := pki.RenewAt(cert); out.RenewAt.IsZero() || renewAt.Before(out.RenewAt) {
			out.RenewAt = renewAt
		}
		if out.NotAfter.IsZero() || cert.NotAfter.Before(out.NotAfter) {
			out.NotAfter = cert.NotAfter
		}
	}
	leaves := map[string][]string{
		names.Of(SuffixCert):        {KeyAPIServerCert, KeyAggregatedCert, KeySearchCert, KeyMetricsAdapterCert, KeyAdminCert, KeyFrontProxyClientCert},
		names.Of(SuffixWebhookCert): {KeyTLSCert},
	}
	if !externalEtcd(k) {
		leaves[names.Of(SuffixEtcdCert)] = []string{KeyEtcdServerCert, KeyEtcdPeerCert, KeyEtcdClientCert}
	}
	for _, secret := range slices.Sorted(maps.Keys(leaves)) {
		data, err := t.secretData(ctx, k, secret)
		if err != nil {
			return CertificateExpiries{}, err
		}
		for _, key := range leaves[secret] {
			cert, err := pki.ParseCert(data[key])
			if err != nil {
				return CertificateExpiries{}, fmt.Errorf("certificate %s of Secret %s/%s: %w", key, k.Namespace, secret, err)
			}
			add(secret, key, cert)
		}
	}
	kubeconfigs := []string{names.Of(SuffixAdminConfig)}
	for _, c := range append([]Component{AggregatedAPIServer}, InstalledComponents(k)...) {
		kubeconfigs = append(kubeconfigs, names.ComponentConfig(c.Name))
	}
	for _, secret := range kubeconfigs {
		data, err := t.secretData(ctx, k, secret)
		if err != nil {
			return CertificateExpiries{}, err
		}
		cfg, err := clientcmd.Load(data[KeyKubeconfig])
		if err != nil {
			return CertificateExpiries{}, fmt.Errorf("kubeconfig of Secret %s/%s: %w", k.Namespace, secret, err)
		}
		cert, err := clientCertificate(cfg)
		if err != nil {
			return CertificateExpiries{}, fmt.Errorf("kubeconfig of Secret %s/%s: %w", k.Namespace, secret, err)
		}
		add(secret, KeyKubeconfig, cert)
	}
	return out, nil
}

func (t *target) secretData(ctx context.Context, k *operatorv1alpha1.Karmada, name string) (map[string][]byte, error) {
	secret, err := t.kube.CoreV1().Secrets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("Secret %s/%s not found", k.Namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, name, err)
	}
	return secret.Data, nil
}

// certificatesStatus is status.certificates for e.
func certificatesStatus(e CertificateExpiries) *operatorv1alpha1.CertificatesStatus {
	out := &operatorv1alpha1.CertificatesStatus{}
	if !e.NotAfter.IsZero() {
		out.NotAfter = &metav1.Time{Time: e.NotAfter.Truncate(time.Second)}
	}
	if !e.RenewAt.IsZero() {
		out.RenewalTime = &metav1.Time{Time: e.RenewAt.Truncate(time.Second)}
	}
	for _, item := range e.Items {
		out.Items = append(out.Items, operatorv1alpha1.CertificateExpiry{Name: item.Name, NotAfter: metav1.Time{Time: item.NotAfter}})
	}
	slices.SortFunc(out.Items, func(x, y operatorv1alpha1.CertificateExpiry) int { return strings.Compare(x.Name, y.Name) })
	return out
}
