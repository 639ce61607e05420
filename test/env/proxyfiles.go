package env

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/karmadaflow/karmadaflow/internal/pki"
)

// ProxyPath is the path of the global resource proxy, appended to the address it serves on.
const ProxyPath = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy"

// ProxyFiles are the files a proxy served on a loopback address needs, and the kubeconfig
// that reaches it.
type ProxyFiles struct {
	URL        string `json:"url"`        // https://<address><ProxyPath>
	CAFile     string `json:"caFile"`     // CA of the serving certificate
	CertFile   string `json:"certFile"`   // serving certificate for the address
	KeyFile    string `json:"keyFile"`    // its key
	Kubeconfig string `json:"kubeconfig"` // the control plane's admin credentials, the proxy URL as server
}

// WriteProxyFiles makes a CA and a serving certificate for a proxy on address (host:port, a
// loopback IP) and dnsNames besides localhost (the name an aggregator verifies, e.g.
// <service>.<namespace>.svc), writes them into Dir and writes proxy.kubeconfig: the control
// plane's admin kubeconfig with the proxy's URL and CA.
func (e *Env) WriteProxyFiles(address string, dnsNames ...string) (ProxyFiles, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return ProxyFiles{}, err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return ProxyFiles{}, fmt.Errorf("proxy address %s: a loopback IP is required", address)
	}
	ca, err := pki.NewAuthority("karmadaflow-proxy-ca")
	if err != nil {
		return ProxyFiles{}, err
	}
	serving, err := ca.Issue(pki.LeafSpec{CommonName: "karmadaflow-proxy", DNSNames: append([]string{"localhost"}, dnsNames...), IPs: []net.IP{ip}, Server: true}, pki.DefaultLeafValidity)
	if err != nil {
		return ProxyFiles{}, err
	}
	f := ProxyFiles{
		URL:        "https://" + address + ProxyPath,
		CAFile:     filepath.Join(e.Dir, "proxy-ca.crt"),
		CertFile:   filepath.Join(e.Dir, "proxy.crt"),
		KeyFile:    filepath.Join(e.Dir, "proxy.key"),
		Kubeconfig: filepath.Join(e.Dir, "proxy.kubeconfig"),
	}
	for file, data := range map[string][]byte{f.CAFile: ca.Pair().Cert, f.CertFile: serving.Cert, f.KeyFile: serving.Key} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return ProxyFiles{}, err
		}
	}
	cfg := e.ControlPlane.kubeconfig()
	cfg.Clusters[e.ControlPlane.Name] = &clientcmdapi.Cluster{Server: f.URL, CertificateAuthorityData: ca.Pair().Cert}
	if err := writeKubeconfig(cfg, f.Kubeconfig); err != nil {
		return ProxyFiles{}, err
	}
	return f, nil
}
