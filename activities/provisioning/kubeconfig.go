package provisioning

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// controlPlaneTimeout bounds each request to a new control plane.
const controlPlaneTimeout = 10 * time.Second

// InClusterEndpoint is the API server's URL inside the host cluster.
func InClusterEndpoint(k *operatorv1alpha1.Karmada) string {
	return "https://" + NamesFor(k.Name).Of(SuffixAPIServer) + "." + k.Namespace + ".svc." + DNSDomain(k) + ":" + strconv.Itoa(APIServerPort)
}

// runningInCluster reports whether this process runs in a pod (client-go's in-cluster test),
// where cluster DNS names resolve.
func runningInCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// endpoint is the URL the admin kubeconfig (and status.apiServerEndpoint) reaches the API
// server at. With spec.hostCluster.apiEndpoint, its host and its port, else the node port for
// NodePort and port 5443 otherwise. Without, by service type: ClusterIP its in-cluster name,
// NodePort a node address and the node port, LoadBalancer the ingress address and port 5443.
func (t *target) endpoint(ctx context.Context, k *operatorv1alpha1.Karmada) (string, error) {
	configured, err := configuredEndpoint(k)
	if err != nil {
		return "", err
	}
	if configured != nil {
		port := int32(APIServerPort)
		if ServiceType(k) == corev1.ServiceTypeNodePort && configured.port == "" {
			if port, err = t.nodePort(ctx, k); err != nil {
				return "", err
			}
		}
		return configured.url(port), nil
	}
	name := NamesFor(k.Name).Of(SuffixAPIServer)
	switch ServiceType(k) {
	case corev1.ServiceTypeNodePort:
		port, err := t.nodePort(ctx, k)
		if err != nil {
			return "", err
		}
		addr, err := t.nodeAddress(ctx)
		if err != nil {
			return "", err
		}
		return "https://" + net.JoinHostPort(addr, strconv.Itoa(int(port))), nil
	case corev1.ServiceTypeLoadBalancer:
		svc, err := t.kube.CoreV1().Services(k.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading Service %s/%s: %w", k.Namespace, name, err)
		}
		addrs := ingressAddresses(svc)
		if len(addrs) == 0 {
			return "", fmt.Errorf("Service %s/%s has no load-balancer address yet", k.Namespace, name)
		}
		return "https://" + net.JoinHostPort(addrs[0], strconv.Itoa(APIServerPort)), nil
	}
	return InClusterEndpoint(k), nil
}

// kubeconfig renders a kubeconfig for server, trusting ca, authenticating with client.
func kubeconfig(server string, ca []byte, user string, client pki.KeyPair) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["karmada"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.Cert, ClientKeyData: client.Key}
	cfg.Contexts["karmada"] = &clientcmdapi.Context{Cluster: "karmada", AuthInfo: user}
	cfg.CurrentContext = "karmada"
	return clientcmd.Write(*cfg)
}

// kubeconfigCurrent reports whether data is a kubeconfig for server trusting ca whose client
// certificate is not due for renewal at now.
func kubeconfigCurrent(data []byte, server string, ca []byte, now time.Time) bool {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return false
	}
	c := cfg.Clusters["karmada"]
	if c == nil || c.Server != server || !bytes.Equal(c.CertificateAuthorityData, ca) {
		return false
	}
	cert, err := clientCertificate(cfg)
	return err == nil && !pki.DueForRenewal(cert, now)
}

// clientCertificate is the client certificate of cfg's current context.
func clientCertificate(cfg *clientcmdapi.Config) (*x509.Certificate, error) {
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.AuthInfos[kctx.AuthInfo] == nil {
		return nil, fmt.Errorf("kubeconfig has no user for context %q", cfg.CurrentContext)
	}
	return pki.ParseCert(cfg.AuthInfos[kctx.AuthInfo].ClientCertificateData)
}

