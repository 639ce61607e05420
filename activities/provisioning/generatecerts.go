package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// The GenerateCertificates step: the certificate Secrets ensured (certs.go fills them) for the
// addresses the API server is reached at.

// GenerateCertificates makes sure the cert, etcd-cert and webhook-cert Secrets exist and
// hold what the spec needs. Keys are generated once and never leave the Secrets.
func (a *Activities) GenerateCertificates(ctx context.Context, ref Ref) (Certificates, error) {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return Certificates{}, err
	}
	addresses, err := t.certAddresses(ctx, k)
	if err != nil {
		return Certificates{}, err
	}
	return t.ensureCertificates(ctx, k, addresses)
}

// ensureCertificates fills the certificate Secrets; the API server certificate names
// addresses and the host of spec.hostCluster.apiEndpoint, added here rather than by each
// caller so that CertifyLoadBalancer, which passes the load-balancer address only, keeps it.
func (t *target) ensureCertificates(ctx context.Context, k *operatorv1alpha1.Karmada, addresses []string) (Certificates, error) {
	configured, err := configuredEndpoint(k)
	if err != nil {
		return Certificates{}, err
	}
	if configured != nil {
		addresses = append([]string{configured.host}, addresses...)
	}
	names := NamesFor(k.Name)
	var customCA *pki.KeyPair
	if c := k.Spec.CustomCertificate; c != nil && c.APIServerCACert != nil {
		ref, err := secretRef(k, *c.APIServerCACert)
		if err != nil {
			return Certificates{}, err
		}
		secret, err := t.a.Host.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return Certificates{}, fmt.Errorf("reading CA Secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		customCA = &pki.KeyPair{Cert: secret.Data[KeyTLSCert], Key: secret.Data[KeyTLSKey]}
	}
	certs, err := t.ensureSecret(ctx, k, names.Of(SuffixCert), APIServer.Name, certSecretContents(k, customCA, addresses))
	if err != nil {
		return Certificates{}, err
	}
	ca, err := pki.ParseAuthority(pki.KeyPair{Cert: certs[KeyCACert], Key: certs[KeyCAKey]})
	if err != nil {
		return Certificates{}, fmt.Errorf("CA of Secret %s/%s: %w", k.Namespace, names.Of(SuffixCert), err)
	}
	fill := etcdSecretContents(k)
	if externalEtcd(k) {
		ref, err := secretRef(k, k.Spec.Components.Etcd.External.SecretRef)
		if err != nil {
			return Certificates{}, err
		}
		external, err := t.a.Host.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return Certificates{}, fmt.Errorf("reading external etcd Secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		fill = externalEtcdContents(external)
	}
	etcd, err := t.ensureSecret(ctx, k, names.Of(SuffixEtcdCert), Etcd.Name, fill)
	if err != nil {
		return Certificates{}, err
	}
	webhook, err := t.ensureSecret(ctx, k, names.Of(SuffixWebhookCert), Webhook.Name, webhookSecretContents(k, ca))
	if err != nil {
		return Certificates{}, err
	}
	return Certificates{CertHash: hashOf(publicHash(certs), publicHash(etcd), publicHash(webhook))}, nil
}

// certAddresses are the addresses the API server certificate must name besides the fixed
// ones and the apiEndpoint (ensureCertificates adds it): the node address for NodePort, the
// load-balancer address once known.
func (t *target) certAddresses(ctx context.Context, k *operatorv1alpha1.Karmada) ([]string, error) {
	switch ServiceType(k) {
	case corev1.ServiceTypeNodePort:
		addr, err := t.nodeAddress(ctx)
		if err != nil {
			return nil, err
		}
		return []string{addr}, nil
	case corev1.ServiceTypeLoadBalancer:
		svc, err := t.kube.CoreV1().Services(k.Namespace).Get(ctx, NamesFor(k.Name).Of(SuffixAPIServer), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Service %s/%s: %w", k.Namespace, NamesFor(k.Name).Of(SuffixAPIServer), err)
		}
		return ingressAddresses(svc), nil
	}
	return nil, nil
}

func ingressAddresses(svc *corev1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, in.IP)
		}
		if in.Hostname != "" {
			out = append(out, in.Hostname)
		}
	}
	return out
}

// nodeAddress is the address NodePort Services are reached at: the InternalIP (else the
// ExternalIP) of the first Ready node by name.
func (t *target) nodeAddress(ctx context.Context) (string, error) {
	nodes, err := t.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing nodes of the host cluster: %w", err)
	}
	items := nodes.Items
	slices.SortFunc(items, func(x, y corev1.Node) int { return strings.Compare(x.Name, y.Name) })
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, n := range items {
			if !nodeReady(n) {
				continue
			}
			for _, addr := range n.Status.Addresses {
				if addr.Type == typ && addr.Address != "" {
					return addr.Address, nil
				}
			}
		}
	}
	return "", errors.New("no Ready node of the host cluster has an address")
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
