package provisioning

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	operatorv1alpha1 "github.com/karmadaflow/karmadaflow/api/operator/v1alpha1"
)

// spec.hostCluster.apiEndpoint: the address at which the host cluster's nodes or the API
// server's Service are reached from outside (a VIP, a load balancer in front of the node
// port). The admin kubeconfig and status.apiServerEndpoint use it, and the API server
// certificate names its host.

// apiEndpoint is spec.hostCluster.apiEndpoint taken apart.
type apiEndpoint struct {
	host string // a DNS name or an IP (an IPv6 address without brackets)
	port string // empty when not given
}

// parseAPIEndpoint takes apart a hostname, hostname:port, IP or IP:port, or an https:// URL
// of one. Problems never quote user information, which may hold a password.
func parseAPIEndpoint(s string) (apiEndpoint, error) {
	const forms = "must be a hostname, hostname:port, IP or IP:port (or an https:// URL of one)"
	if strings.Contains(s, "@") {
		return apiEndpoint{}, errors.New(forms + ", without user information")
	}
	hostPort := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		switch {
		case err != nil:
			return apiEndpoint{}, errors.New(forms + ": it does not parse as a URL")
		case u.Scheme != "https":
			return apiEndpoint{}, fmt.Errorf("%s: the scheme %q is not https", forms, u.Scheme)
		case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
			return apiEndpoint{}, errors.New(forms + ": the URL may hold a host and a port only, no path or query")
		}
		hostPort = u.Host
	}
	ep := apiEndpoint{host: hostPort}
	if host, port, err := net.SplitHostPort(hostPort); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return apiEndpoint{}, fmt.Errorf("%s: the port of %q is not a number from 1 to 65535", forms, hostPort)
		}
		ep = apiEndpoint{host: host, port: port}
	} else if strings.HasPrefix(hostPort, "[") && strings.HasSuffix(hostPort, "]") {
		ep.host = hostPort[1 : len(hostPort)-1]
	}
	if ip := net.ParseIP(ep.host); ip != nil {
		ep.host = ip.String()
		return ep, nil
	}
	if strings.HasPrefix(hostPort, "[") || len(validation.IsDNS1123Subdomain(ep.host)) > 0 {
		return apiEndpoint{}, fmt.Errorf("%s: %q is neither an IP nor a lowercase DNS name", forms, ep.host)
	}
	return ep, nil
}

// configuredEndpoint is k's spec.hostCluster.apiEndpoint, nil when unset.
func configuredEndpoint(k *operatorv1alpha1.Karmada) (*apiEndpoint, error) {
	h := k.Spec.HostCluster
	if h == nil || h.APIEndpoint == "" {
		return nil, nil
	}
	ep, err := parseAPIEndpoint(h.APIEndpoint)
	if err != nil {
		return nil, fmt.Errorf("spec.hostCluster.apiEndpoint of Karmada %s/%s: %w", k.Namespace, k.Name, err)
	}
	return &ep, nil
}

// url is the API server's URL at the endpoint: its own port, else defaultPort.
func (e apiEndpoint) url(defaultPort int32) string {
	port := e.port
	if port == "" {
		port = strconv.Itoa(int(defaultPort))
	}
	return "https://" + net.JoinHostPort(e.host, port)
}

// nodePort is the node port of the API server's Service.
func (t *target) nodePort(ctx context.Context, k *operatorv1alpha1.Karmada) (int32, error) {
	name := NamesFor(k.Name).Of(SuffixAPIServer)
	svc, err := t.kube.CoreV1().Services(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading Service %s/%s: %w", k.Namespace, name, err)
	}
	if len(svc.Spec.Ports) == 0 || svc.Spec.Ports[0].NodePort == 0 {
		return 0, fmt.Errorf("Service %s/%s has no node port yet", k.Namespace, name)
	}
	return svc.Spec.Ports[0].NodePort, nil
}