// WriteAdminKubeconfig writes the admin-config Secret (the admin kubeconfig at the endpoint of
// the service type) and a kubeconfig Secret per component (in-cluster endpoint, its own
// client certificate), and returns the admin endpoint.
func (a *Activities) WriteAdminKubeconfig(ctx context.Context, ref Ref) (string, error) {
	k, t, err := a.instance(ctx, ref)
	if err != nil {
		return "", err
	}
	endpoint, err := t.endpoint(ctx, k)
	if err != nil {
		return "", err
	}
	names := NamesFor(k.Name)
	certs, err := t.kube.CoreV1().Secrets(k.Namespace).Get(ctx, names.Of(SuffixCert), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, names.Of(SuffixCert), err)
	}
	caPEM := certs.Data[KeyCACert]
	admin := pki.KeyPair{Cert: certs.Data[KeyAdminCert], Key: certs.Data[KeyAdminKey]}
	adminConfig := func(data map[string][]byte) (bool, error) {
		want, err := kubeconfig(endpoint, caPEM, AdminUser, admin)
		if err != nil {
			return false, err
		}
		if bytes.Equal(data[KeyKubeconfig], want) {
			return false, nil
		}
		data[KeyKubeconfig] = want
		return true, nil
	}
	// status.secretRef names a Secret beside the Karmada object: a remote host cluster's is
	// copied to the local cluster.
	for _, c := range []*target{t, a.local()} {
		if _, err := c.ensureSecret(ctx, k, names.Of(SuffixAdminConfig), APIServer.Name, adminConfig); err != nil {
			return "", err
		}
		if !t.remote {
			break
		}
	}
	ca, err := pki.ParseAuthority(pki.KeyPair{Cert: caPEM, Key: certs.Data[KeyCAKey]})
	if err != nil {
		return "", fmt.Errorf("CA of Secret %s/%s: %w", k.Namespace, names.Of(SuffixCert), err)
	}
	inCluster := InClusterEndpoint(k)
	for _, c := range append([]Component{AggregatedAPIServer}, InstalledComponents(k)...) {
		user := "system:karmada:" + c.Name
		_, err := t.ensureSecret(ctx, k, names.ComponentConfig(c.Name), c.Name, func(data map[string][]byte) (bool, error) {
			if kubeconfigCurrent(data[KeyKubeconfig], inCluster, caPEM, time.Now()) {
				return false, nil
			}
			client, err := ca.Issue(pki.LeafSpec{CommonName: user, Organization: []string{AdminGroup}, Client: true}, leafValidity(k))
			if err != nil {
				return false, err
			}
			data[KeyKubeconfig], err = kubeconfig(inCluster, caPEM, user, client)
			return err == nil, err
		})
		if err != nil {
			return "", err
		}
	}
	return endpoint, nil
}

// controlPlaneClient reaches the new control plane as its admin: at the endpoint the worker
// computes (as WriteAdminKubeconfig does), verifying TLS against the instance's CA, with the
// admin client certificate, both from the instance's cert Secret. The admin kubeconfig Secret
// is output only: whoever may write Secrets in the Karmada's namespace may rewrite it, and a
// kubeconfig can run commands and read files (exec, tokenFile...). The cert Secret holds PEM
// data only, which can do neither: whoever rewrites it changes only the CA the worker trusts
// and the certificate it presents when it dials the instance's own API server, with nothing
// of the worker's in either.
func (t *target) controlPlaneClient(ctx context.Context, k *operatorv1alpha1.Karmada) (dynamic.Interface, error) {
	if ServiceType(k) == corev1.ServiceTypeClusterIP && (k.Spec.HostCluster == nil || k.Spec.HostCluster.APIEndpoint == "") && (t.remote || !runningInCluster()) {
		// Its name resolves only through the host cluster's DNS; asking any other resolver
		// would send the cluster's names out of it and fail anyway. An apiEndpoint is
		// reached from outside.
		return nil, fmt.Errorf("the API server Service %s/%s is of type ClusterIP, reachable only from inside its host cluster, "+
			"and this worker runs outside it: run the worker in the host cluster, or use serviceType NodePort or LoadBalancer",
			k.Namespace, NamesFor(k.Name).Of(SuffixAPIServer))
	}
	endpoint, err := t.endpoint(ctx, k)
	if err != nil {
		return nil, err
	}
	name := NamesFor(k.Name).Of(SuffixCert)
	secret, err := t.kube.CoreV1().Secrets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("certificate Secret %s/%s not found", k.Namespace, name)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", k.Namespace, name, err)
	}
	for _, key := range []string{KeyCACert, KeyAdminCert, KeyAdminKey} {
		if len(secret.Data[key]) == 0 {
			return nil, fmt.Errorf("Secret %s/%s has no %s", k.Namespace, name, key)
		}
	}
	return dynamic.NewForConfig(&rest.Config{Host: endpoint, Timeout: controlPlaneTimeout, TLSClientConfig: rest.TLSClientConfig{
		CAData: secret.Data[KeyCACert], CertData: secret.Data[KeyAdminCert], KeyData: secret.Data[KeyAdminKey]}})
}
